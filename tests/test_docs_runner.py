"""The docs runner itself: each rule of docs/contributing.md, on small made-up documents."""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from docs_blocks import ROOT, console_sessions, output_matches, run_document

FENCE = "```"


def _run(tmp_path: Path, markdown: str) -> list[str]:
    doc = tmp_path / "doc.md"
    doc.write_text(markdown, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    shutil.copy(ROOT / "fixtures" / "tasks.jsonl", work / "tasks.jsonl")
    return run_document(doc, work)


def block(language: str, body: str, marker: str | None = None) -> str:
    head = f"{marker}\n" if marker is not None else ""
    return f"{head}{FENCE}{language}\n{body}\n{FENCE}\n\n"


def test_python_blocks_share_one_namespace_in_order(tmp_path: Path) -> None:
    doc = block("python", "x = 20") + block("python", "print(x + 22)  # prints: 42")
    assert _run(tmp_path, doc) == []


def test_a_python_block_that_raises_or_prints_otherwise_fails(tmp_path: Path) -> None:
    failures = _run(tmp_path, block("python", "1 / 0") + block("python", "print(1)  # prints: 2"))
    assert len(failures) == 2
    assert failures[0].startswith("doc.md:1 (python): ZeroDivisionError")
    assert "printed ['1']" in failures[1] and "say ['2']" in failures[1]


def test_pycon_blocks_are_doctests_in_the_same_namespace(tmp_path: Path) -> None:
    doc = block("py", "n = 6") + block("pycon", ">>> n * 7\n42")
    assert _run(tmp_path, doc) == []
    failures = _run(tmp_path, block("pycon", ">>> 6 * 7\n41"))
    assert len(failures) == 1 and "Expected:" in failures[0]


def test_a_block_that_exits_is_reported_not_fatal(tmp_path: Path) -> None:
    failures = _run(tmp_path, block("python", "raise SystemExit(3)") + block("text", "x"))
    assert len(failures) == 1 and "SystemExit" in failures[0]


def test_sh_blocks_run_with_set_e_in_the_scratch_copy(tmp_path: Path) -> None:
    ok = block("sh", "evalspec validate tasks.jsonl\ntest -f tasks.jsonl")
    assert _run(tmp_path, ok) == []
    failures = _run(tmp_path, block("sh", "false\ntrue"))
    assert len(failures) == 1 and "exit status 1, expected 0" in failures[0]


def test_blocks_write_outside_the_repository_under_their_own_tmpdir(tmp_path: Path) -> None:
    # Documents run at once (xdist workers, two suites on one machine) must not meet
    # in a fixed /tmp path: the runner gives each its own TMPDIR.
    doc = tmp_path / "doc.md"
    doc.write_text(block("sh", 'echo here > "${TMPDIR:-/tmp}/marker"'), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    assert run_document(doc, work, tmp_path / "tmp") == []
    assert (tmp_path / "tmp" / "marker").read_text() == "here\n"


def test_an_exit_marker_states_the_expected_status(tmp_path: Path) -> None:
    bad = "echo '{\"task_id\": 1}' | evalspec validate -"
    assert _run(tmp_path, block("sh", bad, "<!-- docs: exit 1 -->")) == []
    failures = _run(tmp_path, block("sh", "true", "<!-- docs: exit 1 -->"))
    assert len(failures) == 1 and "exit status 0, expected 1" in failures[0]


def test_console_blocks_check_their_output(tmp_path: Path) -> None:
    good = (
        "$ evalspec validate tasks.jsonl\ntasks.jsonl: 10 tasks, 10 valid, 0 invalid\n"
        "$ echo a; echo b\na\n..."
    )
    assert _run(tmp_path, block("console", good)) == []
    wrong = "$ evalspec validate tasks.jsonl\ntasks.jsonl: 9 tasks"
    failures = _run(tmp_path, block("console", wrong))
    assert len(failures) == 1 and "the block shows" in failures[0]


@pytest.mark.parametrize(
    ("language", "body"),
    [
        ("json", '{"a": 1,}'),
        ("jsonl", '{"a": 1}\n{"a": '),
        ("toml", "[x\ny = 1"),
        ("yaml", "a: [1, 2"),
        ("ini", "[pytest]\nevalspec_spec_version = 1   # optional"),
        ("markdown", "---\n- a list\n---\nprose"),
    ],
)
def test_data_blocks_must_parse(tmp_path: Path, language: str, body: str) -> None:
    failures = _run(tmp_path, block(language, body))
    assert len(failures) == 1, failures
    assert f"doc.md:1 ({language})" in failures[0]


def test_text_and_skipped_blocks_do_not_run(tmp_path: Path) -> None:
    doc = block("text", "anything at all") + block(
        "sh", "exit 3", "<!-- docs: skip (needs a cluster) -->"
    )
    assert _run(tmp_path, doc) == []


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (block("", "no language"), "without a language"),
        (block("rust", "fn main() {}"), "'rust' is neither run nor marked"),
        (block("sh", "exit 3", "<!-- docs: skip -->"), "needs its reason"),
        (block("sh", "exit 3", "<!-- docs: skip () -->"), "needs its reason"),
        (block("sh", "exit 3", "<!-- docs: exit one -->"), "needs a status"),
        (block("python", "pass", "<!-- docs: exit 1 -->"), "belongs before a sh"),
        (block("sh", "true", "<!-- docs: skipp (x) -->"), "unknown marker"),
    ],
)
def test_malformed_blocks_are_reported(tmp_path: Path, doc: str, message: str) -> None:
    failures = _run(tmp_path, doc)
    assert len(failures) == 1 and message in failures[0], failures


