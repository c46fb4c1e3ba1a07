"""What a warm ``evalspec validate`` of a valid file imports (issue 14, start-up).

With a current registry snapshot the command needs only the snapshot's plain
tables, the line checks and the output: no plugin manager (pluggy), no value
classes (attrs, and the ``inspect`` it imports), no registry or migration
replay, no formatter it was not asked for, no ``typing``. Timing belongs in
``benchmarks/bench.py --startup``; this pins the achievement without a clock:
a module that creeps back onto the warm path fails here.

Each run is a fresh interpreter that records ``sys.modules`` when it exits;
a module counts as imported by evalspec only if the interpreter had not
already loaded it before the command started (site hooks such as an editable
install's finder load some of the standard library on their own).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec.registry import discovery

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "tasks.jsonl"

# What a warm run on a valid file must not import (unless the interpreter already had).
HEAVY = (
    "attr",
    "attrs",
    "pluggy",
    "inspect",
    "typing",
    "importlib.metadata",
    "importlib.resources",
    "hashlib",
    "shutil",
    "difflib",
    "tomllib",
    "tomli",
    "evalspec_plugins",
    "evalspec.model",
    "evalspec.validation.validator",
    "evalspec.registry.build",
    "evalspec.registry.manager",
    "evalspec.hookspecs",
    "evalspec.versions",
    "evalspec.registry.project",
    "evalspec.cli.formats",
    "evalspec.validation.fast",
    "evalspec.validation.shards",
    # The command line is parsed without argparse, the snapshot and the lines are
    # decoded without json (evalspec.io.quickjson), and signals are set without
    # the signal module's enums: with re, gettext and locale, ~10 ms (issue 25).
    "argparse",
    "json",
    "re",
    "enum",
    "signal",
    "gettext",
    "locale",
    "evalspec.cli.parser",
    "evalspec.cli.options",
    # validate lives in evalspec.validation.files: the other library commands (the
    # package's largest module) are not loaded for it.
    "evalspec.command",
)

# Written without json (nor anything else the command must not import): the
# modules the driver imported would count as loaded before the command started.
_DRIVER = """
import atexit, sys
before = sorted(sys.modules)
def record():
    with open({out!r}, "w") as f:
        f.write(" ".join(before) + "\\n" + " ".join(sorted(sys.modules)) + "\\n")
