"""A checker for the score report schema, version 3, as docs/score-report.md states it."""

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
COUNTS = {"tasks", "scored", "missing", "sandbox_errors", "invalid_tasks", "invalid_predictions"}
# Version 2: present only when the predictions carried samples ("outputs").
SAMPLED_ROW = {"n", "samples"}
BINARY_ROW = {"correct"}
PASS_AT_ROW = {"pass_at", "pass_at_reason"}
STATUSES = {"pass", "fail", "timeout", "killed", "oom", "sandbox_error"}
LIMITS = {
    "cpu_seconds",
    "wall_seconds",
    "memory_bytes",
    "file_size_bytes",
    "open_files",
    "processes",
    "output_bytes",
    "disk_bytes",
}
DETAIL = {"isolation_tier", "statuses", "status", "failure"}
SAMPLED_DETAIL = {"isolation_tier", "sandbox_errors", "failure"}


def _check_detail(detail: Any, score: Any) -> None:
    """A code_exec output's detail: its status, and a one-line failure unless it passed;
    no score exactly when the sandbox could not run it."""
    assert set(detail) == DETAIL
    assert isinstance(detail["isolation_tier"], str)
    assert set(detail["statuses"]) <= STATUSES
    assert detail["status"] in STATUSES
    if detail["status"] == "pass":
        assert detail["failure"] is None
    else:
        failure = detail["failure"]
        assert isinstance(failure, str) and failure.startswith(detail["status"])
        assert "\n" not in failure and len(failure) <= 300
    assert (score is None) is (detail["status"] == "sandbox_error")


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
    """Assert that ``report`` (decoded JSON) follows schema version 3."""
    assert isinstance(report, dict)
    assert set(report) - {"pass_at_k"} == TOP
    assert report["schema"] == "evalspec/score-report"
    assert report["schema_version"] == 3
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
    if prov["code_exec"] is not None and "limits" in prov["code_exec"]:
        limits = prov["code_exec"]["limits"]
        assert set(limits) == LIMITS, limits
        assert all(_number(v) and v > 0 for v in limits.values())
    if prov["code_exec"] is not None and "executor" in prov["code_exec"]:
        ce = prov["code_exec"]
        assert ce["executor"] == "ray" and ce["nodes"] == len(ce["node_tiers"]) >= 1

    for row in report["rows"]:
        assert set(row) - SAMPLED_ROW - BINARY_ROW - PASS_AT_ROW == ROW
        if "samples" in row:
            assert row["n"] == len(row["samples"]) >= 1
            for sample in row["samples"]:
                assert set(sample) == {"prediction", "score", "unparsed", "detail"}
                if sample["detail"] is not None:
                    _check_detail(sample["detail"], sample["score"])
                if sample["score"] is not None:
                    assert _number(sample["score"]) and 0 <= sample["score"] <= 1
        if "correct" in row:
            assert 0 <= row["correct"] <= row["n"]
        if "pass_at" in row:
            values = list(row["pass_at"].values())
            if "pass_at_reason" in row:
                # A task with an output the sandbox could not run has no pass@k.
                assert all(v is None for v in values) and "sandbox_error" in row["pass_at_reason"]
            else:
                assert all(_number(v) and 0 <= v <= 1 for v in values)
        assert all(isinstance(row[k], str) for k in ("task_id", "category", "metric"))
        errored = _row_sandbox_errors(row)
        if errored:
            assert row["score"] is None
        else:
            assert _number(row["score"]) and 0 <= row["score"] <= 1
        assert row["missing"] is (row["prediction"] is None)
        assert isinstance(row["unparsed"], bool)
        if row["detail"] is not None and "samples" not in row:
            _check_detail(row["detail"], row["score"])
        if row["detail"] is not None and "samples" in row:
            assert set(row["detail"]) == SAMPLED_DETAIL
            assert row["detail"]["sandbox_errors"] == errored
            failing = [s for s in row["samples"] if s["detail"]["status"] != "pass"]
            assert (row["detail"]["failure"] is None) is (not failing)

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
    assert counts["tasks"] == len(report["rows"])
    assert counts["tasks"] == counts["scored"] + counts["missing"] + counts["sandbox_errors"]
    assert counts["sandbox_errors"] == sum(1 for r in report["rows"] if _row_sandbox_errors(r))
    for rules in report["unparsed"].values():
        assert all(isinstance(n, int) for n in rules.values())
    for problem in report["prediction_problems"]:
        assert set(problem) == {"line", "rule", "message", "task_id"}
    assert all(isinstance(n, str) for n in report["notes"])


def _row_sandbox_errors(row: Any) -> int:
    """Outputs of a row the sandbox could not run."""
    detail = row["detail"]
    if detail is None:
        return 0
    if "samples" in row:
        return int(detail.get("sandbox_errors", 0))
    return int(detail.get("status") == "sandbox_error")
