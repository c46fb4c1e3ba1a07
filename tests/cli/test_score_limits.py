"""`evalspec score` takes the sandbox's limits as options, records them in the
report's provenance, and every code_exec row carries a one-line failure, in
every format. Real programs, real runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from report_schema import check_report

from evalspec.cli.options import LIMIT_OPTIONS
from evalspec.sandbox import Limits

ADD = "def add(a, b):\n    return a + b\n"
TASKS = [
    ("good", ADD),
    ("wrong", "def add(a, b):\n    return a - b\n"),
    ("sleeps", "import time\ntime.sleep(30)\n" + ADD),
    ("broken", "def add(a, b)\n    return a + b\n"),
]


def _files(tmp_path: Path) -> tuple[Path, Path]:
    tasks = tmp_path / "tasks.jsonl"
    preds = tmp_path / "predictions.jsonl"
    lines = []
    for task_id, _ in TASKS:
        task = {
            "task_id": task_id,
            "category": "code_exec",
            "prompt": f"Write add ({task_id}).",
            "targets": ["assert add(2, 3) == 5"],
            "metric_name": "code_exec",
            "post_process": "none",
        }
        lines.append(json.dumps(task))
    tasks.write_text("\n".join(lines) + "\n")
    preds.write_text(
        "".join(json.dumps({"task_id": t, "output": code}) + "\n" for t, code in TASKS)
    )
    return tasks, preds


def _score(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    tasks, preds = _files(tmp_path)
    return subprocess.run(
        [
            *(sys.executable, "-m", "evalspec", "score", str(tasks), str(preds)),
            *("--allow-code-exec", "--bootstrap", "0", "--jobs", "2", *options),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_limit_has_an_option() -> None:
    assert sorted(f for f, *_ in LIMIT_OPTIONS.values()) == sorted(
        a.name for a in attrs.fields(Limits)
    )


def test_limits_are_applied_recorded_and_every_failure_is_shown(tmp_path: Path) -> None:
    proc = _score(tmp_path, "--timeout", "2", "--memory", "256M", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    check_report(report)
    limits = report["provenance"]["code_exec"]["limits"]
    assert limits == {**attrs.asdict(Limits()), "wall_seconds": 2.0, "memory_bytes": 256 << 20}
    rows = {r["task_id"]: r for r in report["rows"]}
    assert rows["good"]["detail"]["failure"] is None
    assert rows["wrong"]["detail"]["failure"].startswith(
        "fail: test statement 1 of 1 (line 1): AssertionError"
    )
    assert rows["sleeps"]["detail"]["status"] == "timeout"
    assert rows["sleeps"]["detail"]["failure"] == "timeout: wall-clock limit of 2 s exceeded"
    assert "SyntaxError" in rows["broken"]["detail"]["failure"]
    for fmt in ("text", "markdown"):
        shown = _score(tmp_path, "--timeout", "2", "--memory", "256M", "--format", fmt)
        assert shown.returncode == 0, shown.stderr
        for row in rows.values():
            if row["detail"]["failure"]:
                assert row["detail"]["failure"][:60] in shown.stdout, (fmt, row)
        assert "code_exec limits: cpu_seconds 5, wall_seconds 2.0" in shown.stdout


def test_a_machine_failure_finishes_the_report_and_exits_1(tmp_path: Path) -> None:
    # 1 MiB of address space: the sandbox's own trusted processes cannot start.
    out = tmp_path / "report.json"
    proc = _score(tmp_path, "--memory", "1M", "--format", "json", "--output", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "4 tasks had sandbox_error" in proc.stderr
    report = json.loads(out.read_text())
    check_report(report)
    assert report["counts"]["sandbox_errors"] == 4 and report["counts"]["scored"] == 0
    assert all(r["score"] is None for r in report["rows"])
    assert report["aggregates"]["by_metric"]["code_exec"]["count"] == 0


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--memory", "lots"),
        ("--memory", "0"),
        ("--timeout", "0"),
        ("--timeout", "nan"),
        ("--processes", "-1"),
        ("--cpu", "1.5"),
        ("--disk", "2000G"),
    ],
)
def test_a_bad_limit_is_one_line_and_exit_2(tmp_path: Path, option: str, value: str) -> None:
    proc = _score(tmp_path, option, value)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"argument {option}" in proc.stderr