atexit.register(record)
sys.argv = ["evalspec", *{args!r}]
from evalspec.cli.main import run
run()
"""


def _run(
    tmp_path: Path, args: list[str], *, cached: bool = True
) -> tuple[int, str, set[str], set[str]]:
    """Run the command as its entry point does; ``(exit code, stdout, modules the
    command imported, modules loaded before it started)``."""
    work = tmp_path / "work"  # a directory nothing else writes to (it is on sys.path)
    work.mkdir(exist_ok=True)
    out = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != discovery.NO_CACHE_ENV}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    if not cached:
        env[discovery.NO_CACHE_ENV] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER.format(out=str(out), args=args)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    first, after = out.read_text().splitlines()
    before = set(first.split())
    return proc.returncode, proc.stdout, set(after.split()) - before, before


def _heavy(imported: set[str], before: set[str]) -> list[str]:
    return sorted(m for m in HEAVY if m in imported and m not in before)


def test_a_warm_validate_of_a_valid_file_imports_nothing_heavy(tmp_path: Path) -> None:
    args = ["validate", str(FIXTURE)]
    cold_code, cold_out, cold, before = _run(tmp_path, args)
    assert cold_code == 0
    assert cold_out.endswith("10 tasks, 10 valid, 0 invalid\n")
    # The first run builds the registry (and shows the check can fail): it loads
    # the plugins through pluggy, and the value classes with attrs.
    assert {"pluggy", "attr", "evalspec.registry.build", "evalspec_plugins"} <= cold
    assert (tmp_path / "cache" / "evalspec").is_dir()

    warm_code, warm_out, warm, before = _run(tmp_path, args)
    assert (warm_code, warm_out) == (cold_code, cold_out)
    assert "evalspec.registry.snapshot" in warm  # the warm path read the snapshot ...
    assert _heavy(warm, before) == []  # ... and nothing else it does not need


def test_without_the_snapshot_the_same_run_builds_the_registry(tmp_path: Path) -> None:
    code, _, imported, before = _run(tmp_path, ["validate", str(FIXTURE)], cached=False)
    assert code == 0
    assert "pluggy" in _heavy(imported, before)
    assert "evalspec.registry.build" in _heavy(imported, before)


def test_a_warm_validate_of_an_invalid_file_reports_as_the_cold_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join([lines[0], b'{"task_id": 1}\n', lines[0], b"nope\n"]))
    args = ["validate", str(bad)]
    cold = _run(tmp_path, args)
    warm = _run(tmp_path, args)
    uncached = _run(tmp_path, args, cached=False)
    assert cold[:2] == warm[:2] == uncached[:2]
    assert warm[0] == 1
    assert "duplicate_task_id" in warm[1] and "invalid_json" in warm[1]
    # An error needs the value classes: they are imported then, not before.
    assert "evalspec.model" in warm[2]
    assert "pluggy" not in warm[2]


@pytest.mark.parametrize("fmt", ["json", "github", "sarif", "junit"])
def test_a_warm_run_imports_the_formatter_it_was_asked_for(tmp_path: Path, fmt: str) -> None:
    args = ["validate", "--format", fmt, str(FIXTURE)]
    _run(tmp_path, args)  # build the snapshot
    code, out, warm, before = _run(tmp_path, args)
    uncached = _run(tmp_path, args, cached=False)
    assert (code, out) == uncached[:2]
    assert code == 0
    assert ("evalspec.cli.formats" in warm) == (fmt != "json")
    # The value classes (attrs) come with the report; the registry does not.
    assert "pluggy" not in _heavy(warm, before)
    assert "evalspec.registry.build" not in _heavy(warm, before)


@pytest.mark.parametrize(
    "words",
    [
        ["validate", "a.jsonl"],
        ["validate", "a.jsonl", "dir", "s3://bucket/evals/*.jsonl", "with space.jsonl"],
        ["validate", "validate"],
    ],
)
def test_the_quick_parse_is_argparses(words: list[str]) -> None:
    from evalspec.cli.commands.validate import quick_args
    from evalspec.cli.dispatch import build_parser

    quick = quick_args(words)
    assert quick is not None
    args, extras = build_parser("validate").parse_known_args(words)
    assert extras == []
    assert vars(quick) == vars(args)


@pytest.mark.parametrize(
    "words",
    [
        ["validate"],
        ["validate", "-"],
        ["validate", "a.jsonl", "--quiet"],
        ["validate", "--format", "json", "a.jsonl"],
        ["validate", "a.jsonl", "-j2"],
        ["validate", "a.jsonl", ""],
        ["validate", "--", "a.jsonl"],
        ["validate", "--help"],
        ["render", "a.jsonl"],
    ],
)
def test_any_other_command_line_is_left_to_argparse(words: list[str]) -> None:
    from evalspec.cli.commands.validate import quick_args

    assert quick_args(words) is None


def test_the_quick_parse_answers_as_argparse_does(tmp_path: Path) -> None:
    # The same run parsed both ways (`--color auto` is the default, and sends the
    # command line to argparse) prints the same bytes, valid file or not.
    bad = tmp_path / "bad.jsonl"
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join([lines[0], b'{"task_id": 1}\n', lines[0], b"nope\n"]))
    for path in (str(FIXTURE), str(bad)):
        quick = _run(tmp_path, ["validate", path])
        parsed = _run(tmp_path, ["validate", "--color", "auto", path])
        assert quick[:2] == parsed[:2]
        assert "argparse" not in quick[2] and "argparse" in parsed[2]
