"""``evalspec gate`` on the command line: argument order and the config file it names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_first_run import run


def _report(dataset: str, mean: float) -> dict[str, Any]:
    return {
        "schema": "evalspec/score-report",
        "schema_version": 1,
        "dataset": dataset,
        "aggregates": {
            "by_metric": {"exact_match": {"count": 5, "mean": mean, "ci95": None}},
            "by_category": {},
            "by_label": {},
        },
    }


def _files(tmp_path: Path) -> None:
    (tmp_path / "new.json").write_text(json.dumps(_report("main", 0.70)))
    (tmp_path / "old.json").write_text(json.dumps(_report("main", 0.82)))
    (tmp_path / "red.yaml").write_text("gates:\n  main:\n    exact_match: {max_drop: 0.05}\n")


def test_baseline_before_or_after_the_report_means_the_same(tmp_path: Path) -> None:
    _files(tmp_path)
    after = run("gate", "new.json", "--baseline", "old.json", "--config", "red.yaml", cwd=tmp_path)
    before = run("gate", "--config", "red.yaml", "--baseline", "old.json", "new.json", cwd=tmp_path)
    assert after.returncode == 1, after.stdout + after.stderr
    assert (before.returncode, before.stdout, before.stderr) == (
        after.returncode,
        after.stdout,
        after.stderr,
    )
    assert "FAIL  main exact_match: max_drop: drop 0.1200" in before.stdout


def test_config_problems_name_the_config_given(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "red.yaml").write_text("- not a mapping\n")
    r = run("gate", "new.json", "--config", "red.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "red.yaml:1: red.yaml must be a mapping of keys",
        "evalspec: error: 1 problem in the gates config red.yaml; no gate was checked",
    ]


# -- gate --format json ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _documented() -> dict[str, Any]:
    """The example object README.md gives for ``gate --format json``."""
    readme = (ROOT / "README.md").read_text()
    after = readme.index("`gate --format json` prints one object")
    start = readme.index("```json\n", after) + len("```json\n")
    doc: dict[str, Any] = json.loads(readme[start : readme.index("```\n", start)])
    return doc


def _json(*args: str, cwd: Path) -> tuple[int, dict[str, Any], str]:
    r = run("gate", *args, "--format", "json", cwd=cwd)
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)  # one object, nothing else on standard output
    assert isinstance(doc, dict)
    return r.returncode, doc, r.stderr


def test_json_is_one_object_with_the_documented_keys_in_order(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "red.yaml").write_text(
        "gates:\n  main:\n    exact_match: {min: 0.5, max_drop: 0.05}\n"
    )
    code, doc, err = _json(
        "new.json", "--baseline", "old.json", "--config", "red.yaml", cwd=tmp_path
    )
    documented = _documented()
    assert (code, err) == (1, "")
    assert list(doc) == list(documented)
    assert list(doc["counts"]) == list(documented["counts"])
    assert [list(c) for c in doc["checks"]] == [list(documented["checks"][0])] * 2
    assert doc["schema"] == "evalspec/gate-report" and doc["schema_version"] == 2
    assert doc["config"] == "red.yaml"
    assert doc["passed"] is False
    assert doc["counts"] == {"passed": 1, "skipped": 0, "failed": 1}
    low, drop = doc["checks"]
    assert (low["check"], low["result"], low["figure"], low["threshold"]) == (
        "min",
        "pass",
        0.70,
        0.5,
    )
    assert (drop["check"], drop["result"], drop["baseline"], drop["line"]) == (
        "max_drop",
        "fail",
        0.82,
        3,
    )
    assert drop["message"].startswith("drop 0.1200 (baseline 0.8200 -> 0.7000) > max_drop")
    # The same verdicts as the text output, which says it in lines.
    text = run("gate", "new.json", "--baseline", "old.json", "--config", "red.yaml", cwd=tmp_path)
    assert text.returncode == code
    assert text.stdout.splitlines()[-1] == "1 passed, 0 skipped, 1 failed"


def test_json_says_what_was_skipped_uncovered_and_compared_anyway(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "other.json").write_text(json.dumps(_report("other", 0.9)))
    code, doc, _ = _json("new.json", "other.json", "--config", "red.yaml", cwd=tmp_path)
    assert code == 0 and doc["passed"] is True  # a skip is not a failure ...
    assert doc["counts"] == {"passed": 0, "skipped": 1, "failed": 0}  # ... but is counted
    assert doc["checks"][0]["result"] == "skip" and doc["checks"][0]["baseline"] is None
    assert doc["uncovered"] == ["other"]
    assert doc["compared_anyway"] == []

    old = _report("main", 0.72)
    old["counts"] = {"tasks": 9}  # scored on another number of tasks
    (tmp_path / "old.json").write_text(json.dumps(old))
    refused = run(
        "gate",
        "new.json",
        "--baseline",
        "old.json",
        "--config",
        "red.yaml",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert "number of tasks" in refused.stderr
    code, doc, _ = _json(
        "new.json",
        "--baseline",
        "old.json",
        "--config",
        "red.yaml",
        "--allow-incomparable",
        cwd=tmp_path,
    )
    assert code == 0
    assert len(doc["compared_anyway"]) == 1 and "number of tasks" in doc["compared_anyway"][0]


def test_json_prints_nothing_on_standard_output_for_a_bad_config(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "red.yaml").write_text("gates:\n  nope[: 1\n")
    r = run("gate", "new.json", "--config", "red.yaml", "--format", "json", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines()[-1].startswith("evalspec: error:")


def test_text_and_markdown_escape_control_characters_from_config_and_reports(
    tmp_path: Path,
) -> None:
    name = "ma\x1bM\x07in"  # ESC M moves the cursor up a line; BEL rings
    (tmp_path / "new.json").write_text(json.dumps(_report(name, 0.70)))
    (tmp_path / "red.yaml").write_text('gates:\n  "ma\\eM\\ain":\n    exact_match: {min: 0.5}\n')
    r = run(
        "gate",
        "new.json",
        "--config",
        "red.yaml",
        "--markdown",
        "g.md",
        "--color",
        "never",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\\u001bM\\u0007in" in r.stdout
    markdown = (tmp_path / "g.md").read_text()
    assert "\x1b" not in markdown and "\\u001b" in markdown
    code, doc, _ = _json("new.json", "--config", "red.yaml", cwd=tmp_path)
    assert (code, doc["checks"][0]["dataset"]) == (0, name)  # JSON keeps the name as is
