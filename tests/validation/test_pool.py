"""The ``--jobs`` worker pool: results in the order of the items, a lost worker an error."""

from __future__ import annotations

import os

import pytest

from evalspec.validation.pool import AHEAD, WorkerLost, ordered_results

_state: dict[str, int] = {}


def _setup(offset: int) -> None:
    _state["offset"] = offset


def _square_plus_offset(n: int) -> int:
    return n * n + _state["offset"]


def _die_on_seven(n: int) -> int:
    if n == 7:
        os._exit(9)  # as the OOM killer would end it: no exception, no result
    return n


def test_results_come_in_the_order_of_the_items_however_many_are_ahead() -> None:
    items = list(range(3 * AHEAD * 2 + 5))  # more items than are ever submitted ahead
    got = ordered_results(
        _square_plus_offset, items, workers=2, initializer=_setup, initargs=(1,), path="f"
    )
    assert list(got) == [n * n + 1 for n in items]


def test_a_worker_that_dies_is_worker_lost_naming_the_file() -> None:
    got = ordered_results(
        _die_on_seven, list(range(20)), workers=2, initializer=_setup, initargs=(0,), path="f"
    )
    with pytest.raises(WorkerLost, match="ended before its chunk was checked") as caught:
        list(got)
    assert caught.value.filename == "f"
