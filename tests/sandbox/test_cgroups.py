"""Stale run groups are judged by a lock, not by a pid (evalspec.sandbox.cgroups).

A harness holds an exclusive flock on each of its run groups while it lives:
a group it cannot lock belongs to a live harness, in whatever pid namespace,
and is never swept; one it can lock belongs to a dead one, and the next run of
any live harness empties and removes it. Real cgroups, real processes, real
pid namespaces (``unshare``), and real sandbox runs at every tier offered.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.sandbox import cgroups

HIERARCHIES = cgroups.hierarchies()
pytestmark = pytest.mark.skipif(not HIERARCHIES, reason="no writable cgroup here")
AVAILABLE = available_tiers()
SOLUTION = "def add(a, b):\n    return a + b\n"
TEST = "assert add(2, 3) == 5\n"
WAIT = 20.0


def _procs(directory: str) -> list[int]:
    try:
        return [int(p) for p in Path(directory, "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {WAIT} s: {what}")


def _one_run() -> None:
    """A real run of this (live, long-running) harness: it sweeps before it starts."""
    result = sandbox_at(AVAILABLE[0]).run(SOLUTION, TEST)
    assert result.status == "pass", result


@pytest.fixture
def locked_group() -> Iterator[tuple[str, list[int]]]:
    """A group as a live harness holds it: made, locked, a process inside."""
    parent = HIERARCHIES[0].directory
    directory = os.path.join(parent, f"run-test-{os.getpid()}-{time.monotonic_ns()}")
    os.mkdir(directory)
    lock = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    sleeper = subprocess.Popen(["sleep", "600"])
    Path(directory, "cgroup.procs").write_text(str(sleeper.pid))
    held = [lock]  # the test may let it go, as a dying harness does
    try:
        yield directory, held
    finally:
        sleeper.kill()
        sleeper.wait()
        for fd in held:
            os.close(fd)
        for _ in range(100):
            try:
                os.rmdir(directory)
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


def test_a_locked_group_is_never_swept_and_an_unlocked_one_is(
    locked_group: tuple[str, list[int]],
) -> None:
    directory, held = locked_group
    (sleeper,) = _procs(directory)
    cgroups.sweep_stale(os.path.dirname(directory))
    _one_run()
    assert os.path.isdir(directory) and _procs(directory) == [sleeper]
    # Its harness dies: the kernel drops the lock, and the next sweep takes the group.
    os.close(held.pop())
    _one_run()
    assert not os.path.exists(directory)
    _until(lambda: not os.path.exists(f"/proc/{sleeper}") or _zombie(sleeper), "sleeper killed")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


HOLDER = """
import json, subprocess, sys, time
from evalspec.sandbox import cgroups
group = cgroups.make(8, 64 * 1024 * 1024)
sleeper = subprocess.Popen(["sleep", "600"])
group.add(sleeper.pid)
print(json.dumps({"pid": __import__("os").getpid(), "directories": group.directories}))
sys.stdout.flush()
time.sleep(600)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root unshare")
def test_a_live_harness_in_another_pid_namespace_keeps_its_groups() -> None:
    # The harness is pid 1 of its own pid namespace: a pid means nothing here.
    holder = subprocess.Popen(
        ["unshare", "--pid", "--kill-child=SIGKILL", sys.executable, "-c", HOLDER],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        told = json.loads(holder.stdout.readline())
        assert told["pid"] == 1
        directories = told["directories"]
        assert directories and all(os.path.isdir(d) for d in directories)
        inside = {d: _procs(d) for d in directories}
        assert all(inside.values()), inside
        for hierarchy in HIERARCHIES:
            cgroups.sweep_stale(hierarchy.directory)
        _one_run()
        assert {d: _procs(d) for d in directories} == inside  # not swept, nothing killed
    finally:
        holder.send_signal(signal.SIGKILL)  # unshare dies; its child (the harness) too
        holder.wait()
    _until(lambda: not any(_procs(d) for d in directories), "the namespace's processes end")
    _one_run()  # this live harness removes what the killed one left
    assert not [d for d in directories if os.path.exists(d)]


HARNESS = """
import sys, warnings
from evalspec.sandbox import Limits, Sandbox, WeakIsolationWarning
warnings.simplefilter("ignore", WeakIsolationWarning)
box = Sandbox(Limits(cpu_seconds=60, wall_seconds=60.0), tier=sys.argv[1])
box.run("import time\\ntime.sleep(60)\\nran = True\\n", "assert ran")
"""


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_running_harness_sweeps_what_a_killed_harness_left(tier: str) -> None:
    _one_run()  # this harness is already running when the other one starts
    killed = subprocess.Popen([sys.executable, "-c", HARNESS, tier])
    prefix = f"run-{killed.pid}-"

    def groups() -> list[str]:
        found = []
        for hierarchy in HIERARCHIES:
            with os.scandir(hierarchy.directory) as entries:
                found += [e.path for e in entries if e.name.startswith(prefix)]
        return found

    try:
        _until(lambda: len(groups()) == len(HIERARCHIES) and all(map(_procs, groups())), "a run")
        left = groups()
        pids = {p for d in left for p in _procs(d)}
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    _one_run()
    assert not [d for d in left if os.path.exists(d)]
    _until(lambda: all(_zombie(p) or not os.path.exists(f"/proc/{p}") for p in pids), "killed")


def test_groups_of_the_old_naming_are_left_alone() -> None:
    # "<pid>-<n>" groups hold no lock: whether their harness lives cannot be told.
    parent = HIERARCHIES[0].directory
    directory = os.path.join(parent, f"{2**22 + 7}-0")  # no such pid here
    os.makedirs(directory, exist_ok=True)
    try:
        cgroups.sweep_stale(parent)
        _one_run()
        assert os.path.isdir(directory)
    finally:
        os.rmdir(directory)


def test_limits_reach_the_group() -> None:
    group = cgroups.make(5, 64 * 1024 * 1024)
    assert group is not None
    try:
        for directory in group.directories:
            assert os.path.basename(directory).startswith(f"run-{os.getpid()}-")
            if os.path.exists(os.path.join(directory, "pids.max")):
                assert Path(directory, "pids.max").read_text().strip() == "9"
    finally:
        assert group.remove()
    assert group.locks == [] and group.directories == []
