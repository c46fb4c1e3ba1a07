"""Reading a dataset for lint: one streaming pass that validates each line (the
validator's own loop, :func:`evalspec.validation.validator.line_outcomes`), feeds the
valid tasks to the semantic checks and hashes the records, and the second passes
that recall the few lines a finding needs (checking the file is still the one read:
:mod:`evalspec.io.fileidentity`)."""

from __future__ import annotations

import gc
import hashlib
import re
from collections.abc import Callable, Iterator
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import attrs

from evalspec.evals.contenthash import PREFIX, canonical, canonical_of_vouched
from evalspec.evals.lint.report import DatasetLint, LintProblem, shorten
from evalspec.evals.lint.semantic import Decoded, Recall, SemanticChecks
from evalspec.io.fileidentity import FileChanged, changed, file_signature
from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.linelimit import bounded_lines
from evalspec.model import ErrorRecord
from evalspec.registry.build import Registry
from evalspec.validation.precise import LATER_VERSION_FIX
from evalspec.validation.validator import (
    LineResult,
    duplicate_record,
    line_content,
    line_outcomes,
    line_verdict,
    read_lines,
)

_LATER = re.compile(
    re.escape("(" + LATER_VERSION_FIX.format(version="VERSION") + ")").replace("VERSION", r"(\d+)")
)


def lint_worded(error: ErrorRecord) -> ErrorRecord:
    """``error`` with validate's fix for a name a later spec version adds (``validate
    with --spec-version N``, a flag lint does not take) worded as lint's: the data
    card's ``spec_version`` decides the version a dataset is linted at."""
    if "--spec-version" not in error.message:
        return error
    message = _LATER.sub(r"(set spec_version: \1 in the data card)", error.message)
    return attrs.evolve(error, message=message)


LFS_POINTER_MAX = 1024
"""No Git LFS pointer is longer; only a file this short needs the pointer test."""


@attrs.frozen
class Hashed:
    """What one pass over a dataset's bytes found besides the verdicts."""

    content_hash: str | None
    """:func:`~evalspec.evals.contenthash.content_hash` of its records, or ``None``
    when a line does not parse."""
    shown: dict[int, str]
    """The text (shortened, as error records show it) of each line a semantic check
    flagged while the dataset was read, and of each line ``recall`` read again."""
    recall: Recall
    """The tasks of given lines, read again (for :meth:`SemanticChecks.findings`)."""
    errors: list[OSError]
    """Why ``recall`` could not read the dataset again, if it could not."""


def read_dataset(
    dataset: Path, registry: Registry, result: DatasetLint, checks: SemanticChecks
) -> Hashed:
    """Validate ``dataset`` line by line, never holding its bytes or its tasks: errors
    go to ``result``, each valid task (the first of its id) to ``checks`` as it is
    read; returned: the content hash of its records.

    Each line is decoded once. A line the validator's fast path vouches for comes
    back decoded exactly as the precise parser decodes it (with msgspec, as the
    struct it was decoded into), which is what the content hash needs; only the
    other lines are parsed again, precisely.

    :raises OSError: the file cannot be read.
    """
    from evalspec.validation.fast import FastPath

    spec = registry.spec
    fast = FastPath(spec)
    vouch: Callable[[bytes], Any]
    add: Callable[[int, Any], None]
    task_id: Callable[[Any], str]
    if fast.vouch_struct is not None:
        vouch, add, task_id = fast.vouch_struct, checks.add_struct, attrgetter("task_id")
    else:
        vouch, add, task_id = fast.vouch, checks.add, itemgetter("task_id")
    canonical_task = canonical_of_vouched()
    flagged = checks.flagged
    shown_texts: dict[int, str] = {}
    records = hashlib.sha256()
    update = records.update
    complete = True
    first_seen = checks.seen  # shared: the checker's collision check looks ids up there
    problems = result.problems
    shown = result.path
    total = 0
    # The tables grow by a few objects per task and hold no reference cycles: the
    # collector's passes over them, triggered by the allocations, find nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with dataset.open("rb") as f:
            opened = file_signature(f)
            outcomes = line_outcomes(bounded_lines(f), spec, vouch, task_id, first_seen)
            for number, raw, obj, verdict, first in outcomes:  # bounded_lines: as read_lines
                if obj is not None:
                    total += 1
                    if complete:
                        update(canonical_task(obj))
                        update(b"\n")
                    if first == number:
                        add(number, obj)
                        if flagged and flagged[-1] == number:
                            shown_texts[number] = shown_text(raw)
                    else:
                        problems.append(
                            LintProblem(shown, duplicate_record(number, task_id(obj), first, raw))
                        )
                    continue
                value = _parsed(raw, number)
                if value is _UNPARSED:
                    complete = False
                if verdict is None:
                    continue  # a blank line
                total += 1
                if value is not _UNPARSED and complete:
                    update(canonical(value))
                    update(b"\n")
                task = verdict.task
                if task is not None:
                    if first == number:
                        checks.add(number, task.to_dict())
                        if flagged and flagged[-1] == number:
                            shown_texts[number] = shown_text(raw)
                        continue
                    verdict = LineResult(
                        number, None, (duplicate_record(number, task.task_id, first, raw),)
                    )
                problems.extend(LintProblem(shown, lint_worded(e)) for e in verdict.errors)
            read = file_signature(f)
            if read != opened:
                raise _changed()
    finally:
        if collecting:
            # Everything allocated meanwhile sits in the youngest generation: the
            # first collection after enable() would walk it all (~1 s per million
            # tasks) to find nothing. freeze() + unfreeze() moves it, unwalked, to
            # the oldest generation, where long-lived objects belong.
            gc.freeze()
            gc.unfreeze()
            gc.enable()
    result.tasks = total
    hashed = PREFIX + records.hexdigest() if complete else None
    errors: list[OSError] = []

    def recall(wanted: set[int]) -> Iterator[tuple[int, Any]]:
        try:
            yield from _recall(dataset, spec, vouch, wanted, shown_texts, read)
        except OSError as exc:
            errors.append(exc)

    return Hashed(hashed, shown_texts, recall, errors)


