"""The habits a ruff / pytest / pre-commit user brings to the command line: ``-`` for
standard input, directories, hints, "did you mean", a bare command, --quiet, colour,
plurals and help on every option. Real subprocesses, as a user runs them."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec import load_fixtures
from evalspec.cli.dispatch import COMMANDS, build_parser

FIXTURES = load_fixtures()
GOOD = FIXTURES.path("tasks.jsonl")
BAD = FIXTURES.path("tasks_bad.jsonl")
PREDICTIONS = FIXTURES.path("predictions.jsonl")
ESC = "\x1b["


def evalspec(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    r = subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        input=stdin,
        capture_output=True,
        env={**base, **(env or {})},
        timeout=120,
    )
    return subprocess.CompletedProcess(
        r.args, r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8")
    )


def _first_lines(n: int) -> bytes:
    return b"".join(GOOD.read_bytes().splitlines(keepends=True)[:n])


# -- standard input ---------------------------------------------------------------


def test_validate_reads_standard_input_for_dash() -> None:
    r = evalspec("validate", "-", stdin=BAD.read_bytes())
    assert r.returncode == 1
    assert "<stdin>:8: unknown_category category" in r.stdout
    assert r.stdout.splitlines()[-1] == "<stdin>: 24 tasks, 1 valid, 23 invalid"
    piped = evalspec("validate", "-", str(GOOD), stdin=_first_lines(1))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.splitlines() == [
        "<stdin>: 1 task, 1 valid, 0 invalid",
        f"{GOOD}: 10 tasks, 10 valid, 0 invalid",
    ]


@pytest.mark.parametrize(
    "args", [["validate", "-"], ["render", "-"], ["score", "-", str(PREDICTIONS)], ["gate", "-"]]
)
def test_a_closed_standard_input_is_an_io_error(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "gates.yaml").write_text("gates:\n  main:\n    exact_match: 0.5\n")
    if args[0] == "gate":
        args = [*args, "--config", "gates.yaml"]
    command = " ".join([sys.executable, "-m", "evalspec", *args])
    r = subprocess.run(
        ["bash", "-c", command + " <&-"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stderr
    assert "cannot read <stdin>: standard input is closed" in r.stderr
    assert "Traceback" not in r.stderr


def test_dash_twice_is_a_usage_error() -> None:
    r = evalspec("validate", "-", "-", stdin=_first_lines(1))
    assert r.returncode == 2
    assert "can be given only once" in r.stderr


def test_render_reads_standard_input() -> None:
    r = evalspec("render", "-", stdin=_first_lines(2))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["task_id"] for row in rows] == ["arith_001", "arith_002"]


def test_score_reads_predictions_or_tasks_from_standard_input(tmp_path: Path) -> None:
    # Without the code_exec tasks: the sandbox is not what this is about.
    lines = GOOD.read_text(encoding="utf-8").splitlines(keepends=True)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(ln for ln in lines if '"code_exec"' not in ln), encoding="utf-8")
    args = ("--format", "json", "--bootstrap", "0")
    via_file = evalspec("score", str(tasks), str(PREDICTIONS), *args)
    via_stdin = evalspec("score", str(tasks), "-", *args, stdin=PREDICTIONS.read_bytes())
    tasks_stdin = evalspec("score", "-", str(PREDICTIONS), *args, stdin=tasks.read_bytes())
    assert via_file.returncode == via_stdin.returncode == tasks_stdin.returncode
    a, b, c = (json.loads(r.stdout) for r in (via_file, via_stdin, tasks_stdin))
    assert len(a["rows"]) == 8
    assert a["rows"] == b["rows"] == c["rows"]
    assert b["provenance"]["predictions_sha256"] == a["provenance"]["predictions_sha256"]
    assert c["dataset"] == "stdin"
    both = evalspec("score", "-", "-", stdin=b"")
    assert both.returncode == 2 and "cannot both be -" in both.stderr


# -- directories ------------------------------------------------------------------


def test_a_directory_stands_for_its_jsonl_files_recursively_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "deep").mkdir(parents=True)
    shutil.copy(GOOD, tmp_path / "b" / "z.jsonl")
    shutil.copy(BAD, tmp_path / "a" / "deep" / "x.jsonl")
    (tmp_path / "a" / "y.jsonl").write_bytes(_first_lines(3))
    (tmp_path / "a" / "notes.txt").write_text("not read")
    r = evalspec("validate", str(tmp_path))
    assert r.returncode == 1
    summaries = [line for line in r.stdout.splitlines() if " valid, " in line]
    assert summaries == [
        f"{tmp_path}/a/deep/x.jsonl: 24 tasks, 1 valid, 23 invalid",
        f"{tmp_path}/a/y.jsonl: 3 tasks, 3 valid, 0 invalid",
        f"{tmp_path}/b/z.jsonl: 10 tasks, 10 valid, 0 invalid",
    ]


def test_a_jsonl_name_below_a_directory_that_is_no_regular_file_is_reported(
    tmp_path: Path,
) -> None:
    # A dangling symlink (a dataset a pull request deleted but left linked), a named
    # pipe (reading it would wait for a writer) and a device were silently skipped:
    # the run said every file was valid and exited 0.
    shutil.copy(GOOD, tmp_path / "a.jsonl")
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "deleted.jsonl")
    os.mkfifo(tmp_path / "pipe.jsonl")
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    r = evalspec("validate", str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert r.stdout == f"{tmp_path}/a.jsonl: 10 tasks, 10 valid, 0 invalid\n"
    assert r.stderr.splitlines() == [
        f"evalspec: error: cannot read {tmp_path}/gone.jsonl: No such file or directory",
        f"evalspec: error: {tmp_path}/pipe.jsonl: not a regular file, not read",
        f"evalspec: error: {tmp_path}/zero.jsonl: not a regular file, not read",
    ]
    rendered = evalspec("render", str(tmp_path))
    assert rendered.returncode == 2 and rendered.stdout == ""


def test_render_takes_directories_and_several_files(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "one.jsonl").write_bytes(_first_lines(1))
    r = evalspec("render", "--format", "json", str(tmp_path / "d"), str(GOOD))
    assert r.returncode == 0, r.stderr
    files = json.loads(r.stdout)["files"]
    assert [f["path"] for f in files] == [str(tmp_path / "d" / "one.jsonl"), str(GOOD)]
    assert [len(f["tasks"]) for f in files] == [1, 10]
    text = evalspec("render", "--format", "text", str(tmp_path / "d"))
    assert text.stdout.startswith(f"==> {tmp_path / 'd' / 'one.jsonl'} arith_001 <==\n")
    assert text.stdout.endswith("Answer:\n")


def test_render_refuses_when_any_file_is_bad_and_says_so_in_the_singular(tmp_path: Path) -> None:
    one_bad = tmp_path / "one_bad.jsonl"
    one_bad.write_bytes(_first_lines(1) + b"{}\n")
    r = evalspec("render", str(GOOD), str(one_bad))
    assert r.returncode == 1 and r.stdout == ""
    assert "refusing to render: 1 of 12 tasks is invalid" in r.stderr
    allowed = evalspec("render", "--allow-bad-tasks", str(one_bad))
    assert allowed.returncode == 0
    assert "rendered 1 task, skipped 1 invalid" in allowed.stderr


# -- hints ------------------------------------------------------------------------


def _tasks() -> list[object]:
    return [json.loads(line) for line in GOOD.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (json.dumps(_tasks(), indent=2), "looks like a JSON array"),
        (json.dumps(_tasks()), "looks like a JSON array"),
        ("\n".join(json.dumps(t, indent=2) for t in _tasks()), "looks like pretty-printed JSON"),
    ],
    ids=["pretty-array", "one-line-array", "pretty-objects"],
)
def test_json_that_is_not_json_lines_gets_one_hint(
    tmp_path: Path, document: str, expected: str
) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(document + "\n", encoding="utf-8")
    for command in ("validate", "render"):
        r = evalspec(command, str(path))
        assert r.returncode == 1
        hints = [line for line in r.stderr.splitlines() if "hint:" in line]
        assert len(hints) == 1, r.stderr
        assert expected in hints[0] and "JSON Lines" in hints[0]


def test_no_hint_for_ordinary_invalid_lines() -> None:
    r = evalspec("validate", str(BAD))
    assert "hint" not in r.stderr + r.stdout


def test_swapped_score_arguments_say_so_in_a_line_or_two() -> None:
    r = evalspec("score", str(PREDICTIONS), str(GOOD))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 2, r.stderr
    assert "look swapped" in lines[0]
    assert lines[1] == f"evalspec: hint: tasks come first: evalspec score {GOOD} {PREDICTIONS}"


@pytest.mark.parametrize("first_line", [b"[" * 100_000, b'{"a":' * 100_000, b"\xff{"])
def test_the_swap_check_survives_hostile_first_lines(tmp_path: Path, first_line: bytes) -> None:
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_bytes(first_line + b"\n")
    for args in ((str(hostile), str(GOOD)), (str(GOOD), str(hostile))):
        r = evalspec("score", *args, "--bootstrap", "0", "--allow-code-exec")
        assert r.returncode in (1, 2)
        assert "Traceback" not in r.stderr and "look swapped" not in r.stderr


# -- parser -----------------------------------------------------------------------


def test_bare_evalspec_lists_every_command() -> None:
    r = evalspec()
    assert r.returncode == 2
    assert r.stdout.startswith("usage: evalspec")
    for name in COMMANDS:
        assert f"\n    {name} " in r.stdout


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["validat", str(GOOD)], "did you mean 'validate'?"),
        (["scroe"], "did you mean 'score'?"),
        (["validate", "--format", "jsn", str(GOOD)], "did you mean 'json'?"),
        (["validate", "--formt", "json", str(GOOD)], "did you mean --format?"),
        (["render", "--alow-bad-tasks", str(GOOD)], "did you mean --allow-bad-tasks?"),
        (["spec", "lst"], "did you mean 'list'?"),
    ],
)
def test_mistypes_get_a_did_you_mean(args: list[str], suggestion: str) -> None:
    r = evalspec(*args)
    assert r.returncode == 2
    assert suggestion in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_an_unknown_flag_shows_the_subcommands_usage() -> None:
    r = evalspec("validate", "--nonsense", str(GOOD))
    assert r.returncode == 2
    assert r.stderr.startswith("usage: evalspec validate ")
    assert "evalspec validate: error: unrecognized arguments: --nonsense" in r.stderr
    nested = evalspec("spec", "list", "--nonsense")
    assert nested.stderr.startswith("usage: evalspec spec list ")


def _options_without_help(
    parser: argparse.ArgumentParser, path: str
) -> list[tuple[str, list[str] | str]]:
    missing: list[tuple[str, list[str] | str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += _options_without_help(sub, f"{path} {name}")
        elif not action.help or action.help == argparse.SUPPRESS:
            missing.append((path, action.option_strings or action.dest))
    return missing


def test_every_option_and_argument_has_help() -> None:
    assert _options_without_help(build_parser(), "evalspec") == []


# -- quiet, colour, plurals -------------------------------------------------------


def test_quiet_prints_only_the_problems() -> None:
    loud = evalspec("validate", str(BAD), str(GOOD))
    quiet = evalspec("validate", "--quiet", str(BAD), str(GOOD))
    assert quiet.returncode == loud.returncode == 1
    problems = [line for line in loud.stdout.splitlines() if " — " in line]
    assert quiet.stdout.splitlines() == problems
    clean = evalspec("validate", "-q", str(GOOD))
    assert clean.returncode == 0 and clean.stdout == ""


def test_one_task_is_singular() -> None:
    r = evalspec("validate", "-", stdin=_first_lines(1))
    assert r.stdout.strip() == "<stdin>: 1 task, 1 valid, 0 invalid"


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ([], {}, False),  # a pipe, not a terminal
        ([], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (["--color", "always"], {"NO_COLOR": "1"}, True),
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour_follows_the_flag_and_the_environment(
    args: list[str], env: dict[str, str], coloured: bool
) -> None:
    r = evalspec("validate", *args, str(BAD), env=env)
    assert r.returncode == 1
    assert (ESC in r.stdout) is coloured
    if coloured:
        assert f"{ESC}31;1munknown_category{ESC}0m" in r.stdout


def test_colour_on_a_real_terminal_unless_no_color(tmp_path: Path) -> None:
    pytest.importorskip("pty")
    out = tmp_path / "out"
    script = (
        "import os, pty, sys\n"
        "argv = [sys.executable, '-m', 'evalspec', 'validate', sys.argv[1]]\n"
        "chunks = []\n"
        "def read(fd):\n"
        "    data = os.read(fd, 65536)\n"
        "    chunks.append(data)\n"
        "    return data\n"
        "pty.spawn(argv, read)\n"
        "open(sys.argv[2], 'wb').write(b''.join(chunks))\n"
    )
    for no_color, coloured in (("", True), ("1", False)):
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        if no_color:
            env["NO_COLOR"] = no_color
        subprocess.run(
            [sys.executable, "-c", script, str(BAD), str(out)],
            env=env,
            timeout=120,
            check=True,
            capture_output=True,
        )
        assert (ESC.encode() in out.read_bytes()) is coloured


def test_a_task_file_a_symlink_sends_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    # A pull request can add datasets/x.jsonl -> /proc/self/environ: each line of it is
    # an invalid task, and --format json printed each line's text, so the CI job's
    # environment (its tokens) went into the log.
    repo = tmp_path / "repo"
    (repo / "datasets").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    shutil.copy(GOOD, repo / "datasets" / "a.jsonl")
    (repo / "datasets" / "env.jsonl").symlink_to("/proc/self/environ")
    outside = tmp_path / "outside.jsonl"
    shutil.copy(GOOD, outside)
    (repo / "datasets" / "shared.jsonl").symlink_to(outside)
    (repo / "datasets" / "inside.jsonl").symlink_to(repo / "datasets" / "a.jsonl")
    env = {"EVALSPEC_AUDIT_SECRET": "hunter2-audit"}
    refused = [
        # /proc/self resolves to the pid of the run
        re.escape("evalspec: error: refusing to read datasets/env.jsonl: it is a symlink to ")
        + r"/proc/\d+/environ"
        + re.escape(f", outside {repo}"),
        re.escape(
            f"evalspec: error: refusing to read datasets/shared.jsonl: it is a symlink to "
            f"{outside}, outside {repo}"
        ),
    ]
    for args in (["datasets"], ["datasets/env.jsonl", "datasets/shared.jsonl"]):
        done = subprocess.run(
            [sys.executable, "-m", "evalspec", "validate", "--format", "json", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env={**os.environ, **env},
        )
        assert done.returncode == 2, done.stderr
        assert "hunter2-audit" not in done.stdout + done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == len(refused)
        assert all(re.fullmatch(want, got) for want, got in zip(refused, lines, strict=True)), lines
    assert [f["path"] for f in json.loads(done.stdout)["files"]] == []
    # A symlink that stays inside, and a file named outside on purpose, are read.
    ok = subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", "datasets/inside.jsonl", str(outside)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
