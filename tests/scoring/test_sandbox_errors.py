"""A run the sandbox cannot set up (``sandbox_error``) never aborts scoring.

The cause here is real and the machine's, never the program's: a memory
limit in which the sandbox's own trusted processes cannot start (1 MiB of
address space), so the run fails before a line of the program runs, at every
tier. The report is finished; those rows and samples are marked and counted,
have no score, stay out of every mean and of pass@k; ``score`` exits 1 and
``gate`` refuses the report unless ``--allow-sandbox-errors``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest
from report_schema import check_report

from evalspec import TaskSpec, build_report, format_report, score_task, score_tasks
from evalspec.io.exitcodes import EXIT_PROBLEMS
from evalspec.registry.build import default_registry
from evalspec.sandbox import (
    TIERS as ALL_TIERS,
)
from evalspec.sandbox import (
    Limits,
    Sandbox,
    SandboxUnavailable,
    TaskResult,
    WeakIsolationWarning,
)
from evalspec.scoring.pipeline import ScoreOptions, score_inputs

STARVED = Limits(memory_bytes=1024 * 1024, cpu_seconds=5, wall_seconds=10.0)
"""Too little memory for the sandbox's trusted side to start: a setup failure."""
STARVE_MARK = "# starved"
FAST = Limits(cpu_seconds=5, wall_seconds=10.0)
ADD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
STARVED_ADD = ADD + STARVE_MARK + "\n"
TESTS = ["assert add(2, 3) == 5"]


def sandbox_at(tier: str, limits: Limits) -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakIsolationWarning)  # rlimits-only as root
        return Sandbox(limits, tier=tier)


def _available() -> list[str]:
    found = []
    for tier in ALL_TIERS:
        try:
            sandbox_at(tier, FAST)
        except SandboxUnavailable:
            continue
        found.append(tier)
    return found


TIERS = _available()


class _StarvingSandbox:
    """A real sandbox that runs programs carrying :data:`STARVE_MARK` under
    :data:`STARVED` limits: every result is a real run's."""

    def __init__(self, box: Sandbox) -> None:
        self._box = box
        self.tier = box.tier

    def run_tests(self, code: str, tests: Sequence[str]) -> TaskResult:
        return self._box.run_tests(code, tests, limits=STARVED if STARVE_MARK in code else None)


def code_task(task_id: str, category: str = "code_exec") -> TaskSpec:
    return TaskSpec(task_id, category, "Write add.", TESTS, "code_exec", "none")


TASKS = [
    code_task("ok"),
    code_task("wrong"),
    code_task("machine"),
    code_task("sampled_ok"),
    code_task("sampled_machine"),
    TaskSpec("qa", "qa", "2+2?", ["4"], "exact_match", "strip_whitespace"),
]
PREDICTIONS = {
    "ok": ADD,
    "wrong": WRONG,
    "machine": STARVED_ADD,
    "sampled_ok": [ADD, WRONG, ADD],
    "sampled_machine": [ADD, STARVED_ADD, ADD],
    "qa": "4",
}


@pytest.mark.parametrize("tier", TIERS)
def test_the_cause_is_a_setup_failure_at_every_tier(tier: str) -> None:
    box = sandbox_at(tier, STARVED)
    # Twice: the second run is forked from a warm worker slot where there is
    # one, whose inherited heap may well fit the program; the verdict may not
    # depend on that luck.
    for _ in range(2):
        result = box.run(ADD, TESTS[0])
        assert result.status == "sandbox_error", result
        assert "1048576 byte memory limit is below" in result.detail, result


@pytest.fixture(scope="module", params=TIERS)
def scored(request: pytest.FixtureRequest) -> tuple[str, dict[str, object]]:
    box = _StarvingSandbox(sandbox_at(request.param, FAST))
    scores = score_tasks(TASKS, PREDICTIONS, allow_code_exec=True, sandbox=box, jobs=2)
    report = build_report(TASKS, scores, dataset="tasks", pass_at=[1], bootstrap=50)
    return request.param, report


