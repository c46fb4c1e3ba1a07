"""Turns: no more than ``jobs`` programs at once, the next runs prepared meanwhile."""

from __future__ import annotations

import threading
import time

import pytest

from evalspec.sandbox import Limits, RunResult, Sandbox, interrupt
from evalspec.sandbox.turns import Turns
from tests.sandbox.sandbox_tiers import available_tiers, sandbox_at

AVAILABLE = available_tiers()
TEST = "assert answer() == 42\n"


def _timed(seconds: float) -> str:
    """A program that prints when its code started and ended (the host's monotonic
    clock: no tier gives a run a time namespace of its own)."""
    return (
        "import time\n"
        "print('START', time.monotonic(), flush=True)\n"
        f"time.sleep({seconds})\n"
        "def answer():\n"
        "    return 42\n"
        "print('END', time.monotonic(), flush=True)\n"
    )


def _span(result: RunResult) -> tuple[float, float]:
    assert result.status == "pass", result
    marks = dict(line.split() for line in result.stdout.splitlines())
    return float(marks["START"]), float(marks["END"])


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        running += step
        most = max(most, running)
    return most


# --- the turns themselves -----------------------------------------------------


def test_turns_refuse_a_count_that_is_not_a_positive_integer() -> None:
    for jobs in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="positive integer"):
            Turns(jobs)  # type: ignore[arg-type]


def test_a_run_waits_for_a_turn_until_one_is_given_back() -> None:
    turns = Turns(2)
    assert turns.take() and turns.take()
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(turns.take()))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and got == []  # both turns are taken: it must still wait
    turns.give()
    waiter.join(10)
    assert got == [True]


def test_a_run_waiting_for_a_turn_gets_none_once_the_harness_stops() -> None:
    turns = Turns(1)
    assert turns.take()
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(turns.take()))
    waiter.start()
    try:
        interrupt.stop_all()
        waiter.join(10)
    finally:
        interrupt.resume()  # this process goes on testing
    assert got == [False]


# --- real runs ----------------------------------------------------------------


@pytest.mark.parametrize("tier", AVAILABLE)
@pytest.mark.parametrize("jobs", [1, 2])
def test_map_never_runs_more_than_jobs_programs_at_once(tier: str, jobs: int) -> None:
    box = sandbox_at(tier, Limits(wall_seconds=10.0))
    results = box.map([(_timed(0.3), [TEST])] * (3 * jobs), jobs=jobs)
    spans = [_span(task.results[0]) for task in results]
    assert _most_at_once(spans) <= jobs


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_run_waiting_for_its_turn_is_ended_as_a_sandbox_error_when_the_harness_stops(
    tier: str,
) -> None:
    paced = sandbox_at(tier, Limits(wall_seconds=30.0)).paced(1)
    results: dict[str, RunResult] = {}

    def run(name: str, code: str) -> None:
        results[name] = paced.run(code, TEST)

    first = threading.Thread(target=run, args=("first", _timed(30)))
    first.start()
    while not interrupt._live:  # the first run has its turn once it is launched
        time.sleep(0.01)
    second = threading.Thread(target=run, args=("second", _timed(0)))
    second.start()
    try:
        while len(interrupt._live) < 2:  # the second is launched, waiting for the turn
            time.sleep(0.01)
        interrupt.stop_all()
        first.join(20)
        second.join(20)
    finally:
        interrupt.resume()
    assert not first.is_alive() and not second.is_alive()
    assert results["second"].status == "sandbox_error", results["second"]
    assert "START" not in results["second"].stdout  # its program never ran
    assert results["first"].status == "sandbox_error", results["first"]


@pytest.mark.slow
@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_runs_wall_clock_starts_with_its_turn(tier: str) -> None:
    # Each run sleeps 2.5 s under a 4 s wall limit, one at a time: the second
    # waits about 2.5 s for its turn, which must not count against its 4 s.
    box: Sandbox = sandbox_at(tier, Limits(wall_seconds=4.0))
    results = box.map([(_timed(2.5), [TEST])] * 3, jobs=1)
    assert [task.results[0].status for task in results] == ["pass"] * 3
