"""The code_exec metric through the real sandbox (evalspec.sandbox), API and CLI.

These tests run real programs in the sandbox; the sandbox's own containment
suite (fork bombs, memory hogs, escapes...) lives with the sandbox. Here: the
opt-in, the scores, the detail and provenance the report carries, parallel
runs, a sandbox failure never scored as 0, and the bundled fixtures in one
command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest
from report_schema import check_report

from evalspec import TaskSpec, score, score_task, score_tasks
from evalspec.sandbox import CodeExecNotAllowed, Limits, Sandbox
from evalspec.validation.fixtures import fixture_dir

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]
FAST = Limits(cpu_seconds=2, wall_seconds=3.0)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(FAST)


def code_task(task_id: str, tests: Sequence[str] = ADD_TESTS) -> TaskSpec:
    return TaskSpec(
        task_id, "code_exec", "Write add.", list(tests), "code_exec", "extract_code_block"
    )


def fenced(code: str) -> str:
    return f"Sure:\n```python\n{code}```\n"


def test_code_exec_is_refused_without_opt_in_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\n"
    with pytest.raises(CodeExecNotAllowed, match="--allow-code-exec"):
        score("code_exec", code, ["pass"])
    with pytest.raises(CodeExecNotAllowed):
        score_task(code_task("c1"), fenced(code))
    with pytest.raises(CodeExecNotAllowed):
        score_tasks([code_task("c1")], {"c1": fenced(code)})
    assert not marker.exists()


def test_a_sandbox_given_without_opt_in_is_still_refused(sandbox: Sandbox) -> None:
    with pytest.raises(CodeExecNotAllowed):
        score("code_exec", ADD, ADD_TESTS, sandbox=sandbox)


def test_passing_code_scores_one_and_failing_code_zero(sandbox: Sandbox) -> None:
    assert score("code_exec", ADD, ADD_TESTS, allow_code_exec=True, sandbox=sandbox) == 1.0
    wrong = "def add(a, b):\n    return a - b\n"
    assert score("code_exec", wrong, ADD_TESTS, allow_code_exec=True, sandbox=sandbox) == 0.0


def test_exit_status_zero_before_the_tests_is_not_a_pass(sandbox: Sandbox) -> None:
    code = ADD + "import os\nos._exit(0)\n"
    assert score("code_exec", code, ADD_TESTS, allow_code_exec=True, sandbox=sandbox) == 0.0


def test_score_task_extracts_the_code_and_records_the_detail(sandbox: Sandbox) -> None:
    result = score_task(code_task("c1"), fenced(ADD), allow_code_exec=True, sandbox=sandbox)
    assert result.score == 1.0
    assert result.prediction == ADD.rstrip("\n")
    assert result.detail == {
        "isolation_tier": sandbox.tier,
        "statuses": ["pass", "pass"],
        "status": "pass",
        "failure": None,
    }


def test_a_runaway_program_times_out_and_the_run_goes_on(sandbox: Sandbox) -> None:
    tasks = [code_task("loop"), code_task("good"), code_task("nofence")]
    outputs = {
        "loop": fenced("while True:\n    pass\n"),
        "good": fenced(ADD),
        "nofence": ADD,  # extract_code_block returns text without a fence unchanged
    }
    results = score_tasks(tasks, outputs, allow_code_exec=True, sandbox=sandbox, jobs=2)
    assert [r.task_id for r in results] == ["loop", "good", "nofence"]
    assert [r.score for r in results] == [0.0, 1.0, 1.0]
    assert results[0].detail is not None
    assert results[0].detail["statuses"][0] in {"timeout", "killed"}
    assert [r.unparsed for r in results] == [False, False, True]


@pytest.mark.parametrize("jobs", [1, 2])
def test_score_tasks_runs_no_more_than_jobs_programs_at_once(sandbox: Sandbox, jobs: int) -> None:
    # Each program notes when its code started and ended (the host's monotonic
    # clock) and fails its test with that as the message, which the report's
    # failure detail carries back.
    program = (
        "import time\n"
        "START = time.monotonic()\n"
        "time.sleep(0.3)\n"
        "END = time.monotonic()\n"
        "def span():\n"
        "    return f'{START} {END}'\n"
    )
    tasks = [code_task(f"t{i}", ["assert span() == '', span()"]) for i in range(3 * jobs)]
    outputs = {task.task_id: fenced(program) for task in tasks}
    results = score_tasks(tasks, outputs, allow_code_exec=True, sandbox=sandbox, jobs=jobs)
    spans = []
    for result in results:
        assert result.detail is not None and result.detail["status"] == "fail", result.detail
        start, end = result.detail["failure"].rsplit(": ", 1)[1].split()
        spans.append((float(start), float(end)))
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    assert most <= jobs


def test_missing_code_exec_predictions_run_nothing_and_need_no_opt_in() -> None:
    [result] = score_tasks([code_task("c1")], {})
    assert result.missing and result.score == 0.0


def test_the_bundled_fixtures_score_in_one_command(tmp_path: Path) -> None:
    fixtures = fixture_dir()
    tasks = tmp_path / "tasks.jsonl"
    preds = tmp_path / "predictions.jsonl"
    tasks.write_bytes(fixtures.joinpath("tasks.jsonl").read_bytes())
    preds.write_bytes(fixtures.joinpath("predictions.jsonl").read_bytes())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalspec",
            "score",
            str(tasks),
            str(preds),
            "--allow-code-exec",
            "--jobs",
            "2",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    check_report(report)
    rows = {r["task_id"]: r for r in report["rows"]}
    assert rows["code_001"]["score"] == 1.0
    assert rows["code_002"]["score"] == 0.0
    assert report["provenance"]["code_exec"]["isolation_tier"] == Sandbox().tier
    assert report["counts"] == {
        "tasks": 10,
        "scored": 9,
        "missing": 1,
        "sandbox_errors": 0,
        "invalid_tasks": 0,
        "invalid_predictions": 0,
    }


def _run_fixtures(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    fixtures = fixture_dir()
    tasks = tmp_path / "tasks.jsonl"
    preds = tmp_path / "predictions.jsonl"
    tasks.write_bytes(fixtures.joinpath("tasks.jsonl").read_bytes())
    preds.write_bytes(fixtures.joinpath("predictions.jsonl").read_bytes())
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "score", str(tasks), str(preds), *extra],
        capture_output=True,
        text=True,
        check=False,
    )


def test_min_isolation_at_the_tier_in_force_runs(tmp_path: Path) -> None:
    tier = Sandbox().tier
    proc = _run_fixtures(tmp_path, "--allow-code-exec", "--min-isolation", tier, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["provenance"]["code_exec"] == {
        "isolation_tier": tier,
        "limits": attrs.asdict(Limits()),
    }


@pytest.mark.parametrize("allow", [[], ["--allow-code-exec"]])
def test_an_unknown_min_isolation_tier_is_refused_without_code_exec_tasks_too(
    tmp_path: Path, allow: list[str]
) -> None:
    # A typo in CI ("namspace") passed silently while the tasks held no code_exec
    # task, and only failed the day one was added.
    tasks, preds = tmp_path / "tasks.jsonl", tmp_path / "predictions.jsonl"
    task = json.loads(fixture_dir().joinpath("tasks.jsonl").read_text().splitlines()[0])
    assert task["category"] != "code_exec"
    tasks.write_text(json.dumps(task) + "\n")
    preds.write_text(json.dumps({"task_id": task["task_id"], "output": "x"}) + "\n")
    score = [sys.executable, "-m", "evalspec", "score", str(tasks), str(preds), *allow]
    proc = subprocess.run(
        [*score, "--min-isolation", "namspace"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert proc.stderr.splitlines()[-1] == (
        "evalspec score: error: argument --min-isolation: unknown isolation tier "
        "'namspace'; choose one of namespace, uid-drop, rlimits-only"
    )


def test_an_unknown_min_isolation_tier_is_a_usage_error(tmp_path: Path) -> None:
    proc = _run_fixtures(tmp_path, "--allow-code-exec", "--min-isolation", "fortress")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "fortress" in proc.stderr
    assert "Traceback" not in proc.stderr
