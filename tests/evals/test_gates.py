"""Gates: config validated up front, every red line with its figure and threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import evalspec

from evalspec.evals.gates import (
    GateConfigError,
    ReportError,
    by_dataset,
    check,
    load_report,
    parse_gates,
    to_markdown,
)

METRICS = {"exact_match", "f1", "accuracy"}
LABELS = {"difficulty": ("easy", "hard")}


def _report(dataset: str, mean: float, hard: float = 0.5, mcq: float = 0.9) -> dict[str, Any]:
    stat = {"count": 10, "mean": mean, "ci95": [mean - 0.1, mean + 0.1]}
    return {
        "schema": "evalspec/score-report",
        "schema_version": 1,
        "dataset": dataset,
        "aggregates": {
            "by_metric": {"exact_match": stat},
            "by_category": {"mcq": {"count": 3, "mean": mcq, "ci95": None}},
            "by_label": {"difficulty": {"hard": {"count": 4, "mean": hard, "ci95": None}}},
        },
    }


def _parse(text: str, datasets: set[str] | None = None) -> Any:
    return parse_gates(
        text,
        "gates.yaml",
        datasets=datasets or {"main", "security"},
        metrics=METRICS,
        labels=LABELS,
        categories={"mcq", "arithmetic"},
    )


CONFIG = """\
gates:
  main:
    exact_match: {min: 0.8, max_drop: 0.02}
  main[difficulty=hard]:
    score: 0.5
  main[category=mcq]:
    score: {min: 0.7}
