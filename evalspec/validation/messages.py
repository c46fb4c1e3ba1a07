"""How a validation verdict reads to people: one line per error, one summary per file.

The command, lint, render, score and the pytest plugin all print errors in this one
form (``file:line: rule field — message``), so a message seen in CI is the message
seen locally.
"""

from __future__ import annotations

from evalspec.io.inputs import STDIN, input_name
from evalspec.io.terminal import Painter
from evalspec.io.wording import counted, one_line

# Annotations only: the warm `evalspec validate` does not import the value classes.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from evalspec.model import ErrorRecord

PLAIN = Painter(False)


def format_error(path: str, e: ErrorRecord, paint: Painter = PLAIN) -> str:
    """``file:line: rule field — message`` (one line, for people)."""
    field = f" {one_line(e.field)}" if e.field else ""
    where = paint(f"{one_line(path)}:{e.line}:", "bold")
    return f"{where} {paint(e.rule, 'red', 'bold')}{field} — {e.message}"


def summary(path: str, total: int, invalid: int, paint: Painter = PLAIN) -> str:
    """``file: 10 tasks, 9 valid, 1 invalid``."""
    counts = f"{counted(total, 'task')}, {total - invalid} valid, {invalid} invalid"
    return f"{paint(one_line(path) + ':', 'bold')} {paint(counts, 'red' if invalid else 'green')}"


_NOT_JSONL_RULES = frozenset({"invalid_json", "not_object"})


def not_jsonl_hint(path: str, first_error: ErrorRecord | None) -> str | None:
    """One hint line when the first problem of a file shows JSON that is not JSON Lines:
    a JSON array, or a pretty-printed object spread over lines. ``None`` otherwise."""
    if first_error is None or first_error.rule not in _NOT_JSONL_RULES or first_error.line > 3:
        return None
    text = (first_error.text or "").strip()
    name = input_name(path)
    convert = "" if path == STDIN else f" (convert it with: jq -c '.[]' {path})"
    if text.startswith("["):
        return (
            f"evalspec: hint: {name} looks like a JSON array; evalspec reads JSON Lines, "
            f"one task object per line{convert}"
        )
    if text == "{":
        convert = "" if path == STDIN else f" (convert it with: jq -c . {path})"
        return (
            f"evalspec: hint: {name} looks like pretty-printed JSON; evalspec reads JSON Lines, "
            f"each task object on a single line{convert}"
        )
    return None
