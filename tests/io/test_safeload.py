"""Hostile YAML and JSON documents: every reader refuses them quickly, with one clear error.

Documents come from pull requests, so each reader (cards, labels, gates,
manifests, score reports, lock files, pyproject, predictions, task lines,
diff) is fed recursive aliases, "billion laughs", deep nesting and huge
inputs. None may hang, raise RecursionError or print a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_helpers import evalspec
from hypothesis import given
from hypothesis import strategies as st
from timing import within

from evalspec.errors import LockError, ProjectConfigError
from evalspec.evals.card import parse_card
from evalspec.evals.diff import diff_files
from evalspec.evals.gates import GateConfigError, ReportError, load_report, parse_gates
from evalspec.evals.labels import parse_labels
from evalspec.evals.yamlfile import YamlSyntaxError, load_mapping
from evalspec.io.safeload import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_NODES,
    MAX_YAML_BYTES,
    DocumentError,
    loads_json,
    loads_yaml,
    read_bounded,
)
from evalspec.manifest import ManifestFormatError, load_manifest
from evalspec.registry.project import load_project
from evalspec.scoring.predictions import read_predictions
from evalspec.validation.validator import validate_file
from evalspec.versions.lock import parse_lock

SECONDS = 3.0
"""Each hostile document must be refused well within this (the target is one second;
the margin is for a loaded CI machine)."""

# -- hostile documents ----------------------------------------------------------------


def recursive_alias(kind: str) -> str:
    return {
        "seq": "x: &r [*r]\n",
        "map": "x: &r {k: *r}\n",
        "nested": "x: &r\n  a:\n    - b: *r\n",
        "block": "x: &r\n  - *r\n",
    }[kind]


def laughs(width: int, levels: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        refs = ", ".join([f"*l{i - 1}"] * width)
        lines.append(f"l{i}: &l{i} [{refs}]")
    return "\n".join(lines) + "\n"


def deep_yaml(depth: int, style: str) -> str:
    if style == "flow-seq":
        return "x: " + "[" * depth + "]" * depth + "\n"
    if style == "flow-map":
        return "x: " + "{a: " * depth + "1" + "}" * depth + "\n"
    return "".join(" " * i + "k:\n" for i in range(depth))  # block mappings


def deep_json(depth: int, style: str) -> str:
    if style == "array":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


hostile_yaml = st.one_of(
    st.sampled_from(["seq", "map", "nested", "block"]).map(recursive_alias),
    st.builds(laughs, st.integers(6, 12), st.integers(6, 12)),
    st.builds(
        deep_yaml,
        st.integers(MAX_DEPTH + 1, 60_000),
        st.sampled_from(["flow-seq", "flow-map"]),
    ),
    st.builds(deep_yaml, st.integers(MAX_DEPTH + 2, 1_200), st.just("block")),
    st.integers(MAX_YAML_BYTES, MAX_YAML_BYTES * 3).map(lambda n: "x: " + "y" * n + "\n"),
)
hostile_json = st.builds(
    deep_json, st.integers(MAX_DEPTH + 1, 200_000), st.sampled_from(["array", "object"])
)


def _timed(call: Callable[[], object]) -> object:
    # The timing is retried (tests/timing.py), the outcome checked as before.
    return within(SECONDS, call)


# -- the loaders themselves --------------------------------------------------------


@pytest.mark.parametrize("libyaml", [True, False])
@pytest.mark.parametrize("kind", ["seq", "map", "nested", "block"])
def test_a_recursive_alias_is_refused_at_its_line(libyaml: bool, kind: str) -> None:
    with pytest.raises(DocumentError, match="recursive alias") as info:
        _timed(lambda: loads_yaml(recursive_alias(kind), libyaml=libyaml))
    assert info.value.line >= 1


@pytest.mark.parametrize("libyaml", [True, False])
def test_billion_laughs_is_refused_by_its_expanded_size(libyaml: bool) -> None:
    with pytest.raises(DocumentError, match=f"more than {MAX_NODES} nodes"):
        _timed(lambda: loads_yaml(laughs(9, 9), libyaml=libyaml))


@pytest.mark.parametrize("libyaml", [True, False])
def test_nesting_past_the_limit_is_refused(libyaml: bool) -> None:
    with pytest.raises(DocumentError, match=f"deeper than {MAX_DEPTH}"):
        _timed(lambda: loads_yaml(deep_yaml(50_000, "flow-seq"), libyaml=libyaml))
    assert loads_yaml(deep_yaml(MAX_DEPTH - 1, "flow-seq"), libyaml=libyaml) is not None


def test_too_many_aliases_are_refused() -> None:
    text = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(DocumentError, match=f"more than {MAX_ALIASES} aliases"):
        loads_yaml(text)


@pytest.mark.parametrize("libyaml", [True, False])
def test_ordinary_aliases_and_merge_keys_still_work(libyaml: bool) -> None:
    text = "base: &b {x: 1}\nuse: *b\nmerged:\n  <<: *b\n  y: 2\n"
    assert loads_yaml(text, libyaml=libyaml) == {
        "base": {"x": 1},
        "use": {"x": 1},
        "merged": {"x": 1, "y": 2},
    }


def test_a_document_over_the_size_limit_is_refused_before_parsing() -> None:
    with pytest.raises(DocumentError, match="larger than"):
        _timed(lambda: loads_yaml("x: " + "y" * MAX_YAML_BYTES))


def test_unsafe_tags_and_huge_integers_are_clear_errors() -> None:
    with pytest.raises(DocumentError, match="not valid YAML"):
        loads_yaml("a: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(DocumentError, match="not valid YAML"):
        loads_yaml("a: " + "1" * 10_000 + "\n")


def test_json_depth_is_bounded_and_recursion_never_escapes() -> None:
    assert loads_json(deep_json(MAX_DEPTH - 1, "array")) is not None
    for depth in (MAX_DEPTH + 1, 100_000):
        with pytest.raises(DocumentError, match="deeper than"):
            _timed(lambda depth=depth: loads_json(deep_json(depth, "object")))


def test_a_read_stops_one_byte_past_the_limit(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="larger than"):
        _timed(lambda: read_bounded("/dev/zero", 1 << 20))
    small = tmp_path / "f"
    small.write_bytes(b"x" * 10)
    assert read_bounded(small, 10) == b"x" * 10


# -- every reader, fed generated hostile documents ---------------------------------


def _front_matter(body: str) -> str:
    return f"---\n{body}---\n# card\n"


YAML_READERS: dict[str, Callable[[str], None]] = {}


def _yaml_reader(name: str) -> Callable[[Callable[[str], None]], Callable[[str], None]]:
    def register(fn: Callable[[str], None]) -> Callable[[str], None]:
        YAML_READERS[name] = fn
        return fn

    return register


@_yaml_reader("load_mapping")
def _read_mapping(text: str) -> None:
    with pytest.raises(YamlSyntaxError):
        load_mapping(text, what="x.yaml")


@_yaml_reader("gates.yaml")
def _read_gates(text: str) -> None:
    with pytest.raises(GateConfigError) as info:
        parse_gates(text, "config/gates.yaml", datasets=None, metrics={"exact_match"})
    assert str(info.value).startswith("config/gates.yaml:")
    assert "\n" not in str(info.value)


@_yaml_reader("labels.yaml")
def _read_labels(text: str) -> None:
    labels, problems = parse_labels(text)
    assert labels is None
    assert [p.rule for p in problems] == ["config_invalid"]


@_yaml_reader("card front matter")
def _read_card(text: str) -> None:
    card, problems = parse_card(_front_matter(text))
    assert card is None
    assert [p.rule for p in problems] == ["card_syntax"]


@given(doc=hostile_yaml, reader=st.sampled_from(sorted(YAML_READERS)))
def test_every_yaml_reader_refuses_hostile_documents(doc: str, reader: str) -> None:
    _timed(lambda: YAML_READERS[reader](doc))


def _json_readers(tmp: Path) -> dict[str, Callable[[str], None]]:
    def report(text: str) -> None:
        path = tmp / "report.json"
        path.write_text(text)
        with pytest.raises(ReportError, match=r"report\.json"):
            load_report(path)

    def lock(text: str) -> None:
        with pytest.raises(LockError, match=r"x\.lock"):
            parse_lock(text, "x.lock")

    def manifest(text: str) -> None:
        path = tmp / "manifest.json"
        path.write_text(text)
        with pytest.raises(ManifestFormatError, match=r"manifest\.json"):
            load_manifest(path, root=tmp)

    def manifest_extra(text: str) -> None:
        # Deep nesting inside an otherwise valid manifest (kept keys are rewritten).
        path = tmp / "manifest.json"
        path.write_text(
            f'{{"format": "evalspec.manifest", "version": 1, "files": [], "x": {text}}}'
        )
        with pytest.raises(ManifestFormatError, match=r"manifest\.json"):
            load_manifest(path, root=tmp)

    def pyproject(text: str) -> None:
        project = tmp / "proj"
        project.mkdir(exist_ok=True)
        toml = text.replace("{", "[").replace("}", "]").replace('"a": ', "")
        (project / "pyproject.toml").write_text(f"[tool.evalspec]\nx = {toml}\n")
        with pytest.raises(ProjectConfigError, match=r"pyproject\.toml"):
            load_project(project)

    def task_lines(text: str) -> None:
        path = tmp / "tasks.jsonl"
        path.write_text(text + "\n")
        result = validate_file(path)  # a line is judged alone: any problem, never a crash
        assert result.invalid == 1

    def predictions(text: str) -> None:
        got = read_predictions([text.encode() + b"\n"], ["t"])
        assert got.problems and not got.outputs

    def diff(text: str) -> None:
        path = tmp / "new.jsonl"
        path.write_text(text + "\n")
        with path.open("rb") as new:
            result = diff_files(None, new, "old", "new")
        assert result.unmatched == {"new": [1]}

    return {
        "score report": report,
        "lock": lock,
        "manifest": manifest,
        "manifest extra key": manifest_extra,
        "pyproject": pyproject,
        "task lines": task_lines,
        "predictions": predictions,
        "diff": diff,
    }


READER_NAMES = sorted(_json_readers(Path()).keys())


@given(doc=hostile_json, reader=st.sampled_from(READER_NAMES))
def test_every_json_reader_refuses_hostile_documents(
    tmp_path_factory: pytest.TempPathFactory, doc: str, reader: str
) -> None:
    readers = _json_readers(tmp_path_factory.mktemp("doc"))
    _timed(lambda: readers[reader](doc))


def test_a_score_report_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalspec.io.safeload

    monkeypatch.setattr(evalspec.io.safeload, "MAX_JSON_BYTES", 1000)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"x": "y" * 2000}))
    with pytest.raises(ReportError, match="larger than"):
        load_report(path)


# -- end to end: the commands ------------------------------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "evals"
    proc = evalspec(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("config/labels.yaml", "x: &r [*r]\n"),
        ("config/labels.yaml", laughs(9, 9)),
        ("datasets/example.card.md", _front_matter(deep_yaml(50_000, "flow-seq"))),
    ],
)
def test_lint_reports_a_hostile_config_as_one_line_and_exits_1(
    layout: Path, rel: str, text: str
) -> None:
    (layout / rel).write_text(text)
    proc = within(30, lambda: evalspec(layout, "lint"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert any(Path(rel).name in line for line in proc.stdout.splitlines())


@pytest.mark.parametrize(
    ("rel", "text", "expected"),
    [
        ("config/gates.yaml", "gates: &r [*r]\n", "recursive alias"),
        ("config/gates.yaml", laughs(9, 9), "nodes"),
        ("config/gates.yaml", deep_yaml(50_000, "flow-map"), "deeper than"),
        ("report.json", deep_json(100_000, "array"), "deeper than"),
    ],
)
def test_gate_refuses_hostile_documents_with_exit_2(
    layout: Path, rel: str, text: str, expected: str
) -> None:
    (layout / rel).write_text(text)
    if rel == "report.json":
        proc = evalspec(layout, "gate", "report.json")
    else:
        good = layout / "report.json"
        good.write_text("{}")
        proc = evalspec(layout, "gate", "report.json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    name = Path(rel).name
    # One line for the problem, naming the file (and the line, for YAML).
    (problem,) = [line for line in proc.stderr.splitlines() if expected in line]
    assert name in problem
    if rel == "config/gates.yaml":
        assert re.match(r"config/gates\.yaml:\d+: ", problem)
