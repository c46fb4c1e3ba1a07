"""Helpers of the hostile-input tests: the real command in a subprocess, a real git repo."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path


def evalspec(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m evalspec ARGS`` in ``cwd``; never raises on a non-zero exit."""
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def git_repo(path: Path) -> Path:
    """A fresh git repository at ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def signals_at_their_defaults() -> None:
    """``preexec_fn`` for a child that a test will signal: SIGINT and SIGHUP start at
    their defaults, whatever the test runner inherited (``nohup`` ignores SIGHUP, a
    shell's background job SIGINT). evalspec rightly keeps a signal it was started
    with ignored, and the test would wait for an exit that never comes."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def children_of(pid: int) -> list[int]:
    """The process ids of ``pid``'s children, from every thread's list (Linux /proc)."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in children.read_text().split()]
    return found
