"""Telling that ``evalspec score PREDICTIONS TASKS`` was typed the wrong way round.

Only the first object line of each file is looked at (within its first 64 KiB),
so the check costs nothing on big files and never decides a verdict: it only
turns a screenful of ``missing_field`` errors into one line saying what happened.
"""

from __future__ import annotations

import json
from typing import Any

_PEEK = 64 << 10
_TASK_KEYS = frozenset({"prompt", "targets", "category", "metric_name", "post_process"})
_PREDICTION_KEYS = frozenset({"output", "outputs"})


def _first_object(data: bytes) -> dict[str, Any] | None:
    for raw in data[:_PEEK].split(b"\n"):
        if not raw.strip():
            continue
        if not raw.lstrip(b"\xef\xbb\xbf \t\r").startswith(b"{"):
            return None
        try:
            value = json.loads(raw.decode("utf-8-sig", "replace"))
        except (ValueError, RecursionError):  # hostile input: any depth, any bytes
            return None
        return value if isinstance(value, dict) else None
    return None


def is_prediction(obj: dict[str, Any] | None) -> bool:
    return obj is not None and bool(_PREDICTION_KEYS & obj.keys()) and not _TASK_KEYS & obj.keys()


def is_task(obj: dict[str, Any] | None) -> bool:
    return (
        obj is not None and len(_TASK_KEYS & obj.keys()) >= 2 and not _PREDICTION_KEYS & obj.keys()
    )


def looks_swapped(tasks: bytes, predictions: bytes) -> bool:
    """Whether the tasks file starts with a prediction and the predictions file with a task."""
    return is_prediction(_first_object(tasks)) and is_task(_first_object(predictions))


__all__ = ["is_prediction", "is_task", "looks_swapped"]
