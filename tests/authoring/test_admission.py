"""The gate: each refusal names the migration, the entry and the missing piece."""

from __future__ import annotations

from pathlib import Path

import attrs
import example_plugin
import pytest

from evalspec.authoring.gate import check_gate
from evalspec.registry.build import Registry
from evalspec.versions import (
    AddCategory,
    AddMetric,
    AddPostProcess,
    BindMetric,
    BindPostProcess,
    Deprecate,
    Migration,
    Operation,
)

WHERE = "migration 2 (from the example)"


@pytest.fixture
def v1(registry: Registry) -> Migration:
    return registry.chain[0]


def v2(*operations: Operation, fixture_dir: Path | None = None) -> Migration:
    # The example's operations as the version right after v1 (the example plugin
    # itself follows the built-in spec version 2).
    return attrs.evolve(
        example_plugin.V3,
        version=2,
        parent=1,
        operations=operations or example_plugin.V3.operations,
        fixture_dir=fixture_dir or example_plugin.FIXTURES,
        origin="the example",
    )


def translation(
    *,
    metrics: tuple[str, ...] | None = None,
    post_processes: tuple[str, ...] | None = None,
    fixtures: tuple[str, ...] | None = None,
) -> AddCategory:
    base = example_plugin.V3.operations[2]
    assert isinstance(base, AddCategory)
    return AddCategory(
        base.name,
        metrics=base.metrics if metrics is None else metrics,
        post_processes=base.post_processes if post_processes is None else post_processes,
        fixtures=base.fixtures if fixtures is None else fixtures,
    )


CHRF = AddMetric("chrf")
COLLAPSE = AddPostProcess("collapse_whitespace")


def messages(v1: Migration, mig: Migration) -> list[str]:
    return [p.message for p in check_gate([v1, mig])]


def test_the_builtin_v1_and_the_worked_example_pass(v1: Migration) -> None:
    assert check_gate([v1, v2()]) == []


def test_category_without_metric_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(COLLAPSE, translation(metrics=())))
    assert (
        f"{WHERE}: category 'translation' is added without a metric: bind at least one in "
        "metrics=(...)" in found
    )


def test_category_binding_an_undeclared_metric_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(COLLAPSE, translation()))
    assert (
        f"{WHERE}: category 'translation' binds metric 'chrf', which neither this migration nor "
        "an earlier one adds (add AddMetric('chrf') to this migration)" in found
    )


def test_category_without_rule_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(CHRF, translation(post_processes=())))
    assert (
        f"{WHERE}: category 'translation' is added without a post-process rule: bind at least "
        "one in post_processes=(...)" in found
    )


def test_category_binding_an_undeclared_rule_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(CHRF, translation()))
    assert (
        f"{WHERE}: category 'translation' binds post-process rule 'collapse_whitespace', which "
        "neither this migration nor an earlier one adds (add "
        "AddPostProcess('collapse_whitespace') to this migration)" in found
    )


def test_category_without_fixture_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(CHRF, COLLAPSE, translation(fixtures=())))
    assert (
        f"{WHERE}: category 'translation' is added without a fixture: list at least one file of "
        "its tasks in fixtures=(...)" in found
    )


def test_missing_fixture_file_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(CHRF, COLLAPSE, translation(fixtures=("nope.jsonl",))))
    assert len(found) == 1
    assert found[0].startswith(
        f"{WHERE}: fixture 'nope.jsonl' of category 'translation' cannot be read"
    )


def _fixture(tmp_path: Path, *lines: str) -> Path:
    (tmp_path / "translation.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


GOOD = (
    '{"task_id": "t1", "category": "translation", "prompt": "Translate: hi", '
    '"targets": ["salut"], "metric_name": "chrf", "post_process": "collapse_whitespace"}'
)


def test_fixture_must_validate_under_the_new_version(v1: Migration, tmp_path: Path) -> None:
    bad = GOOD.replace('"t1"', '"t2"').replace('"chrf"', '"f1"')
    found = messages(v1, v2(fixture_dir=_fixture(tmp_path, GOOD, bad)))
    assert found == [
        f"{WHERE}: fixture 'translation.jsonl' line 2 does not validate under spec version 2: "
        "illegal_metric metric_name — category 'translation' does not allow metric 'f1' "
        "(allowed: chrf, exact_match)"
    ]


def test_fixture_must_use_the_new_category(v1: Migration, tmp_path: Path) -> None:
    other = (
        '{"task_id": "a1", "category": "arithmetic", "prompt": "1 + 1 =", "targets": ["2"], '
        '"metric_name": "exact_match", "post_process": "none"}'
    )
    found = messages(v1, v2(fixture_dir=_fixture(tmp_path, other)))
    assert (
        f"{WHERE}: fixture 'translation.jsonl' line 1 is a task of category 'arithmetic', which "
        "this migration neither adds nor extends; a migration's fixtures hold only tasks of the "
        "categories it adds or binds to" in found
    )
    assert (
        f"{WHERE}: category 'translation' has no fixture task: none of 'translation.jsonl' holds "
        "a valid task of category 'translation'" in found
    )


def test_fixture_errors_are_capped_per_file(v1: Migration, tmp_path: Path) -> None:
    lines = [GOOD.replace('"t1"', f'"t{i}"').replace('"chrf"', '"f1"') for i in range(9)]
    found = messages(v1, v2(fixture_dir=_fixture(tmp_path, GOOD, *lines)))
    assert len(found) == 6
    assert found[-1] == f"{WHERE}: fixture 'translation.jsonl': 4 more problems not shown"


def test_orphan_metric_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(*example_plugin.V3.operations, AddMetric("bleurt")))
    assert found == [
        f"{WHERE}: metric 'bleurt' is added but no category binds it: an orphan cannot be used "
        "by any task; bind it in an AddCategory, BindMetric or BindPostProcess of this migration"
    ]


