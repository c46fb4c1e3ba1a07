"""The command line, run as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec import load_fixtures
from evalspec.rules import RULES

FIXTURES = load_fixtures()
GOOD = FIXTURES.path("tasks.jsonl")
BAD = FIXTURES.path("tasks_bad.jsonl")


def evalspec(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_validate_good_fixture_exits_0() -> None:
    r = evalspec("validate", str(GOOD))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("10 tasks, 10 valid, 0 invalid")


def test_validate_bad_fixture_lists_one_error_per_rule() -> None:
    r = evalspec("validate", str(BAD))
    assert r.returncode == 1
    lines = [ln for ln in r.stdout.splitlines() if ": " in ln and " — " in ln]
    assert len(lines) == len(RULES)
    assert lines[0].startswith(f"{BAD}:1: invalid_json — ")
    assert f"{BAD}:8: unknown_category category — " in r.stdout
    assert "Traceback" not in r.stderr


def test_validate_json_output() -> None:
    r = evalspec("validate", "--format", "json", str(GOOD), str(BAD))
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    good, bad = doc["files"]
    assert (good["total"], good["valid"], good["invalid"], good["errors"]) == (10, 10, 0, [])
    assert bad["total"] == bad["valid"] + bad["invalid"] == 24
    assert {e["rule"] for e in bad["errors"]} == set(RULES)
    assert set(bad["errors"][0]) == {"line", "rule", "field", "message", "task_id", "text"}


def test_missing_file_is_exit_2_and_others_are_still_validated(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    r = evalspec("validate", str(missing), str(GOOD))
    assert r.returncode == 2
    assert r.stderr.strip() == f"evalspec: error: cannot read {missing}: No such file or directory"
    assert "10 tasks, 10 valid" in r.stdout
    j = evalspec("validate", "--format", "json", str(missing), str(BAD))
    assert j.returncode == 2
    files = json.loads(j.stdout)["files"]
    assert files[0] == {"path": str(missing), "error": "cannot read: No such file or directory"}
    assert files[1]["invalid"] == len(RULES)


def test_a_directory_without_task_files_is_an_io_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a task file\n")
    r = evalspec("validate", str(tmp_path))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == f"evalspec: error: {tmp_path}: directory holds no *.jsonl file"


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["validate"],
        ["validate", "--format", "xml", "x"],
        ["nonsense"],
        ["validate", "--spec-version", "x", "f"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    r = evalspec(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_unknown_spec_version_exits_2_with_a_message() -> None:
    r = evalspec("validate", "--spec-version", "99", str(GOOD))
    assert r.returncode == 2
    assert "unknown spec version 99" in r.stderr
    assert "Traceback" not in r.stderr


def test_hostile_file_never_tracebacks(tmp_path: Path) -> None:
    p = tmp_path / "hostile.jsonl"
    p.write_bytes(
        b"\xef\xbb\xbf" + GOOD.read_bytes().splitlines()[0] + b"\r\n"
        + b"\xff\xfe\n" + b"[" * 100_000 + b"\n" + b'{"a": "\\ud800"}\n' + b"\x00\n"
        + b'{"task_id": "\\ud800x"}'
    )  # fmt: skip
    r = evalspec("validate", "--format", "json", str(p))
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)["files"]
    assert (f["total"], f["valid"], f["invalid"]) == (6, 1, 5)
    t = evalspec("validate", str(p))
    assert t.returncode == 1 and "Traceback" not in t.stderr


def test_render_prints_rendered_prompts() -> None:
    r = evalspec("render", str(GOOD))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["task_id"] for row in rows] == [t.task_id for t in FIXTURES.tasks]
    assert rows[0]["prompt"] == (
        "Question: 2 + 2\nAnswer: 4\n\nCompute the result. Question: 17 + 24\nAnswer:"
    )


def test_render_refuses_bad_tasks_unless_allowed() -> None:
    r = evalspec("render", str(BAD))
    assert r.returncode == 1
    assert r.stdout == ""
    assert "refusing to render" in r.stderr and "--allow-bad-tasks" in r.stderr
    assert r.stderr.count(" — ") == len(RULES)
    ok = evalspec("render", "--allow-bad-tasks", str(BAD))
    assert ok.returncode == 0
    assert [json.loads(x)["task_id"] for x in ok.stdout.splitlines()] == ["dup_001"]
    assert ok.stderr.count(" — ") == len(RULES)


def test_console_script_matches_python_m() -> None:
    exe = Path(sys.executable).with_name("evalspec")
    r = subprocess.run([str(exe), "validate", str(GOOD)], capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout == evalspec("validate", str(GOOD)).stdout


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "{good}"],
        ["render", "{good}"],
        ["schema"],
        ["lint"],
        ["spec", "list"],
        ["score", "{good}", "{predictions}"],
        ["gate", "{good}"],
        ["manifest", "verify"],
    ],
)
def test_a_deleted_current_directory_is_one_line_not_a_traceback(
    args: list[str], tmp_path: Path
) -> None:
    names = {"good": str(GOOD), "predictions": str(FIXTURES.path("predictions.jsonl"))}
    gone = tmp_path / "gone"
    shell = 'mkdir "$0" && cd "$0" && rmdir "$0" && exec "$@"'
    command = [sys.executable, "-m", "evalspec", *(a.format(**names) for a in args)]
    done = subprocess.run(
        ["sh", "-c", shell, str(gone), *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "evalspec: error: cannot use the current directory: No such file or directory\n"
    )


def test_control_characters_in_a_field_or_path_cannot_forge_output_lines(tmp_path: Path) -> None:
    # A JSON key is the field of its unknown_field error: "\r", ESC[2K (erase the line)
    # and "\n" printed raw let a task file print a fake all-valid summary over its own
    # error on a terminal, and split one problem over several lines.
    forged = "\r\x1b[2Kfixtures/tasks.jsonl: 10 tasks, 10 valid, 0 invalid\n\x1b[8m"
    task = json.loads(GOOD.read_text().splitlines()[0])
    odd = tmp_path / "odd\nname.jsonl"
    odd.write_text(json.dumps({**task, forged: 1}) + "\n")
    for fmt in ("text", "github"):
        done = evalspec("validate", "--format", fmt, str(odd))
        assert done.returncode == 1
        assert "\r" not in done.stdout and "\x1b" not in done.stdout
        lines = done.stdout.splitlines()
        assert len(lines) == (2 if fmt == "text" else 1), lines
        assert json.dumps(forged) in lines[0]
    text = evalspec("validate", "--format", "text", str(odd)).stdout.splitlines()
    assert text[0].startswith(json.dumps(str(odd)) + ":1: unknown_field ")
    assert text[1] == f"{json.dumps(str(odd))}: 1 task, 0 valid, 1 invalid"
    # A printable field or path is shown as it is.
    plain = evalspec("validate", str(BAD)).stdout.splitlines()
    assert plain[-1] == f"{BAD}: 24 tasks, 1 valid, 23 invalid"


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "{bad}"],
        ["validate", "--jobs", "2", "{bad}"],
        ["render", "{bad}"],
        ["diff", "{bad}", "{good}"],
        ["score", "{good}", "{bad}"],
    ],
)
def test_a_file_name_that_cannot_be_read_cannot_forge_error_lines(
    args: list[str], tmp_path: Path
) -> None:
    # The "cannot read NAME" line goes to CI logs: a name holding a line break could
    # add a line of its own choosing there.
    bad = str(tmp_path / "missing\nfixtures/tasks.jsonl: 10 tasks, 10 valid, 0 invalid")
    done = evalspec(*(a.format(bad=bad, good=GOOD) for a in args))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert json.dumps(bad) in done.stderr


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_short_and_long_version_flags_print_the_version(flag: str) -> None:
    import evalspec as package

    r = evalspec(flag)
    assert r.returncode == 0, r.stderr
    # Then whether the validator's compiled core is in use (tests/validation/test_ccore.py).
    assert r.stdout.startswith(f"evalspec {package.__version__} (compiled core "), r.stdout
    assert r.stdout.count("\n") == 1
