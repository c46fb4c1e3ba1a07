"""Gates refuse to compare what is not comparable (issue 23, item 4), through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import evalspec


def scored(mean: float, **provenance: Any) -> dict[str, Any]:
    stat = {"count": 10, "mean": mean, "ci95": None}
    prov = {"tasks_sha256": {"tasks.jsonl": "a" * 64}, "spec_version": 3, **provenance}
    return {
        "schema": "evalspec/score-report",
        "schema_version": 2,
        "dataset": "example",
        "provenance": prov,
        "aggregates": {"by_metric": {"exact_match": stat}, "by_category": {}, "by_label": {}},
        "counts": {"tasks": 10},
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert evalspec(tmp_path, "init").returncode == 0
    (tmp_path / "g.yaml").write_text(
        "gates:\n  example:\n    exact_match: {min: 0.5, max_drop: 0.05}\n"
    )
    return tmp_path


@pytest.mark.parametrize(
    ("change", "fact"),
    [
        ({"provenance": {"tasks_sha256": {"tasks.jsonl": "b" * 64}, "spec_version": 3}},
         "tasks_sha256"),
        ({"provenance": {"tasks_sha256": {"tasks.jsonl": "a" * 64}, "spec_version": 4}},
         "spec version"),
        ({"counts": {"tasks": 7}}, "number of tasks"),
    ],
)  # fmt: skip
def test_a_baseline_scored_on_something_else_is_refused(
    project: Path, change: dict[str, Any], fact: str
) -> None:
    (project / "r.json").write_text(json.dumps(scored(0.9)))
    (project / "b.json").write_text(json.dumps({**scored(0.9), **change}))
    refused = evalspec(project, "gate", "r.json", "--baseline", "b.json", "--config", "g.yaml")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"differ in {fact}" in refused.stderr and "--allow-incomparable" in refused.stderr
    assert "passed" not in refused.stdout and "Traceback" not in refused.stderr
    allowed = evalspec(
        project, "gate", "r.json", "--baseline", "b.json", "--config", "g.yaml",
        "--allow-incomparable",
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "compared anyway (--allow-incomparable)" in allowed.stdout and fact in allowed.stdout


def test_other_metrics_are_refused_and_equal_provenance_compares(project: Path) -> None:
    (project / "r.json").write_text(json.dumps(scored(0.9)))
    other = scored(0.9)
    other["aggregates"]["by_metric"]["f1"] = {"count": 10, "mean": 0.1, "ci95": None}
    (project / "b.json").write_text(json.dumps(other))
    refused = evalspec(project, "gate", "r.json", "--baseline", "b.json", "--config", "g.yaml")
    assert refused.returncode == 2 and "differ in metrics" in refused.stderr
    (project / "b.json").write_text(json.dumps(scored(0.8)))
    same = evalspec(project, "gate", "r.json", "--baseline", "b.json", "--config", "g.yaml")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "compared anyway" not in same.stdout
