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
