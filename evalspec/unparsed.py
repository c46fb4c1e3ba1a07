"""Which raw outputs an extracting post-process rule could not parse.

An extractor that finds nothing still returns a string (``""``, or the text
unchanged), and the metric then scores it as a wrong answer. The report counts
these outputs per category, so that a broken extractor (or a model that ignores
the answer format) is not mistaken for a model that answers wrongly. The checks
look at the raw output and leave the frozen rules untouched; a test pins that
each check agrees with its rule.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

_LETTERS = frozenset("ABCDE")
_FENCE = "```"


def no_letter(raw: str) -> bool:
    """``extract_letter`` found no character in ``A-E``."""
    return not any(ch in _LETTERS for ch in raw)


def no_fence(raw: str) -> bool:
    """``extract_code_block`` found no triple-backtick fence."""
    return _FENCE not in raw


def only_blank_lines(raw: str) -> bool:
    """``extract_first_line`` found only blank (or whitespace-only) lines."""
    return all(not line or line.isspace() for line in raw.splitlines())


CHECKS: MappingProxyType[str, Callable[[str], bool]] = MappingProxyType(
    {
        "extract_letter": no_letter,
        "extract_code_block": no_fence,
        "extract_first_line": only_blank_lines,
    }
)
"""Post-process rule name -> "this raw output could not be parsed" check."""


def unparsed(rule: str, raw: str) -> bool:
    """True when ``rule`` extracts and found nothing to extract in ``raw``."""
    check = CHECKS.get(rule)
    return check is not None and check(raw)
