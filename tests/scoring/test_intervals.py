"""Group statistics and the seeded bootstrap interval (evalspec/scoring/intervals.py)."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.scoring.intervals import bootstrap_ci, mean, summarize

SCORES = st.lists(st.floats(0, 1), min_size=1, max_size=30)


@given(SCORES, st.integers(0, 2**32))
def test_interval_is_reproducible_for_a_seed(values: list[float], seed: int) -> None:
    first = bootstrap_ci(values, seed=seed, key="g", resamples=50)
    assert bootstrap_ci(values, seed=seed, key="g", resamples=50) == first


@given(SCORES)
def test_interval_lies_within_the_observed_range_and_is_ordered(values: list[float]) -> None:
    low, high = bootstrap_ci(values, seed=1, key="g", resamples=50)
    assert min(values) <= low <= high <= max(values)


def test_interval_does_not_touch_the_global_random_generator() -> None:
    random.seed(12345)
    state = random.getstate()
    bootstrap_ci([0.0, 1.0, 0.5], seed=3, key="g", resamples=100)
    assert random.getstate() == state


def test_seed_and_group_key_both_change_the_draws() -> None:
    values = [0.0, 1.0] * 10 + [0.5]
    base = bootstrap_ci(values, seed=0, key="a", resamples=200)
    assert bootstrap_ci(values, seed=1, key="a", resamples=200) != base
    assert bootstrap_ci(values, seed=0, key="b", resamples=200) != base


def test_constant_scores_give_a_point_interval() -> None:
    assert bootstrap_ci([0.25] * 7, seed=0, key="g") == (0.25, 0.25)


def test_interval_covers_the_mean_of_a_balanced_sample() -> None:
    values = [0.0, 1.0] * 50
    low, high = bootstrap_ci(values, seed=0, key="g", resamples=500)
    assert low < 0.5 < high
    assert high - low < 0.3


def test_interval_is_the_same_under_any_hash_seed() -> None:
    code = (
        "import json; from evalspec.scoring.intervals import bootstrap_ci\n"
        "print(json.dumps(bootstrap_ci([0.0, 0.3, 1.0, 1.0], seed=7, key='label/x/é')))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": hs},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for hs in ("0", "1", "4242")
    }
    assert len(outs) == 1
    assert len(json.loads(outs.pop())) == 2


def test_summarize_an_empty_group_is_null_with_a_reason_never_nan() -> None:
    stat = summarize([], seed=0, key="g")
    assert stat == {"count": 0, "mean": None, "ci95": None, "reason": "no items in this group"}
    json.dumps(stat, allow_nan=False)


def test_summarize_without_resamples_has_no_interval() -> None:
    stat = summarize([1.0, 0.0], seed=0, key="g", resamples=0)
    assert stat["count"] == 2
    assert stat["mean"] == 0.5
    assert stat["ci95"] is None
    assert "reason" in stat


def test_mean_is_exactly_rounded() -> None:
    values = [0.1] * 10
    assert mean(values) == 0.1
    assert math.fsum(values) / 10 == mean(values)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([], seed=0, key="g")
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([1.0], seed=0, key="g", resamples=0)