def test_a_sandbox_error_is_a_marked_row_without_a_score(
    scored: tuple[str, dict[str, object]],
) -> None:
    _, report = scored
    check_report(report)
    rows = {r["task_id"]: r for r in report["rows"]}  # type: ignore[attr-defined]
    machine = rows["machine"]
    assert machine["score"] is None
    assert machine["detail"]["status"] == "sandbox_error"
    # The trusted side's MemoryError, or the kernel's SIGKILL of an exec it could not map.
    assert machine["detail"]["failure"].startswith("sandbox_error: "), machine
    sampled = rows["sampled_machine"]
    assert sampled["score"] is None and sampled["detail"]["sandbox_errors"] == 1
    assert [s["score"] for s in sampled["samples"]] == [1.0, None, 1.0]
    assert sampled["pass_at"] == {"pass@1": None}
    assert "1 of 3 outputs had sandbox_error" in sampled["pass_at_reason"]
    # The rows the sandbox ran are scored as ever.
    assert rows["ok"]["score"] == 1.0 and rows["wrong"]["score"] == 0.0
    assert rows["wrong"]["detail"]["status"] == "fail"


def test_sandbox_errors_are_counted_and_in_no_mean(scored: tuple[str, dict[str, object]]) -> None:
    _, report = scored
    counts = report["counts"]
    assert counts["sandbox_errors"] == 2, report["rows"]  # type: ignore[index]
    assert counts["scored"] == 4  # type: ignore[index]
    code = report["aggregates"]["by_metric"]["code_exec"]  # type: ignore[index]
    # ok 1, wrong 0, sampled_ok 2/3: the two tasks without a verdict are not zeros.
    assert code["count"] == 3
    assert code["mean"] == pytest.approx((1 + 0 + 2 / 3) / 3)
    assert report["aggregates"]["by_category"]["code_exec"]["count"] == 3  # type: ignore[index]
    pass1 = report["pass_at_k"]["pass@1"]  # type: ignore[index]
    # A single output is n = 1; neither task without a verdict is in it.
    assert pass1["by_metric"]["code_exec"]["count"] == 3
    assert pass1["by_metric"]["code_exec"]["mean"] == pytest.approx((1 + 0 + 2 / 3) / 3)
    assert pass1["all"]["count"] == 4  # and qa (exact_match is binary)
    assert any("2 tasks (machine, sampled_machine) had sandbox_error" in n for n in report["notes"])  # type: ignore[attr-defined]


def test_every_format_shows_the_count_and_the_rows(scored: tuple[str, dict[str, object]]) -> None:
    _, report = scored
    text = format_report(report, "text")
    markdown = format_report(report, "markdown")
    as_json = json.loads(format_report(report, "json"))
    assert as_json["counts"]["sandbox_errors"] == 2
    for shown in (text, markdown):
        assert "2 sandbox errors" in shown
        assert "machine" in shown and "sandbox_error: " in shown
        assert "sample 2: sandbox_error" in shown
        assert "1 of 3 outputs had sandbox_error: the task has no pass@k" in shown
    machine_line = next(line for line in text.splitlines() if line.startswith("machine "))
    assert " none " in machine_line  # no score, not 0.0000


def test_score_task_returns_no_score_instead_of_raising() -> None:
    box = _StarvingSandbox(Sandbox(FAST))
    result = score_task(code_task("c"), STARVED_ADD, allow_code_exec=True, sandbox=box)
    assert result.score is None and result.sandbox_errors == 1
    assert result.detail is not None and result.detail["status"] == "sandbox_error"


def _pipeline(options: ScoreOptions) -> tuple[int, dict[str, object] | None, list[str]]:
    tasks = "".join(json.dumps(t) + "\n" for t in _task_lines())
    predictions = "".join(
        json.dumps({"task_id": tid, "output": out}) + "\n"
        for tid, out in (("c1", ADD), ("c2", WRONG), ("qa", "4"))
    )
    said: list[str] = []
    outcome = score_inputs(
        tasks.encode(),
        predictions.encode(),
        tasks_path="tasks.jsonl",
        tasks_name="tasks.jsonl",
        predictions_name="predictions.jsonl",
        registry=default_registry(None),
        options=options,
        say=said.append,
    )
    return outcome.exit_code, outcome.report, said


