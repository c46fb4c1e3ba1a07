"""The harness side of the verdict protocol: reading the driver's status lines, and the
one count of a uid's tasks that the harness and the in-sandbox driver share."""

from __future__ import annotations

import ast
import os
import sys
import threading
from pathlib import Path

import evalspec.sandbox.driver as driver
import evalspec.sandbox.process as process
from evalspec.sandbox.verdict import STATUS_CAP, StatusLines

NONCE = "n0nce"


def _read(*chunks: bytes) -> StatusLines:
    status = StatusLines(NONCE)
    for chunk in chunks:
        status.feed(chunk)
    return status


def test_a_run_that_held_reads_as_finished_with_its_codes_and_cpu() -> None:
    status = _read(b"R\nP " + NONCE.encode() + b"\nW 0 alive 0.25 0.5\n")
    assert status.ready and status.finished
    assert (status.test_code, status.program_code, status.exit_code) == (0, None, 0)
    assert status.cpu == 0.75


def test_lines_split_across_reads_are_joined() -> None:
    status = _read(b"R\nP ", NONCE.encode(), b"\nW 1 ", b"3 0 0\n")
    assert status.finished
    assert (status.test_code, status.program_code) == (1, 3)


def test_a_pass_line_with_another_nonce_or_before_ready_is_not_a_pass() -> None:
    assert not _read(b"R\nP forged\n").finished
    assert not _read(b"P " + NONCE.encode() + b"\nR\n").finished


def test_the_first_failure_is_kept_and_setup_errors_only_count_before_ready() -> None:
    status = _read(b"S no fork\nR\nF first\nF second\nS late\n")
    assert (status.setup_error, status.failure) == ("no fork", "first")


def test_the_program_ending_first_gives_its_exit_code() -> None:
    status = _read(b"R\nG\nW 1 7 0 0\n")
    assert status.exit_code == 7


def test_a_malformed_wait_line_leaves_no_codes() -> None:
    status = _read(b"R\nW 0 x\n")
    assert (status.test_code, status.program_code, status.cpu) == (None, None, None)


def test_a_flood_past_the_cap_is_not_parsed() -> None:
    status = _read(b"R\n", b"x" * STATUS_CAP, b"\nP " + NONCE.encode() + b"\n")
    assert status.ready and not status.finished


def test_the_harness_counts_tasks_with_the_drivers_function() -> None:
    assert process.tasks_of is driver.tasks_of
    started = threading.Event()
    done = threading.Event()
    thread = threading.Thread(target=lambda: (started.set(), done.wait()))
    thread.start()
    started.wait()
    try:
        # This process's threads are all tasks of this uid (others may come and go).
        assert driver.tasks_of(os.getuid()) >= threading.active_count() >= 2
        assert driver.tasks_of(-5) == 0  # no process has that uid
    finally:
        done.set()
        thread.join()


def test_the_driver_imports_the_standard_library_only() -> None:
    # It runs in an interpreter that may not see evalspec (see its docstring).
    tree = ast.parse(Path(driver.__file__).read_text("utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and not node.level
    }
    assert not any(node.level for node in ast.walk(tree) if isinstance(node, ast.ImportFrom))
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
