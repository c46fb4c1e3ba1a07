"""Colour on a terminal, the way NO_COLOR, FORCE_COLOR and ``--color`` ask for it.

``--color auto`` (the default) colours only a stream that is a terminal, and
never when ``NO_COLOR`` is set to anything non-empty (https://no-color.org) or
``TERM=dumb``; ``FORCE_COLOR`` (non-empty, not ``0``) colours even a pipe, as
pytest and ruff do. ``--color always`` and ``--color never`` overrule both
variables: the flag is the more specific request.
"""

from __future__ import annotations

import os

# Not `from typing import ...`: typing costs the warm `evalspec validate`
# milliseconds, and TextIO is only an annotation. Type checkers treat any name
# TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

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


class Painter:
    """Wraps text in ANSI styles, or leaves it alone when colour is off.

    A plain, frozen, slotted class rather than attrs: every ``evalspec validate``
    builds one, and its warm path does not import attrs.
    """

    __slots__ = ("enabled",)

    enabled: bool

    def __init__(self, enabled: bool) -> None:
        object.__setattr__(self, "enabled", enabled)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Painter is frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Painter)
        return self.enabled == other.enabled

    def __hash__(self) -> int:
        return hash((Painter, self.enabled))

    def __repr__(self) -> str:
        return f"Painter(enabled={self.enabled!r})"

    @classmethod
    def for_stream(cls, stream: TextIO, choice: str = "auto") -> Painter:
        return cls(wants_color(stream, choice))

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


__all__ = ["CHOICES", "Painter", "wants_color"]