def _task_lines() -> list[dict[str, object]]:
    def line(
        task_id: str, category: str, prompt: str, targets: list[str], metric: str
    ) -> dict[str, object]:
        post = "none" if metric == "code_exec" else "strip_whitespace"
        return {
            "task_id": task_id,
            "category": category,
            "prompt": prompt,
            "targets": targets,
            "metric_name": metric,
            "post_process": post,
        }

    return [
        line("c1", "code_exec", "Write add.", TESTS, "code_exec"),
        line("c2", "code_exec", "Write add.", TESTS, "code_exec"),
        line("qa", "arithmetic", "2+2?", ["4"], "exact_match"),
    ]


def test_the_score_pipeline_finishes_the_report_and_exits_1() -> None:
    code, report, said = _pipeline(ScoreOptions(allow_code_exec=True, limits=STARVED, bootstrap=0))
    assert code == EXIT_PROBLEMS
    assert report is not None
    check_report(report)
    assert report["counts"]["sandbox_errors"] == 2  # type: ignore[index]
    assert report["aggregates"]["by_metric"]["exact_match"]["mean"] == 1.0  # type: ignore[index]
    assert report["aggregates"]["by_metric"]["code_exec"]["count"] == 0  # type: ignore[index]
    assert any("2 tasks had sandbox_error" in line for line in said), said
    clean, clean_report, _ = _pipeline(ScoreOptions(allow_code_exec=True, bootstrap=0))
    assert clean == 0 and clean_report is not None
    assert clean_report["counts"]["sandbox_errors"] == 0  # type: ignore[index]


def _gate(
    tmp_path: Path, report: dict[str, object], *extra: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "gates.yaml").write_text("gates:\n  tasks:\n    exact_match: {min: 0.5}\n")
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "gate", "report.json", "--config", "gates.yaml", *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_gate_refuses_a_report_with_sandbox_errors_unless_allowed(
    tmp_path: Path, scored: tuple[str, dict[str, object]]
) -> None:
    _, report = scored
    refused = _gate(tmp_path, report)
    assert refused.returncode == 2, refused
    assert "the report has 2 tasks with sandbox_error" in refused.stderr
    assert "--allow-sandbox-errors" in refused.stderr
    assert "Traceback" not in refused.stderr
    allowed = _gate(tmp_path, report, "--allow-sandbox-errors")
    assert allowed.returncode == 0, allowed
    assert "gated anyway (--allow-sandbox-errors)" in allowed.stdout
    assert "pass  tasks exact_match: min" in allowed.stdout


def test_gate_json_carries_the_sandbox_error_count_and_the_refusal(
    tmp_path: Path, scored: tuple[str, dict[str, object]]
) -> None:
    _, report = scored
    assert report["schema_version"] == 3  # a null score is new in version 3
    refused = _gate(tmp_path, report, "--format", "json")
    assert refused.returncode == 2, refused
    assert "--allow-sandbox-errors" in refused.stderr and "Traceback" not in refused.stderr
    doc = json.loads(refused.stdout)  # one object, even when refusing
    assert doc["refused"] == "sandbox_errors" and doc["passed"] is False
    assert doc["checks"] == [] and doc["counts"] == {"passed": 0, "skipped": 0, "failed": 0}
    assert doc["sandbox_errors"] == [{"dataset": "tasks", "role": "report", "tasks": 2}]
    allowed = _gate(tmp_path, report, "--format", "json", "--allow-sandbox-errors")
    assert allowed.returncode == 0, allowed
    doc = json.loads(allowed.stdout)
    assert doc["refused"] is None and doc["passed"] is True
    assert doc["sandbox_errors"] == [{"dataset": "tasks", "role": "report", "tasks": 2}]
    assert [c["result"] for c in doc["checks"]] == ["pass"]
    # As a baseline too: a drop measured against means that leave tasks out is no drop.
    (tmp_path / "base.json").write_text(json.dumps(report))
    clean = {**report, "counts": {**report["counts"], "sandbox_errors": 0}}  # type: ignore[dict-item]
    clean["rows"] = []
    (tmp_path / "clean.json").write_text(json.dumps(clean))
    command = ["gate", "clean.json", "--baseline", "base.json", "--config", "gates.yaml"]
    as_baseline = subprocess.run(
        [sys.executable, "-m", "evalspec", *command, "--format", "json", "--allow-incomparable"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert as_baseline.returncode == 2, as_baseline
    doc = json.loads(as_baseline.stdout)
    assert doc["refused"] == "sandbox_errors"
    assert doc["sandbox_errors"] == [{"dataset": "tasks", "role": "baseline", "tasks": 2}]
