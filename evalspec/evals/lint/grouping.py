"""Folding repeated lint problems for people: a 30-task file missing one label
prints a few of the 30 lines and one line for the rest, not 30 identical lines.

Problems are alike when they share the file, the rule, the field and the shape of
the message: the message with its quoted values, numbers and bracketed lists
blanked, so ``duplicate_prompt`` against ``'T1' (line 3)`` and against ``'T7'
(line 9)`` are alike, while ``missing_label`` on ``metadata.difficulty`` and on
``metadata.source`` are not (the field differs). The first :data:`SHOWN` of a kind
are printed in full; in their place the next one becomes a :class:`Fold` that
counts every one left out, exactly, and names the first of their lines. The JSON
and CI formats never fold.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

import attrs

from evalspec.evals.lint.report import LintProblem

SHOWN = 3
"""How many problems of one kind are printed in full before the rest are folded."""

FIRST_LINES = 5
"""How many line numbers a fold names."""

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_BRACKETED = re.compile(r"\[[^\[\]]*\]")
_NUMBER = re.compile(r"\d+")


def shape(text: str) -> str:
    """``text`` with quoted values, bracketed lists and numbers blanked."""
    text = _QUOTED.sub("'…'", text)
    previous = None
    while previous != text:  # nested lists, innermost first
        previous, text = text, _BRACKETED.sub("[…]", text)
    return _NUMBER.sub("N", text)


def kind(problem: LintProblem) -> tuple[str, str, str, str]:
    """What makes two problems alike: file, rule, field shape and message shape."""
    e = problem.error
    return (problem.file, e.rule, _NUMBER.sub("N", e.field or ""), shape(e.message))


@attrs.frozen
class Fold:
    """The problems of one kind beyond the first :data:`SHOWN`: how many, and where."""

    first: LintProblem
    """The first problem folded (its file and line start the printed line)."""
    lines: tuple[int, ...]
    """The line of every problem folded, in report order."""

    @property
    def count(self) -> int:
        return len(self.lines)

    def describe(self) -> str:
        """``N more like this (lines a, b, c, d, e and K more)``."""
        named = ", ".join(str(n) for n in self.lines[:FIRST_LINES])
        rest = self.count - FIRST_LINES
        where = f"{named} and {rest} more" if rest > 0 else named
        noun = "line" if self.count == 1 else "lines"
        return f"{self.count} more like this ({noun} {where})"


def grouped(problems: Iterable[LintProblem], shown: int = SHOWN) -> Iterator[LintProblem | Fold]:
    """``problems`` in order, each kind's problems after the first ``shown`` folded
    into one :class:`Fold`, yielded where the first of them stood."""
    listed = list(problems)
    members: dict[tuple[str, str, str, str], list[LintProblem]] = defaultdict(list)
    for p in listed:
        members[kind(p)].append(p)
    seen: Counter[tuple[str, str, str, str]] = Counter()
    for p in listed:
        k = kind(p)
        seen[k] += 1
        alike = members[k]
        if seen[k] <= shown or len(alike) == shown + 1:  # a fold of one saves nothing
            yield p
        elif seen[k] == shown + 1:
            rest = alike[shown:]
            yield Fold(rest[0], tuple(q.error.line for q in rest))


__all__ = ["FIRST_LINES", "SHOWN", "Fold", "grouped", "kind", "shape"]
