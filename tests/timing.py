"""Wall-clock bounds that a loaded machine cannot turn red.

A bound such as "a megabyte of hostile input is handled in under 5 s" catches
catastrophic behaviour (a backtracking regex, a hang), which is slow on every
attempt; a machine busy with other work (xdist's second worker, other suites) is
slow only now and then. So the timing is retried, not the assertion: the call is
repeated until one attempt is inside the bound, and that attempt's outcome (its
value or its exception) is what the test goes on to check.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

ATTEMPTS = 3


def within(seconds: float, call: Callable[[], T], attempts: int = ATTEMPTS, what: str = "") -> T:
    """Return (or raise) the outcome of the first call of ``call`` that takes under ``seconds``.

    ``call`` must be repeatable (no side effect a second call would see). Fails if
    every one of ``attempts`` calls takes ``seconds`` or more.
    """
    times: list[float] = []
    for _ in range(attempts):
        start = time.perf_counter()
        try:
            outcome = call()
        except Exception:
            if time.perf_counter() - start < seconds:
                raise
            times.append(time.perf_counter() - start)
            continue
        elapsed = time.perf_counter() - start
        if elapsed < seconds:
            return outcome
        times.append(elapsed)
    took = ", ".join(f"{t:.2f}" for t in times)
    prefix = f"{what}: " if what else ""
    raise AssertionError(f"{prefix}each of {attempts} attempts took {seconds} s or more: {took} s")