def test_orphan_rule_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(*example_plugin.V3.operations, AddPostProcess("upper")))
    assert found == [
        f"{WHERE}: post-process rule 'upper' is added but no category binds it: an orphan cannot "
        "be used by any task; bind it in an AddCategory, BindMetric or BindPostProcess of "
        "this migration"
    ]


def test_a_name_added_twice_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(*example_plugin.V3.operations, AddMetric("exact_match")))
    assert found == [f"{WHERE}: metric 'exact_match' is added twice (also by migration 1)"]


def test_deprecating_an_unknown_name_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(*example_plugin.V3.operations, Deprecate("metric", "bleurt")))
    assert found == [
        f"{WHERE}: deprecates metric 'bleurt', which neither this migration nor an earlier one adds"
    ]


def test_deprecating_a_known_name_passes(v1: Migration) -> None:
    assert messages(v1, v2(*example_plugin.V3.operations, Deprecate("metric", "bleu_4"))) == []


def test_a_migration_without_operations_is_refused(v1: Migration) -> None:
    empty = attrs.evolve(v2(), operations=())
    assert messages(v1, empty) == [
        f"{WHERE}: has no operations; a migration adds or deprecates at least one entry"
    ]


def test_placeholder_descriptions_from_spec_new_are_refused(v1: Migration) -> None:
    ops = (AddMetric("chrf", "TODO: describe the metric"), COLLAPSE, translation())
    assert messages(v1, v2(*ops)) == [
        f"{WHERE}: metric 'chrf' still has the placeholder description 'TODO: describe the "
        "metric' from `evalspec spec new`; say what it is"
    ]


# -- binding a metric or rule to a category that exists -----------------------------------

SUMMARY_CHRF = (
    '{"task_id": "s1", "category": "summary", "prompt": "Summarise: the cat sat.", '
    '"targets": ["cat sat"], "metric_name": "chrf", "post_process": "none"}'
)
SUMMARY_F1 = SUMMARY_CHRF.replace('"chrf"', '"f1"')


def _bind_fixture(tmp_path: Path, *lines: str) -> Path:
    (tmp_path / "summary_chrf.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_binding_a_new_metric_to_an_existing_category_passes(v1: Migration, tmp_path: Path) -> None:
    mig = v2(CHRF, BindMetric("summary", "chrf", ("summary_chrf.jsonl",)))
    mig = attrs.evolve(mig, fixture_dir=_bind_fixture(tmp_path, SUMMARY_CHRF))
    assert messages(v1, mig) == []


def test_a_binding_needs_a_fixture_task_using_the_new_pair(v1: Migration, tmp_path: Path) -> None:
    mig = v2(CHRF, BindMetric("summary", "chrf", ("summary_chrf.jsonl",)))
    mig = attrs.evolve(mig, fixture_dir=_bind_fixture(tmp_path, SUMMARY_F1))
    assert messages(v1, mig) == [
        f"{WHERE}: the binding of metric 'chrf' to category 'summary' has no fixture task: none "
        "of 'summary_chrf.jsonl' holds a valid task of category 'summary' that uses 'chrf'"
    ]


def test_a_binding_is_refused_when_the_pair_is_already_legal(v1: Migration) -> None:
    found = messages(v1, v2(BindPostProcess("summary", "none", ("x.jsonl",))))
    assert found == [
        f"{WHERE}: binding post-process rule 'none' to category 'summary': the category already "
        "allows it"
    ]


def test_a_binding_to_an_unknown_category_or_name_is_refused(v1: Migration) -> None:
    found = messages(v1, v2(BindMetric("poetry", "chrf", ("x.jsonl",))))
    assert found == [
        f"{WHERE}: binding metric 'chrf' to category 'poetry': no migration up to this one adds "
        "category 'poetry'",
        f"{WHERE}: binding metric 'chrf' to category 'poetry': neither this migration nor an "
        "earlier one adds metric 'chrf' (add AddMetric('chrf') to this migration)",
    ]


def test_a_binding_makes_the_pair_legal_from_its_version_only(tmp_path: Path) -> None:
    from evalspec.registry.build import build_registry
    from evalspec.versions import replay

    mig = attrs.evolve(
        v2(CHRF, BindMetric("summary", "chrf", ("summary_chrf.jsonl",))),
        fixture_dir=_bind_fixture(tmp_path, SUMMARY_CHRF),
    )
    v1_only = build_registry(entry_points=False)
    chain = (v1_only.chain[0], mig)
    assert "chrf" in replay(chain, 2).categories["summary"].metrics
    assert replay(chain, 2).categories["summary"].bound == (("metric", "chrf", 2),)
    assert "chrf" not in replay(chain, 1).categories["summary"].metrics
    # The v1 checksum is untouched by the new operations.
    from evalspec.versions.lock import chain_checksums, packaged_lock

    assert chain_checksums(chain)[1] == packaged_lock().entries[0].checksum
