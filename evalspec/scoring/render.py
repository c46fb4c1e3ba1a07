"""Few-shot rendering: the one code path that turns a task into a model prompt."""

from __future__ import annotations

from collections.abc import Mapping

# Kept free of typing and attrs at run time: renderers call it in tight loops
# and `evalspec.render` should cost nothing to import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from evalspec.model import TaskSpec

SEPARATOR = "\n\n"
"""Blank line between examples and before the task prompt."""


def render(task: TaskSpec | Mapping[str, Any]) -> str:
    """The prompt a model receives: the preamble (spec v2's optional field, when
    not empty), each example as ``prompt + " " + completion``, then the task
    prompt, joined with blank lines.

    A task without a preamble renders exactly as spec v1 renders it.
    """
    # Duck-typed rather than isinstance(TaskSpec), so importing this module
    # stays free of attrs.
    if isinstance(task, Mapping):
        preamble = task.get("preamble", "")
        parts = [ex["prompt"] + " " + ex["completion"] for ex in task.get("few_shot_examples", [])]
        parts.append(task["prompt"])
    else:
        preamble = task.preamble
        parts = [ex.prompt + " " + ex.completion for ex in task.few_shot_examples]
        parts.append(task.prompt)
    if preamble:
        parts.insert(0, preamble)
    return SEPARATOR.join(parts)
