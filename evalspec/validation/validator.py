"""The validator: every line of a task file admitted, or rejected with reasons.

Each line goes through the stages of the spec's flowchart, in order:

1. parse (``invalid_json``, ``duplicate_key``, ``not_object``)
2. fields present (``missing_field``, ``unknown_field``)
3. types (``wrong_type``; a list of rule names is ``combined_post_process``)
4. field rules (task id, category, prompt, targets, metric, few-shot, rule)
5. category pairs (``illegal_metric``, ``illegal_post_process``, ``mcq_target``)
6. task-id uniqueness, among lines that passed stages 1-5

The first failing stage stops the line; inside a stage every violation is
reported. A bad line never stops the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from operator import itemgetter
from typing import IO, TYPE_CHECKING, Any

import attrs

# Stages 1-5 live in evalspec.validation.precise (no value classes, so the command's warm
# path need not import attrs); re-exported here, where they always were.
from evalspec.fields import FIELDS as FIELDS
from evalspec.fields import OPTIONAL_FIELDS as OPTIONAL_FIELDS
from evalspec.fields import REQUIRED_FIELDS as REQUIRED_FIELDS
from evalspec.io.jsonline import decode_bytes
from evalspec.io.linelimit import OverlongLine, bounded_lines
from evalspec.model import ErrorRecord, TaskSpec
from evalspec.validation.precise import (
    _COMBINERS_PATTERN,
    _short,
    _show,
    line_outcome,
    records,
    rows,
    text_outcome,
)
from evalspec.validation.precise import EXAMPLE_KEYS as EXAMPLE_KEYS
from evalspec.validation.precise import MAX_TEXT as MAX_TEXT
from evalspec.validation.precise import check_object as check_object
from evalspec.validation.precise import line_content as line_content

_COMBINERS = re.compile(_COMBINERS_PATTERN)
"""What joins rules in a combined post_process (the precise path's pattern)."""

if TYPE_CHECKING:  # the registry (and pluggy) is imported only when one is built
    from evalspec.registry.build import Registry
    from evalspec.registry.tables import AnySpec
    from evalspec.versions import SpecVersion


@attrs.frozen
class LineResult:
    """The verdict on one non-blank line: a task, or the errors that rejected it."""

    line: int
    task: TaskSpec | None
    errors: tuple[ErrorRecord, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


@attrs.define
class ValidationResult:
    """What :func:`validate_file` returns; unpacks as ``validated, errors``."""

    path: str
    validated: list[TaskSpec] = attrs.Factory(list)
    errors: list[ErrorRecord] = attrs.Factory(list)
    total: int = 0
    invalid: int = 0

    @property
    def valid(self) -> int:
        return self.total - self.invalid

    @property
    def ok(self) -> bool:
        return not self.errors

    def __iter__(self) -> Iterator[Any]:
        yield self.validated
        yield self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "total": self.total,
            "valid": self.valid,
            "invalid": self.invalid,
            "errors": [e.to_dict() for e in self.errors],
        }


# -- entry points --------------------------------------------------------------


def _resolve(registry: Registry | None, spec_version: int | None) -> SpecVersion:
    if registry is None:
        from evalspec.registry.build import default_registry

        return default_registry(spec_version).spec
    if spec_version is not None and spec_version != registry.version:
        return registry.at_version(spec_version).spec
    return registry.spec


def _verdict_on_text(line: int, text: str, spec: AnySpec) -> tuple[Any, LineResult]:
    obj, errors = text_outcome(line, text, spec)
    if errors:
        return obj, LineResult(line, None, errors)
    return obj, LineResult(line, TaskSpec.from_dict(obj), ())


def validate_task(
    task: Mapping[str, Any] | str | bytes,
    *,
    registry: Registry | None = None,
    spec_version: int | None = None,
    line: int = 1,
) -> tuple[TaskSpec | None, list[ErrorRecord]]:
    """Validate one task, given as a decoded object or as one JSON line.

    Uniqueness of ``task_id`` is a property of a file, so it is not checked
    here. Returns ``(task, [])`` or ``(None, errors)``.
    """
    spec = _resolve(registry, spec_version)
    if isinstance(task, bytes):
        text, problem = decode_bytes(task)
        if problem is not None:
            shown = _short(task.decode("utf-8", "replace"))
            return None, [
                ErrorRecord(line, problem.rule, problem.field, problem.message, None, shown)
            ]
        task = text  # type: ignore[assignment]
    if isinstance(task, str):
        _, result = _verdict_on_text(line, task, spec)
        return result.task, list(result.errors)
    assert not isinstance(task, bytes)
    text = _show(task, MAX_TEXT)
    problems = check_object(task, spec)
    if problems:
        return None, list(records(line, rows(problems, task, text)))
    return TaskSpec.from_dict(task), []


Source = str | os.PathLike[str] | IO[bytes] | Iterable[bytes]
"""A JSONL input: a path, a binary file, or an iterable of byte lines."""


def read_lines(source: Source) -> Iterator[bytes]:
    """The byte lines of ``source``, split at ``\\n`` only (a path is opened in binary).

    The one line reader: validation, predictions, the parallel validator's
    blocks and the evals-as-code records all split lines with it. Each line
    keeps its ending; :func:`line_content` drops it.
    A line over :func:`evalspec.io.linelimit.max_line_bytes` comes as an
    :class:`~evalspec.io.linelimit.OverlongLine` and is the last one read.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            yield from bounded_lines(f)
    elif hasattr(source, "readline"):
        yield from bounded_lines(source)  # type: ignore[arg-type]
    else:
        yield from source


def iter_validate(
    source: Source,
    *,
    registry: Registry | None = None,
    spec_version: int | None = None,
) -> Iterator[LineResult]:
    """Validate a task file line by line, yielding one :class:`LineResult` per non-blank line.

    ``source`` is a path, a binary file, or an iterable of byte lines. Lines
    end only at ``\\n`` (a ``\\r`` before it is dropped); a UTF-8 BOM at the
    start is accepted; blank lines are skipped but keep their line numbers.
    Only the task ids seen so far are kept in memory, not the tasks.
    """
    return _iter_validate(source, _resolve(registry, spec_version), fast=True)


def line_verdict(number: int, raw: bytes, spec: AnySpec) -> LineResult | None:
    """The precise path on one line's bytes; ``None`` for a blank line."""
    outcome = line_outcome(number, raw, spec)
    if outcome is None:
        return None
    obj, errors = outcome
    if errors:
        return LineResult(number, None, errors)
    return LineResult(number, TaskSpec.from_dict(obj), ())


def duplicate_record(number: int, task_id: str, first: int, raw: bytes) -> ErrorRecord:
    """The ``duplicate_task_id`` error for a valid line whose id line ``first`` already used."""
    text = line_content(raw, number).decode("utf-8")
    msg = f"task_id {task_id!r} is already used on line {first}"
    return ErrorRecord(number, "duplicate_task_id", "task_id", msg, task_id, _short(text))


def line_outcomes(
    lines: Iterable[bytes],
    spec: AnySpec,
    vouch: Callable[[bytes], Any] | None,
    task_id: Callable[[Any], str],
    first_seen: dict[str, int],
) -> Iterator[tuple[int, bytes, Any, LineResult | None, int]]:
    """The validator's loop: per line of ``lines``, ``(number, raw, vouched, verdict,
    first)``.

    A line the fast path's ``vouch`` decodes (``vouched``: what it returned, never
    ``None``) is a valid task and gets no ``verdict``; any other line takes the
    precise path (``verdict``: :func:`line_verdict`, ``None`` for a blank line). For
    a valid task, ``first`` is the first line of its id (``task_id`` of ``vouched``,
    or the verdict's task's id) in ``first_seen``, which this fills: the line is a
    duplicate when ``first != number``. Otherwise ``first`` is 0. Callers decide
    what a duplicate means (:func:`duplicate_record`): ``iter_validate`` reports it,
    ``evalspec lint`` also hashes the line.
    """
    for number, raw in enumerate(lines, start=1):
        # An overlong line is its first bytes only: never vouched for.
        vouched = vouch(raw) if vouch is not None and not isinstance(raw, OverlongLine) else None
        if vouched is not None:
            yield number, raw, vouched, None, first_seen.setdefault(task_id(vouched), number)
            continue
        verdict = line_verdict(number, raw, spec)
        task = None if verdict is None else verdict.task
        first = 0 if task is None else first_seen.setdefault(task.task_id, number)
        yield number, raw, None, verdict, first


def _iter_validate(source: Source, spec: AnySpec, *, fast: bool) -> Iterator[LineResult]:
    # --- fast path hook: evalspec.validation.fast vouches for certainly-valid lines; every
    # other line takes the precise path below, which alone writes error records.
    vouch = None
    if fast:
        from evalspec.validation.fast import FastPath

        vouch = FastPath(spec).vouch
    # --- end of hook
    task_id = itemgetter("task_id")
    for number, raw, obj, verdict, first in line_outcomes(
        read_lines(source), spec, vouch, task_id, {}
    ):
        if obj is not None:
            tid = task_id(obj)
            if first == number:
                yield LineResult(number, TaskSpec.from_dict(obj), ())
                continue
        elif verdict is None:
            continue  # a blank line
        elif verdict.task is None or first == number:
            yield verdict
            continue
        else:
            tid = verdict.task.task_id
        yield LineResult(number, None, (duplicate_record(number, tid, first, raw),))


def validate_file(
    source: Source,
    *,
    registry: Registry | None = None,
    spec_version: int | None = None,
) -> ValidationResult:
    """Validate a whole task file; the result unpacks as ``validated, errors``.

    :raises OSError: the file cannot be opened or read.
    """
    path = (
        os.fspath(source)
        if isinstance(source, (str, os.PathLike))
        else getattr(source, "name", "<stream>")
    )
    result = ValidationResult(path=str(path))
    for verdict in iter_validate(source, registry=registry, spec_version=spec_version):
        result.total += 1
        if verdict.task is not None:
            result.validated.append(verdict.task)
        else:
            result.invalid += 1
            result.errors.extend(verdict.errors)
    return result
