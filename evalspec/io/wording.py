"""Words for messages people read: counted nouns ("1 task", "2 tasks", "1 entry"), and
names from untrusted input shown on one line."""

from __future__ import annotations


def plural(noun: str) -> str:
    """The plural of one of the nouns evalspec counts ("entry" -> "entries")."""
    if len(noun) > 1 and noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: ``counted(1, "entry") == "1 entry"``."""
    return f"{n} {noun if n == 1 else plural(noun)}"


def one_line(text: str) -> str:
    """``text`` as it can be shown in a line of output: JSON-quoted when it holds
    anything unprintable (a line break, a carriage return, an escape sequence, a
    bidirectional-text control), which would let a field name or file name from a
    task file split its line or draw over others on a terminal."""
    if text.isprintable():
        return text
    import json  # only for the odd name: the warm validate does not import it

    return json.dumps(text)


__all__ = ["counted", "one_line", "plural"]