"""


def test_all_gates_pass() -> None:
    verdicts = check(
        _parse(CONFIG), {"main": _report("main", 0.85)}, {"main": _report("main", 0.86)}
    )
    assert [v.passed for v in verdicts] == [True, True, True, True]


def test_red_lines_carry_figure_and_threshold() -> None:
    verdicts = check(
        _parse(CONFIG), {"main": _report("main", 0.75, hard=0.4)}, {"main": _report("main", 0.80)}
    )
    failed = [(v.gate.name, v.check, v.figure, v.threshold) for v in verdicts if not v.passed]
    assert failed == [
        ("main exact_match", "min", 0.75, 0.8),
        ("main exact_match", "max_drop", 0.75, 0.02),
        ("main[difficulty=hard] score", "min", 0.4, 0.5),
    ]
    md = to_markdown(verdicts)
    assert "**Gate checks: 1 passed, 0 skipped, 3 failed**" in md
    assert "drop 0.0500 (baseline 0.8000 -> 0.7500) > max_drop 0.0200" in md


def test_a_drop_exactly_at_the_limit_passes() -> None:
    gates = _parse("gates:\n  main:\n    exact_match: {max_drop: 0.1}\n")
    [v] = check(gates, {"main": _report("main", 0.7)}, {"main": _report("main", 0.8)})
    assert v.passed is True


def test_drop_gate_without_baseline_is_reported_unchecked() -> None:
    gates = _parse("gates:\n  main:\n    exact_match: {max_drop: 0.1}\n")
    [v] = check(gates, {"main": _report("main", 0.7)}, None)
    assert v.passed is None and "no --baseline" in v.message


def test_gated_dataset_absent_from_reports_fails() -> None:
    gates = _parse("gates:\n  security:\n    exact_match: 0.9\n")
    [v] = check(gates, {"main": _report("main", 0.9)}, None)
    assert (v.passed, v.check) == (False, "data")
    assert "no score report for dataset 'security'" in v.message


def test_metric_absent_from_report_fails() -> None:
    gates = _parse("gates:\n  main:\n    f1: 0.1\n")
    [v] = check(gates, {"main": _report("main", 0.9)}, None)
    assert v.passed is False


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("gates:\n  mian:\n    exact_match: 0.5\n", 2, "unknown dataset 'mian'"),
        ("gates:\n  main:\n    exact_matc: 0.5\n", 3, "unknown metric 'exact_matc'"),
        ("gates:\n  main:\n    exact_match: {minimum: 0.5}\n", 3, "unknown threshold"),
        ("gates:\n  main:\n    exact_match: {min: 80}\n", 3, "min must be a number in [0, 1]"),
        ("gates:\n  main:\n    exact_match: {}\n", 3, "give min, max_drop or both"),
        ("gates:\n  main[lang=en]:\n    score: 0.5\n", 2, "unknown label 'lang'"),
        ("gates:\n  main[difficulty=mid]:\n    score: 0.5\n", 2, "not a legal value"),
        ("gates:\n  main[category=mcqq]:\n    score: 0.5\n", 2, "unknown category"),
        ("gates:\n  main[category=mcq]:\n    exact_match: 0.5\n", 3, "a slice is gated on"),
        ("gates:\n  main:\n    score: 0.5\n", 3, "unknown metric 'score'"),
        ("gate:\n  main:\n    exact_match: 0.5\n", 1, "unknown key 'gate'"),
        ("gates:\n  main:\n    exact_match: 0.5\n  main:\n    f1: 0.1\n", 4, "repeats the key"),
    ],
)
def test_config_problems_are_errors(text: str, line: int, fragment: str) -> None:
    with pytest.raises(GateConfigError) as info:
        _parse(text)
    assert any(ln == line and fragment in msg for ln, msg in info.value.problems), (
        info.value.problems
    )


def test_reports_are_checked(tmp_path: Path) -> None:
    good = tmp_path / "r.json"
    good.write_text(json.dumps(_report("main", 0.9)))
    assert load_report(good)["dataset"] == "main"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**_report("main", 0.9), "schema_version": 4}))
    with pytest.raises(ReportError, match="schema_version"):
        load_report(bad)
    bad.write_text("{")
    with pytest.raises(ReportError, match="not JSON"):
        load_report(bad)
    with pytest.raises(ReportError, match="both report dataset 'main'"):
        by_dataset([(good, load_report(good)), (good, load_report(good))])


HUGE = "1" + "0" * 400  # an integer JSON and YAML take, far beyond any float


def test_a_huge_integer_threshold_is_a_config_problem() -> None:
    with pytest.raises(GateConfigError) as info:
        _parse(f"gates:\n  main:\n    exact_match: {{min: {HUGE}}}\n")
    ((line, message),) = info.value.problems
    assert line == 3 and "min must be a number in [0, 1]" in message


def test_a_huge_integer_in_a_report_is_no_figure() -> None:
    report = _report("main", 0.9)
    report["aggregates"]["by_metric"]["exact_match"]["mean"] = int(HUGE)
    report["aggregates"]["by_metric"]["exact_match"]["ci95"] = [int(HUGE), 1.0]
    gates = _parse("gates:\n  main:\n    exact_match: {min: 0.5}\n")
    (verdict,) = check(gates, {"main": report}, {})
    assert verdict.passed is False and verdict.figure is None


def test_the_gate_command_reports_huge_integers_in_one_line(tmp_path: Path) -> None:
    assert evalspec(tmp_path, "init").returncode == 0
    report = {**_report("example", 0.9), "schema_version": 2}
    report["aggregates"]["by_metric"]["exact_match"]["mean"] = "HUGE"
    (tmp_path / "r.json").write_text(json.dumps(report).replace('"HUGE"', HUGE))
    (tmp_path / "g.yaml").write_text(f"gates:\n  example:\n    exact_match: {{min: {HUGE}}}\n")
    bad_config = evalspec(tmp_path, "gate", "r.json", "--config", "g.yaml")
    assert bad_config.returncode == 2, bad_config.stderr
    assert "Traceback" not in bad_config.stderr
    assert "min must be a number in [0, 1]" in bad_config.stderr
    (tmp_path / "g.yaml").write_text("gates:\n  example:\n    exact_match: {min: 0.5}\n")
    bad_report = evalspec(tmp_path, "gate", "r.json", "--config", "g.yaml")
    assert bad_report.returncode == 1, bad_report.stderr
    assert "Traceback" not in bad_report.stderr
    assert bad_report.stdout.startswith("FAIL")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gates: [\n", "ci/red-lines.yaml is not valid YAML"),
        ("- 1\n", "ci/red-lines.yaml must be a mapping of keys"),
        ("gates: {}\ngates: {}\n", "ci/red-lines.yaml repeats the key 'gates'"),
    ],
)
def test_config_problems_name_the_file_read(text: str, expected: str) -> None:
    with pytest.raises(GateConfigError) as info:
        parse_gates(text, "ci/red-lines.yaml", datasets=None, metrics=METRICS)
    [(_, message)] = info.value.problems
    assert message.startswith(expected)
    assert "gates.yaml" not in message
