"""``evalspec score`` end to end, through real subprocesses (evalspec/cli/commands/score.py)."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from report_schema import check_report

from evalspec.validation.fixtures import fixture_dir

FIXTURES = fixture_dir()


def lines_without_code(name: str) -> bytes:
    """A bundled fixture file without its code_exec lines (those need the sandbox)."""
    kept = [
        line
        for line in FIXTURES.joinpath(name).read_bytes().splitlines(keepends=True)
        if b'"code_' not in line
    ]
    return b"".join(kept)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    tasks = tmp_path / "mini.jsonl"
    preds = tmp_path / "preds.jsonl"
    tasks.write_bytes(lines_without_code("tasks.jsonl"))
    preds.write_bytes(lines_without_code("predictions.jsonl"))
    return tasks, preds


def run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "score", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        check=False,
    )


def test_clean_run_exits_zero_with_a_text_report(files: tuple[Path, Path]) -> None:
    proc = run(*files)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("dataset mini: 8 tasks, 7 scored, 1 missing")
    assert "cls_002" in proc.stdout
    assert proc.stderr == ""  # stderr is a pipe here: no progress


def test_json_report_follows_the_schema_and_hashes_the_inputs(files: tuple[Path, Path]) -> None:
    tasks, preds = files
    proc = run(tasks, preds, "--format", "json", "--seed", "5", "--dataset", "demo")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    check_report(report)
    prov = report["provenance"]
    assert prov["tasks_sha256"] == hashlib.sha256(tasks.read_bytes()).hexdigest()
    assert prov["predictions_sha256"] == hashlib.sha256(preds.read_bytes()).hexdigest()
    assert prov["seed"] == 5
    assert report["dataset"] == "demo"
    assert report["counts"]["missing"] == 1
    assert report["unparsed"]["mcq"] == {"extract_letter": 1}


def test_output_file_and_markdown(files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    proc = run(*files, "--format", "markdown", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert out.read_text(encoding="utf-8").startswith("# Score report: mini")


def test_json_is_byte_identical_across_hash_seeds(files: tuple[Path, Path]) -> None:
    outputs = set()
    for seed in ("0", "1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = run(*files, "--format", "json", env=env)
        assert proc.returncode == 0, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_invalid_tasks_are_refused_with_every_error_listed(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text("")
    bad = FIXTURES.joinpath("tasks_bad.jsonl")
    tasks = tmp_path / "bad.jsonl"
    tasks.write_bytes(bad.read_bytes())
    proc = run(tasks, preds)
    assert proc.returncode == 1
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith(f"{tasks}:")]
    assert len(errors) >= 20
    assert "refusing to score" in proc.stderr
    assert "--allow-bad-tasks" in proc.stderr


def test_allow_bad_tasks_scores_the_valid_ones(files: tuple[Path, Path], tmp_path: Path) -> None:
    tasks, preds = files
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(tasks.read_bytes() + b'{"task_id": "broken"}\n{not json\n')
    with preds.open("ab") as f:
        f.write(b'{"task_id": "broken", "output": "x"}\n')
    refused = run(mixed, preds)
    assert refused.returncode == 1
    proc = run(mixed, preds, "--allow-bad-tasks", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    check_report(report)
    assert report["counts"]["invalid_tasks"] == 2
    assert report["counts"]["tasks"] == 8
    # A prediction for a rejected task is not a problem of the predictions file.
    assert report["counts"]["invalid_predictions"] == 0
    assert any("invalid tasks" in note for note in report["notes"])


def test_prediction_problems_are_reported_by_line_and_exit_one(
    files: tuple[Path, Path],
) -> None:
    tasks, preds = files
    with preds.open("ab") as f:
        f.write(b"{oops\n")
        f.write(b'{"task_id": "nope", "output": "x"}\n')
        f.write(b'{"task_id": "arith_001", "output": "42"}\n')
    base = len(lines_without_code("predictions.jsonl").splitlines())
    proc = run(tasks, preds, "--format", "json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    check_report(report)
    assert [(p["line"], p["rule"]) for p in report["prediction_problems"]] == [
        (base + 1, "invalid_json"),
        (base + 2, "unknown_task"),
        (base + 3, "duplicate_task_id"),
    ]
    assert report["counts"]["invalid_predictions"] == 3
    # The first prediction of arith_001 is the one scored.
    row = next(r for r in report["rows"] if r["task_id"] == "arith_001")
    assert row["score"] == 1.0
    for line in (base + 1, base + 2, base + 3):
        assert f"{preds}:{line}: " in proc.stderr


def test_code_exec_is_refused_without_opt_in(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    preds = tmp_path / "preds.jsonl"
    tasks.write_bytes(FIXTURES.joinpath("tasks.jsonl").read_bytes())
    preds.write_bytes(FIXTURES.joinpath("predictions.jsonl").read_bytes())
    proc = run(tasks, preds)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "2 tasks use a metric that executes the model's output as code" in proc.stderr
    assert "--allow-code-exec" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [["--jobs", "0"], ["--bootstrap", "-1"], ["--format", "yaml"], ["--spec-version", "99"]],
)
def test_bad_arguments_are_usage_errors(files: tuple[Path, Path], args: list[str]) -> None:
    proc = run(*files, *args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_unreadable_input_and_unwritable_output_exit_two(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks, preds = files
    proc = run(tmp_path / "absent.jsonl", preds)
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr
    proc = run(tasks, preds, "--output", tmp_path / "no" / "such" / "dir" / "r.json")
    assert proc.returncode == 2
    assert "cannot write" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_progress_goes_to_stderr_only_when_it_is_a_terminal(files: tuple[Path, Path]) -> None:
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "evalspec", "score", *map(str, files), "--format", "json"],
            stdout=subprocess.PIPE,
            stderr=slave,
            check=False,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert "evalspec: scored 8/8" in b"".join(chunks).decode()
    json.loads(proc.stdout)  # progress never reaches stdout


def test_an_empty_tasks_file_is_a_problem_with_null_figures(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    proc = run(empty, empty, "--format", "json")
    assert proc.returncode == 1
    assert "no valid task" in proc.stderr
    report = json.loads(proc.stdout)
    check_report(report)
    assert report["counts"]["tasks"] == 0
    assert report["corpus"] == {"bleu_4": None}
