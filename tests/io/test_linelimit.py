"""Bounded resources: the line length limit, the --bootstrap ceiling."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec import validate_file
from evalspec.cli.commands.score import MAX_BOOTSTRAP
from evalspec.io.linelimit import DEFAULT_MAX_LINE_BYTES, MAX_LINE_ENV, max_line_bytes
from evalspec.scoring.predictions import read_predictions
from evalspec.validation.engine import iter_problems

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
COMMAND = [sys.executable, "-m", "evalspec"]


def _valid_line(task_id: str) -> bytes:
    task = json.loads((FIXTURES / "tasks.jsonl").read_text().splitlines()[0])
    return (json.dumps({**task, "task_id": task_id}) + "\n").encode()


def test_the_default_is_documented_and_above_the_50_mb_lines_tests_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MAX_LINE_ENV, raising=False)
    assert max_line_bytes() == DEFAULT_MAX_LINE_BYTES == 64 << 20
    monkeypatch.setenv(MAX_LINE_ENV, "1000")
    assert max_line_bytes() == 1000
    monkeypatch.setenv(MAX_LINE_ENV, "nonsense")
    assert max_line_bytes() == DEFAULT_MAX_LINE_BYTES


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv(MAX_LINE_ENV, "2000")
    return 2000


def _overlong_file(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_valid_line("a") + b"[" + b" " * 5000 + b"]\n" + _valid_line("b"))
    return path


def test_an_overlong_line_is_invalid_json_and_ends_the_file(
    tmp_path: Path, small_limit: int
) -> None:
    path = _overlong_file(tmp_path)
    for result in (validate_file(path), validate_file(io.BytesIO(path.read_bytes()))):
        assert (result.total, result.invalid) == (2, 1)
        (error,) = result.errors
        assert (error.line, error.rule) == (2, "invalid_json")
        assert f"longer than the maximum of {small_limit} bytes" in error.message
    errors = [e for r in iter_problems(str(path), jobs=1) for e in r.errors]
    assert [(e.line, e.rule) for e in errors] == [(2, "invalid_json")]


def test_an_overlong_prediction_is_invalid_json(tmp_path: Path, small_limit: int) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"task_id": "a", "output": "' + b"x" * 5000 + b'"}\n')
    got = read_predictions(path, ["a"])
    assert [p.rule for p in got.problems] == ["invalid_json"]


def test_the_command_reports_an_overlong_line(tmp_path: Path, small_limit: int) -> None:
    path = _overlong_file(tmp_path)
    env = {MAX_LINE_ENV: "2000"}
    done = subprocess.run(
        [*COMMAND, "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
    )
    assert done.returncode == 1
    assert f"{path}:2: invalid_json — the line is longer than the maximum" in done.stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_validate_dev_zero_ends_with_an_error_in_bounded_memory(jobs: str) -> None:
    measure = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(p.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, *COMMAND, "validate", "--jobs", jobs, "/dev/zero"],
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    first, *rest = done.stdout.splitlines()
    code, peak_kib = map(int, first.split())
    assert code == 1
    assert "/dev/zero:1: invalid_json" in "\n".join(rest)
    assert peak_kib < 4 * DEFAULT_MAX_LINE_BYTES // 1024  # the limit, a block, the interpreter


def test_bootstrap_has_a_ceiling(tmp_path: Path) -> None:
    tasks, preds = tmp_path / "t.jsonl", tmp_path / "p.jsonl"
    tasks.write_bytes(_valid_line("a"))
    preds.write_text('{"task_id": "a", "output": "x"}\n')
    for n in ("1000000000", str(MAX_BOOTSTRAP + 1), "-1", "1" * 5000):
        done = subprocess.run(
            [*COMMAND, "score", str(tasks), str(preds), "--bootstrap", n],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert "--bootstrap" in done.stderr and "Traceback" not in done.stderr
    ok = subprocess.run(
        [*COMMAND, "score", str(tasks), str(preds), "--bootstrap", str(MAX_BOOTSTRAP // 100)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ok.returncode in (0, 1), ok.stderr


def test_score_of_dev_zero_ends_with_an_error(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"task_id": "a", "output": "x"}\n')
    done = subprocess.run(
        [*COMMAND, "score", "/dev/zero", str(preds)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, MAX_LINE_ENV: "100000"},
    )
    assert done.returncode == 2
    assert "/dev/zero: the line is longer than the maximum of 100000 bytes" in done.stderr


def _at_most_1_gib() -> None:
    # A run that ignores the limit then fails fast (MemoryError) instead of taking the
    # machine's memory: the test is about the limit being applied, not about the OOM killer.
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("path", ["/dev/zero", "-"])
def test_render_of_dev_zero_ends_with_an_error(path: str) -> None:
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run(
            [*COMMAND, "render", path],
            stdin=zero,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env={**os.environ, MAX_LINE_ENV: "100000"},
            preexec_fn=_at_most_1_gib,
        )
    shown = "/dev/zero" if path != "-" else "<stdin>"
    assert done.returncode == 1, done.stderr
    assert f"{shown}:1: invalid_json — the line is longer than the maximum of 100000" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr and done.stdout == ""
