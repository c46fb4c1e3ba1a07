"""A checker for the score report schema, version 2, as docs/score-report.md states it."""

from __future__ import annotations

from typing import Any

TOP = {
    "schema",
    "schema_version",
    "dataset",
    "provenance",
    "rows",
    "aggregates",
    "corpus",
    "counts",
    "unparsed",
    "prediction_problems",
    "notes",
}
PROVENANCE = {
    "spec_version",
    "tasks_sha256",
    "predictions_sha256",
    "predictions_format",
    "evalspec_version",
    "plugins",
    "reference_packages",
    "seed",
    "bootstrap_resamples",
    "ci_method",
    "code_exec",
}
ROW = {
    "task_id",
    "category",
    "metric",
    "post_process",
    "score",
    "prediction",
    "missing",
    "unparsed",
    "detail",
}
COUNTS = {"tasks", "scored", "missing", "invalid_tasks", "invalid_predictions"}
# Version 2: present only when the predictions carried samples ("outputs").
SAMPLED_ROW = {"n", "samples"}
BINARY_ROW = {"correct"}
PASS_AT_ROW = {"pass_at"}
STATUSES = {"pass", "fail", "timeout", "killed", "oom"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_stat(stat: Any, where: str) -> None:
    assert isinstance(stat, dict), where
    assert {"count", "mean", "ci95"} <= set(stat) <= {"count", "mean", "ci95", "reason"}, where
    assert isinstance(stat["count"], int), where
    if stat["mean"] is None or stat["ci95"] is None:
        assert isinstance(stat.get("reason"), str), where
    if stat["mean"] is not None:
        assert _number(stat["mean"]) and 0 <= stat["mean"] <= 1, where
    if stat["ci95"] is not None:
        low, high = stat["ci95"]
        assert _number(low) and _number(high) and 0 <= low <= high <= 1, where


def check_report(report: Any) -> None:
    """Assert that ``report`` (decoded JSON) follows schema version 2."""
    assert isinstance(report, dict)
    assert set(report) - {"pass_at_k"} == TOP
    assert report["schema"] == "evalspec/score-report"
    assert report["schema_version"] == 2
    assert isinstance(report["dataset"], str)

    prov = report["provenance"]
    assert set(prov) == PROVENANCE
    assert isinstance(prov["spec_version"], int)
    for key in ("tasks_sha256", "predictions_sha256"):
        value = prov[key]
        assert value is None or (len(value) == 64 and set(value) <= set("0123456789abcdef"))
    assert prov["predictions_format"] in ("evalspec", "lm-eval", "inspect")
    assert isinstance(prov["evalspec_version"], str)
    assert all(v is None or isinstance(v, str) for v in prov["plugins"].values())
    assert set(prov["reference_packages"]) == {"rouge-score", "sacrebleu"}
    assert isinstance(prov["seed"], int) and isinstance(prov["bootstrap_resamples"], int)
    assert isinstance(prov["ci_method"], str)
    assert prov["code_exec"] is None or isinstance(prov["code_exec"]["isolation_tier"], str)
    if prov["code_exec"] is not None and "executor" in prov["code_exec"]:
        ce = prov["code_exec"]
        assert ce["executor"] == "ray" and ce["nodes"] == len(ce["node_tiers"]) >= 1

    for row in report["rows"]:
        assert set(row) - SAMPLED_ROW - BINARY_ROW - PASS_AT_ROW == ROW
        if "samples" in row:
            assert row["n"] == len(row["samples"]) >= 1
            for sample in row["samples"]:
                assert set(sample) == {"prediction", "score", "unparsed", "detail"}
                assert _number(sample["score"]) and 0 <= sample["score"] <= 1
        if "correct" in row:
            assert 0 <= row["correct"] <= row["n"]
        if "pass_at" in row:
            assert all(_number(v) and 0 <= v <= 1 for v in row["pass_at"].values())
        assert all(isinstance(row[k], str) for k in ("task_id", "category", "metric"))
        assert _number(row["score"]) and 0 <= row["score"] <= 1
        assert row["missing"] is (row["prediction"] is None)
        assert isinstance(row["unparsed"], bool)
        details = [row["detail"]] if "samples" not in row else [s["detail"] for s in row["samples"]]
        if row["detail"] is not None:
            assert isinstance(row["detail"]["isolation_tier"], str)
        for detail in details:
            if detail is not None:
                assert isinstance(detail["isolation_tier"], str)
                assert set(detail["statuses"]) <= STATUSES

    agg = report["aggregates"]
    assert set(agg) == {"overall", "by_category", "by_metric", "by_label"}
    for group in ("overall", "by_category", "by_metric"):
        for name, stat in agg[group].items():
            _check_stat(stat, f"{group}.{name}")
    for label, values in agg["by_label"].items():
        for value, stat in values.items():
            _check_stat(stat, f"by_label.{label}.{value}")

    for name, value in report["corpus"].items():
        assert value is None or (_number(value) and 0 <= value <= 1), name
    assert set(report["counts"]) - {"samples"} == COUNTS
    if "pass_at_k" in report:
        section = report["pass_at_k"]
        assert section["k"] == sorted(set(section["k"])) and section["k"]
        assert isinstance(section["estimator"], str)
        for k in section["k"]:
            figures = section[f"pass@{k}"]
            assert set(figures) == {"all", "by_metric", "by_category", "by_label"}
            _check_stat(figures["all"], f"pass@{k}.all")
            for group in ("by_metric", "by_category"):
                for name, stat in figures[group].items():
                    _check_stat(stat, f"pass@{k}.{group}.{name}")
            for label, values in figures["by_label"].items():
                for value, stat in values.items():
                    _check_stat(stat, f"pass@{k}.by_label.{label}.{value}")
    assert all(isinstance(v, int) and v >= 0 for v in report["counts"].values())
    counts = report["counts"]
    assert counts["tasks"] == len(report["rows"]) == counts["scored"] + counts["missing"]
    for rules in report["unparsed"].values():
        assert all(isinstance(n, int) for n in rules.values())
    for problem in report["prediction_problems"]:
        assert set(problem) == {"line", "rule", "message", "task_id"}
    assert all(isinstance(n, str) for n in report["notes"])
