"""Counted nouns for messages people read: "1 task", "2 tasks", "1 entry"."""

from __future__ import annotations

_IRREGULAR = {"entry": "entries", "summary": "summaries", "property": "properties"}


def plural(noun: str) -> str:
    """The plural of one of the nouns evalspec counts."""
    return _IRREGULAR.get(noun, noun + "s")


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: ``counted(1, "entry") == "1 entry"``."""
    return f"{n} {noun if n == 1 else plural(noun)}"


__all__ = ["counted", "plural"]
