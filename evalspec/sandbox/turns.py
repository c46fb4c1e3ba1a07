"""Turns: at most N runs execute programs at once, while more are being prepared.

A run's preparation (its directory and cgroup, the fork of its leader, its
namespaces and private root) does not involve the program, and takes about a
third of a run's time. :meth:`evalspec.sandbox.Sandbox.map` therefore keeps
twice as many runs in flight as it has ``jobs``: each prepares as soon as it
can, then waits for a turn before the job is written to its supervisor, so
that no more than ``jobs`` programs (and their tests) ever run at once, and
the next run's preparation overlaps the current run's program. A run's wall
clock starts with its turn, so waiting for one never costs it time.
"""

from __future__ import annotations

import threading

import evalspec.sandbox.interrupt as interrupt

_POLL_SECONDS = 0.05  # how soon a waiting run notices the harness is stopping


class Turns:
    """``jobs`` turns shared by every run of one :meth:`Sandbox.paced` view."""

    def __init__(self, jobs: int) -> None:
        if type(jobs) is not int or jobs < 1:
            raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
        self.jobs = jobs
        self._free = threading.Semaphore(jobs)

    def take(self) -> bool:
        """Wait for a turn; False (and no turn) once the harness is stopping."""
        while not self._free.acquire(timeout=_POLL_SECONDS):
            if interrupt.stopping():
                return False
        return True

    def give(self) -> None:
        """Hand back a turn taken with :meth:`take`."""
        self._free.release()

    def __repr__(self) -> str:
        return f"Turns({self.jobs})"
