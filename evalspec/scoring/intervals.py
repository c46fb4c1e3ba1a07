"""Group statistics for the score report: count, mean and a bootstrap 95% CI.

The interval is the percentile bootstrap: resample the group's scores with
replacement ``resamples`` times, take each resample's mean, and read the 2.5th
and 97.5th percentiles of those means (linear interpolation between order
statistics, numpy's default ``"linear"`` method).

Reproducible by construction: each group draws from its own
``random.Random`` seeded with the declared seed and the group's name (a string
seed is hashed with SHA-512 by ``random``, not with ``hash()``, so
``PYTHONHASHSEED`` does not matter), never from the global generator; and
adding a group to a report does not change any other group's interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 1000


def _percentile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def mean(values: Sequence[float]) -> float:
    """The exactly rounded mean (``math.fsum``), so it does not depend on order."""
    return math.fsum(values) / len(values)


def bootstrap_ci(
    values: Sequence[float], *, seed: int, key: str, resamples: int = DEFAULT_RESAMPLES
) -> tuple[float, float]:
    """The percentile-bootstrap 95% interval of the mean of ``values``.

    :param key: names the group; it is mixed into the seed so that each group
        has its own stream of random numbers.
    """
    if not values:
        msg = "cannot bootstrap an empty group"
        raise ValueError(msg)
    if resamples < 1:
        msg = f"resamples must be at least 1, got {resamples}"
        raise ValueError(msg)
    rng = random.Random(f"evalspec-bootstrap:{seed}:{key}")
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - CONFIDENCE) / 2
    low, high = _percentile(means, tail), _percentile(means, 1 - tail)
    # Resampled means lie within [min, max] of the values; keep float noise from
    # putting an interval bound outside the observed range.
    return max(low, min(values)), min(high, max(values))


def summarize(
    values: Sequence[float], *, seed: int, key: str, resamples: int = DEFAULT_RESAMPLES
) -> dict[str, Any]:
    """``{"count", "mean", "ci95"}`` of a group; with a ``"reason"`` when a figure is null.

    A group of no items has mean ``null`` (never NaN); ``resamples == 0``
    turns the interval off (``ci95`` null).
    """
    if not values:
        return {"count": 0, "mean": None, "ci95": None, "reason": "no items in this group"}
    stat: dict[str, Any] = {"count": len(values), "mean": mean(values)}
    if resamples == 0:
        stat["ci95"] = None
        stat["reason"] = "bootstrap disabled (0 resamples)"
    else:
        stat["ci95"] = list(bootstrap_ci(values, seed=seed, key=key, resamples=resamples))
    return stat
