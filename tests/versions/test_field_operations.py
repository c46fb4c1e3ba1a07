"""AddField and WaiveFieldRule: an optional field, and a field rule that depends on it."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from evalspec import Registry, build_registry, hookimpl, validate_task
from evalspec.authoring.gate import check_gate
from evalspec.errors import MigrationError
from evalspec.registry.snapshot import decode_spec, decode_tables, encode_spec
from evalspec.versions import AddField, Migration, WaiveFieldRule, replay
from evalspec.versions.lock import chain_checksums

TASK = {
    "task_id": "s1",
    "category": "summary",
    "prompt": "Copy this line:\nThe cat sat.\n",
    "targets": ["The cat sat."],
    "metric_name": "rouge_l",
    "post_process": "none",
    "style": "verbatim",
}


def _migration(tmp_path: Path, *lines: dict[str, object], **changes: object) -> Migration:
    (tmp_path / "style.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines or (TASK,)), encoding="utf-8"
    )
    ops = (
        AddField(
            "style",
            ("style.jsonl",),
            "how the summary is judged",
            choices=("free", "verbatim"),
            categories=("summary",),
        ),
        WaiveFieldRule(
            "prompt_trailing_whitespace",
            "summary",
            "style",
            "verbatim",
            ("style.jsonl",),
            "a verbatim prompt keeps its newline",
        ),
    )
    mig = Migration(3, 2, "style", ops, fixture_dir=tmp_path, origin="test")
    return attrs.evolve(mig, **changes) if changes else mig


def _registry(mig: Migration) -> Registry:
    class Plugin:
        @hookimpl
        def evalspec_register_migrations(self, register: object) -> None:
            register(mig)  # type: ignore[operator]

    return build_registry([Plugin()], entry_points=False)


def _rules(task: dict[str, object], registry: Registry, version: int | None = None) -> list[str]:
    return [e.rule for e in validate_task(task, registry=registry, spec_version=version)[1]]


def test_replay_records_the_field_and_the_waiver(registry: Registry, tmp_path: Path) -> None:
    chain = (*registry.chain, _migration(tmp_path))
    spec = replay(chain)
    assert spec.fields["style"].choices == ("free", "verbatim")
    assert spec.fields["style"].categories == ("summary",)
    assert spec.fields["style"].added_in == 3
    assert spec.waivers == {
        ("prompt_trailing_whitespace", "code_exec", "code_protocol", "completion"),
        ("prompt_trailing_whitespace", "summary", "style", "verbatim"),
    }
    before = replay(chain, 2)
    assert "style" not in before.fields and before.added_in_later("field", "style") == 3
    assert replay(chain, 1).fields == {} and replay(chain, 1).waivers == frozenset()


def test_the_waiver_applies_only_to_the_tasks_it_names(tmp_path: Path) -> None:
    reg = _registry(_migration(tmp_path))
    assert _rules(TASK, reg) == []
    assert _rules({**TASK, "style": "free"}, reg) == ["prompt_trailing_whitespace"]
    assert _rules({k: v for k, v in TASK.items() if k != "style"}, reg) == [
        "prompt_trailing_whitespace"
    ]
    stripped = {**TASK, "prompt": "Copy this line:\nThe cat sat."}
    assert _rules({**stripped, "style": "loose"}, reg) == ["bad_field_value"]
    assert _rules({**stripped, "style": 3}, reg) == ["wrong_type"]
    other = {**stripped, "category": "classification", "metric_name": "exact_match"}
    assert _rules(other, reg) == ["illegal_field"]


def test_an_older_version_names_the_version_that_adds_the_field(tmp_path: Path) -> None:
    reg = _registry(_migration(tmp_path))
    (error,) = validate_task(TASK, registry=reg, spec_version=2)[1]
    assert error.rule == "unknown_field" and error.field == "style"
    assert "'style' was added in spec version 3 (validate with --spec-version 3)" in error.message


def test_the_gate_accepts_a_field_and_a_waiver_with_fixtures(tmp_path: Path) -> None:
    reg = _registry(_migration(tmp_path))
    assert check_gate(reg.chain) == []


def test_the_gate_refuses_a_waiver_no_fixture_exercises(tmp_path: Path) -> None:
    tidy = {**TASK, "prompt": "Copy this line:\nThe cat sat."}  # valid without the waiver
    chain = (*_registry(_migration(tmp_path)).chain[:2], _migration(tmp_path, tidy))
    messages = [p.message for p in check_gate(chain)]
    assert messages == [
        "migration 3 (from test): the waiver of 'prompt_trailing_whitespace' for category "
        "'summary' when style='verbatim' has no fixture task: none of 'style.jsonl' holds a "
        "valid task of category 'summary' with style='verbatim' that breaks "
        "'prompt_trailing_whitespace' without the waiver"
    ]


def test_the_gate_refuses_a_field_no_fixture_carries(tmp_path: Path) -> None:
    mig = _migration(tmp_path)
    only_field = attrs.evolve(mig, operations=mig.operations[:1])
    plain = {k: v for k, v in TASK.items() if k != "style"}
    plain["prompt"] = "Copy this line:\nThe cat sat."
    (tmp_path / "style.jsonl").write_text(json.dumps(plain) + "\n", encoding="utf-8")
    chain = (*_registry(mig).chain[:2], only_field)
    messages = [p.message for p in check_gate(chain)]
    assert messages == [
        "migration 3 (from test): field 'style' has no fixture task: none of 'style.jsonl' "
        "holds a valid task that carries field 'style'"
    ]


def test_the_gate_refuses_an_operation_without_fixtures_or_names(
    registry: Registry, tmp_path: Path
) -> None:
    bare = Migration(
        3,
        2,
        "bare",
        (
            AddField("style", (), "how it is judged", categories=("poetry",)),
            WaiveFieldRule("prompt_trailing_whitespace", "summary", "tone", "x", (), "why"),
        ),
        origin="test",
    )
    messages = [p.message for p in check_gate((*registry.chain, bare))]
    assert (
        "migration 3 (from test): field 'style': no migration up to this one adds category 'poetry'"
    ) in messages
    assert any(
        "no fixture; list at least one file of tasks that carry 'style'" in m for m in messages
    )
    assert any("neither this migration nor an earlier one adds field 'tone'" in m for m in messages)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (AddField("style", ("f",), categories=("poetry",)), "names category 'poetry'"),
        (
            WaiveFieldRule("prompt_trailing_whitespace", "summary", "tone", "x", ("f",)),
            "field 'tone' is not added",
        ),
        (
            WaiveFieldRule("prompt_trailing_whitespace", "code_exec", "code_protocol", "x", ("f",)),
            "'x' is not one of field 'code_protocol'",
        ),
        (
            WaiveFieldRule("prompt_trailing_whitespace", "mcq", "code_protocol", "completion", ()),
            "is not allowed in that category",
        ),
        (AddField("preamble", ("f",)), "field 'preamble' is added twice"),
    ],
)
def test_replay_refuses_an_inconsistent_operation(
    registry: Registry, op: AddField | WaiveFieldRule, message: str
) -> None:
    with pytest.raises(MigrationError, match=message):
        replay((*registry.chain, Migration(3, 2, "bad", (op,))))


def test_the_constructors_refuse_what_cannot_be_a_field_or_waiver() -> None:
    with pytest.raises(ValueError, match="one of the task's own fields"):
        AddField("prompt", ("f",))
    with pytest.raises(ValueError, match="'rule' must be in"):
        WaiveFieldRule("empty_prompt", "summary", "style", "x", ("f",))


def test_the_checksum_covers_the_new_operations(registry: Registry, tmp_path: Path) -> None:
    mig = _migration(tmp_path)
    base = chain_checksums((*registry.chain, mig))
    other = chain_checksums((*registry.chain, attrs.evolve(mig, operations=mig.operations[:1])))
    assert base[3] != other[3] and base[2] == other[2]
    (tmp_path / "style.jsonl").write_bytes((tmp_path / "style.jsonl").read_bytes() + b"\n")
    assert chain_checksums((*registry.chain, mig))[3] != base[3]


def test_the_snapshot_keeps_fields_waivers_and_bindings(tmp_path: Path) -> None:
    spec = _registry(_migration(tmp_path)).spec
    doc = json.loads(json.dumps(encode_spec(spec)))
    assert decode_spec(doc) == spec
    tables = decode_tables(doc)
    assert tables.fields["style"].choices == ("free", "verbatim")
    assert tables.waivers == spec.waivers
    assert tables.categories["mcq"].bound == (("post_process", "mcq", 2),)
    assert _rules(TASK, _registry(_migration(tmp_path))) == []