def _changed() -> FileChanged:
    # The error of a --jobs worker that finds its file replaced, in lint's words.
    return changed("it changed while lint read it; run lint again")


def _recall(
    dataset: Path,
    spec: Any,
    vouch: Callable[[bytes], Any],
    wanted: set[int],
    texts: dict[int, str],
    read: tuple[int, ...],
) -> Iterator[tuple[int, Any]]:
    """The tasks of the ``wanted`` lines, decoded as :func:`read_dataset` decoded them
    (valid tasks all: only those were checked), in a second streaming pass; each
    line's text goes to ``texts``, as its findings will show it.

    :raises FileChanged: the file is not the one the first pass read (``read`` is
        its :func:`~evalspec.io.fileidentity.file_signature` then), or a wanted line
        is no valid task now.
    """
    last = max(wanted, default=0)
    found = 0
    with dataset.open("rb") as f:
        if file_signature(f) != read:
            raise _changed()
        for number, raw in enumerate(bounded_lines(f), start=1):  # as read_dataset
            if number > last:
                break
            if number not in wanted:
                continue
            obj = vouch(raw) if type(raw) is bytes else None
            if obj is None:
                verdict = line_verdict(number, raw, spec)
                if verdict is None or verdict.task is None:
                    raise _changed()
                obj = Decoded(verdict.task.to_dict())
            elif type(obj) is dict:
                obj = Decoded(obj)
            texts[number] = shown_text(raw)
            found += 1
            yield number, obj
        if found != len(wanted) or file_signature(f) != read:
            raise _changed()


_UNPARSED: Any = object()


def _parsed(raw: bytes, number: int) -> Any:
    """The JSON value of one non-blank line as :func:`read_records` reads it, or
    ``_UNPARSED``."""
    text, problem = decode_bytes(line_content(raw, number))
    if problem is not None or text is None:
        return _UNPARSED
    if not text.strip():
        return None  # blank: no verdict either, never hashed
    value, problems = parse_line(text)
    return _UNPARSED if problems else value


def _line_text(raw: bytes) -> str:
    """A line's text, without its end of line, as error records take it."""
    return raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")


def shown_text(raw: bytes) -> str:
    """A line's text as an error record shows it."""
    return shorten(_line_text(raw))


def line_texts(dataset: Path, wanted: set[int]) -> dict[int, str]:
    """The text of each wanted line (for error records), in a second streaming pass."""
    texts: dict[int, str] = {}
    if not wanted:
        return texts
    last = max(wanted)
    with dataset.open("rb") as f:
        for number, raw in enumerate(read_lines(f), start=1):
            if number in wanted:
                texts[number] = _line_text(raw)
            if number >= last:
                break
    return texts
