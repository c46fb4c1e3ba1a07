"""Ending every sandboxed run at once when the harness is told to stop.

Each run registers its launcher process (and its leased uid) while it is in
flight. :func:`stop_all` kills them all immediately and makes every later
:func:`evalspec.sandbox.process.execute` return a ``sandbox_error`` without
starting anything; the runs' own cleanup (removing their directories,
scrubbing their uids) still happens in the threads that own them.
:func:`ending_runs_on_signals` installs SIGINT/SIGTERM handlers that do this
and raise :class:`Interrupted` in the main thread, for ``evalspec score``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Protocol

from evalspec.sandbox.cgroups import RunGroup
from evalspec.sandbox.uids import kill_uid


class Launcher(Protocol):
    """A run's launcher (a Popen'd process or a fork of a slot's zygote): it leads
    the run's process group."""

    @property
    def pid(self) -> int: ...


# Reentrant: the signal handler runs in the main thread, which may hold it.
_lock = threading.RLock()
_live: dict[int, tuple[Launcher, int | None, RunGroup | None]] = {}
_stopping = threading.Event()
# A signal that came while the main thread was in a shielded section (taking
# a resource it must not lose track of, or cleaning up) is raised at its end.
_local = threading.local()
_deferred: list[int] = []


class Interrupted(BaseException):  # like KeyboardInterrupt: not an error
    """The harness got SIGINT or SIGTERM; every sandboxed run was ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """The shell convention: 128 + the signal number (130 SIGINT, 143 SIGTERM)."""
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


def stopping() -> bool:
    """Whether :func:`stop_all` was called (runs must end, none may start)."""
    return _stopping.is_set()


def register(proc: Launcher, uid: int | None, group: RunGroup | None = None) -> None:
    """Note a launched run; a stop that came first kills it right away."""
    with _lock:
        _live[proc.pid] = (proc, uid, group)
    if _stopping.is_set():
        _end(proc, uid, group)


def unregister(proc: Launcher) -> None:
    with _lock:
        _live.pop(proc.pid, None)


def _end(proc: Launcher, uid: int | None, group: RunGroup | None) -> None:
    # The launcher leads its own process group (and in the namespace tier
    # holds the pid namespace, whose processes die with it).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if uid is not None:
        kill_uid(uid)
    if group is not None:
        group.kill()


def stop_all() -> None:
    """Kill every run in flight and refuse new ones (for the rest of the process)."""
    _stopping.set()
    with _lock:
        live = list(_live.values())
    for proc, uid, group in live:
        _end(proc, uid, group)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """While inside (in the main thread), :class:`Interrupted` waits until the end.

    For the steps between taking a resource (a directory, a uid, a process)
    and recording it for cleanup, and for cleanup itself: a stop that came
    meanwhile still kills every run at once; only its exception is deferred.
    """
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth
    if depth == 0 and _deferred and threading.current_thread() is threading.main_thread():
        raise Interrupted(_deferred.pop())


def resume() -> None:
    """Allow runs again after :func:`stop_all` (for a process that handled the stop)."""
    _stopping.clear()


@contextlib.contextmanager
def ending_runs_on_signals() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM end every run and raise :class:`Interrupted`.

    Only the first signal raises (a second one while cleaning up just kills
    again); outside the main thread, where handlers cannot be installed, this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        stop_all()
        if raised:
            return
        raised.append(signum)
        if getattr(_local, "depth", 0):
            _deferred.append(signum)  # raised when the shielded section ends
            return
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        _deferred.clear()
