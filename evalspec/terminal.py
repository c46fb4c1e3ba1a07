"""Colour on a terminal, the way NO_COLOR, FORCE_COLOR and ``--color`` ask for it.

``--color auto`` (the default) colours only a stream that is a terminal, and
never when ``NO_COLOR`` is set to anything non-empty (https://no-color.org) or
``TERM=dumb``; ``FORCE_COLOR`` (non-empty, not ``0``) colours even a pipe, as
pytest and ruff do. ``--color always`` and ``--color never`` overrule both
variables: the flag is the more specific request.
"""

from __future__ import annotations

import os
from typing import TextIO

import attrs

CHOICES = ("auto", "always", "never")

_CODES = {
    "bold": "1",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
    "dim": "2",
}


def wants_color(stream: TextIO, choice: str = "auto") -> bool:
    """Whether output written to ``stream`` should carry ANSI colour."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    force = os.environ.get("FORCE_COLOR")
    if force and force != "0":
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


@attrs.frozen
class Painter:
    """Wraps text in ANSI styles, or leaves it alone when colour is off."""

    enabled: bool

    @classmethod
    def for_stream(cls, stream: TextIO, choice: str = "auto") -> Painter:
        return cls(wants_color(stream, choice))

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


__all__ = ["CHOICES", "Painter", "wants_color"]
