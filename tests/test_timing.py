"""tests/timing.py: the timing is retried, the outcome of the attempt in bound is kept."""

from __future__ import annotations

import time

import pytest
from timing import within


def test_a_slow_first_attempt_is_retried_and_the_fast_outcome_returned() -> None:
    calls: list[int] = []

    def call() -> int:
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.2)  # the machine was busy this once
        return len(calls)

    assert within(0.1, call) == 2


def test_an_exception_inside_the_bound_is_raised_unchanged() -> None:
    def call() -> None:
        raise ValueError("the refusal under test")

    with pytest.raises(ValueError, match="the refusal under test"):
        within(5.0, call)


def test_every_attempt_out_of_bound_fails_with_each_time() -> None:
    with pytest.raises(AssertionError, match=r"^rule: each of 2 attempts took 0\.01 s or more"):
        within(0.01, lambda: time.sleep(0.02), attempts=2, what="rule")