def test_a_marker_only_counts_on_the_line_right_before_the_fence(tmp_path: Path) -> None:
    doc = "<!-- docs: skip (too far away) -->\n\n" + block("sh", "exit 3")
    failures = _run(tmp_path, doc)
    assert len(failures) == 1 and "exit status 3" in failures[0]


def test_console_sessions_and_output_matching() -> None:
    sessions = list(console_sessions("$ a \\\n  --b\nout\n$ c\n"))
    assert sessions == [("a \\\n  --b", ["out"]), ("c", [])]
    assert output_matches("x\ny\nz\n", ["x", "...", "z"])
    assert not output_matches("x\ny\n", ["x"])


def test_readme_test_command_is_what_ci_runs() -> None:
    """The README's second line is .ci/run's quick step, word for word: the editable
    install (it builds the compiled core where `python -m pytest` imports it from)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    second = readme.split("```sh\n", 1)[1].splitlines()[1]
    assert second == "pip install -e '.[test]' && python -m pytest"
    install, run = second.split(" && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert install in ci and run in ci
    assert ci.index(install) < ci.index("export EVALSPEC_REQUIRE_CCORE=1") < ci.index(run)


@pytest.mark.slow
def test_readme_first_command_in_a_fresh_venv(tmp_path: Path) -> None:
    """The README's first line, as a newcomer runs it: a fresh venv, `pip install .`
    (not editable) from a copy of the checkout, then `evalspec validate`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("```sh\n", 1)[1].splitlines()[0]
    assert first == "pip install . && evalspec validate fixtures/tasks.jsonl"
    copy = tmp_path / "evalspec"
    shutil.copytree(
        ROOT,
        copy,
        # As a fresh clone has it: without the core an editable install built in place.
        ignore=shutil.ignore_patterns(".git", "*.egg-info", "__pycache__", ".*cache", "*.so"),
    )
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = str(env_dir / "bin") + os.pathsep + env["PATH"]
    r = subprocess.run(
        ["bash", "-e", "-c", first.replace("pip install", "pip install -q", 1)],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "fixtures/tasks.jsonl: 10 tasks, 10 valid, 0 invalid"
