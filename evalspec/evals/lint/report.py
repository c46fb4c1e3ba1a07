"""What lint reports: one :class:`LintProblem` per finding, a :class:`DatasetLint` per
dataset, the :class:`LintReport` of a run, and the helpers that build their records."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from evalspec.evals.card import CardProblem
from evalspec.model import ErrorRecord


@attrs.frozen
class LintProblem:
    """One lint finding: the file it is in and the error record."""

    file: str
    error: ErrorRecord

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, **self.error.to_dict()}


@attrs.frozen
class SuppressedProblem:
    """A finding the data card suppresses for its task, with the card's reason."""

    problem: LintProblem
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.problem.to_dict(), "reason": self.reason}


@attrs.define
class DatasetLint:
    """What lint learned about one dataset."""

    path: str
    card: str
    name: str
    tasks: int = 0
    content_hash: str | None = None
    version: str | None = None
    spec_version: int | None = None
    problems: list[LintProblem] = attrs.Factory(list)
    suppressed: list[SuppressedProblem] = attrs.Factory(list)
    """Findings the card's ``suppress:`` entries took out of :attr:`problems`."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.name,
            "path": self.path,
            "card": self.card,
            "tasks": self.tasks,
            "content_hash": self.content_hash,
            "version": self.version,
            "spec_version": self.spec_version,
            "problems": len(self.problems),
            "suppressed": len(self.suppressed),
        }


@attrs.define
class LintReport:
    """Every dataset linted, layout-level problems, and files that could not be read."""

    datasets: list[DatasetLint] = attrs.Factory(list)
    layout_problems: list[LintProblem] = attrs.Factory(list)
    io_errors: list[str] = attrs.Factory(list)

    def problems(self) -> Iterator[LintProblem]:
        yield from self.layout_problems
        for d in self.datasets:
            yield from d.problems

    def suppressed(self) -> Iterator[SuppressedProblem]:
        for d in self.datasets:
            yield from d.suppressed

    @property
    def ok(self) -> bool:
        return not self.io_errors and next(self.problems(), None) is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "datasets": [d.to_dict() for d in self.datasets],
            "problems": [p.to_dict() for p in self.problems()],
            "suppressed": [s.to_dict() for s in self.suppressed()],
            "io_errors": list(self.io_errors),
        }


@attrs.frozen
class RuleSelection:
    """Which rule codes a lint run reports (``--select`` / ``--ignore``, as in ruff).

    A code names a rule and every rule it is the prefix of, word by word: ``card``
    is ``card_missing``, ``card_syntax``, ``card_field``...; ``select`` empty means
    every rule, and ``ignore`` wins over ``select``.
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def keeps(self, rule: str) -> bool:
        chosen = not self.select or any(covers(code, rule) for code in self.select)
        return chosen and not any(covers(code, rule) for code in self.ignore)

    def unknown(self, rules: Iterable[str]) -> list[str]:
        """The codes that name no rule of ``rules`` (a typo would select nothing)."""
        known = tuple(rules)
        codes = (*self.select, *self.ignore)
        return [c for c in codes if not any(covers(c, rule) for rule in known)]


def covers(code: str, rule: str) -> bool:
    """Whether the selection code ``code`` names ``rule`` (itself, or a word prefix)."""
    return rule == code or rule.startswith(code.rstrip("_") + "_")


def statistics(report: LintReport, *, suppressed: bool = False) -> list[tuple[str, int]]:
    """``(rule, count)`` for every rule with problems (``suppressed``: with
    suppressed findings), most frequent first (then by name)."""
    rules = (s.problem.error.rule for s in report.suppressed()) if suppressed else None
    counts = Counter(rules if rules is not None else (p.error.rule for p in report.problems()))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def relative_name(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return Path(os.path.relpath(path)).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:  # another drive on Windows
        return str(path)


def record(
    line: int,
    rule: str,
    field: str | None,
    message: str,
    task_id: str | None = None,
) -> ErrorRecord:
    return ErrorRecord(line, rule, field, message, task_id)


def from_card(file: str, p: CardProblem) -> LintProblem:
    return LintProblem(file, record(p.line, p.rule, p.field, p.message))


def shorten(text: str, limit: int = 1000) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"
