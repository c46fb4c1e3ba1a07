"""Counted nouns for messages people read: "1 task", "2 tasks", "1 entry"."""

from __future__ import annotations


def plural(noun: str) -> str:
    """The plural of one of the nouns evalspec counts ("entry" -> "entries")."""
    if len(noun) > 1 and noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: ``counted(1, "entry") == "1 entry"``."""
    return f"{n} {noun if n == 1 else plural(noun)}"


__all__ = ["counted", "plural"]
