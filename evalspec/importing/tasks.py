"""``evalspec import``'s work: benchmark rows, through a mapping, to validated task lines.

Every row ends in exactly one of two places: a task line, which the real
validator (:func:`evalspec.validation.validator.iter_validate`, at the mapping's
spec version) admitted, or a :class:`RowReport` naming the row and the rule,
field and message that kept it out. Nothing is dropped, and nothing is written
unless every row made a valid task (:func:`write_tasks`): a partial import would
be a benchmark that silently lost questions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import EvalspecError
from evalspec.importing.mapping import ImportMapping, MappingError
from evalspec.importing.rows import HEADER, Row, RowProblem, input_format, named_format, read_rows
from evalspec.io.atomicfile import write_atomic
from evalspec.io.repository import repository_of
from evalspec.io.wording import counted, one_line
from evalspec.template import Template, TemplateValueError


class FewShotError(EvalspecError):
    """The few-shot source cannot give the examples the mapping asks for."""


@attrs.frozen
class RowReport:
    """A row that gave no task, and why (``row`` 0: the CSV header)."""

    row: int
    line: int
    rule: str
    field: str | None
    message: str
    task_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class ImportedTask:
    """One row's task, as the JSON line written (the validator's input, byte for byte)."""

    row: int
    task_id: str
    line: str


@attrs.frozen
class ImportResult:
    """Every row of the input, as a task or as a report."""

    source: str
    tasks: tuple[ImportedTask, ...]
    problems: tuple[RowReport, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def rows(self) -> int:
        """Rows seen (a header problem is not a row)."""
        return len(self.tasks) + sum(1 for p in self.problems if p.row != HEADER)

    def text(self) -> str:
        """The task file: one JSON line per task, in row order."""
        return "".join(t.line + "\n" for t in self.tasks)


def _specials(source: Path, number: int) -> dict[str, Any]:
    stem = source.name.split(".")[0]
    return {"@row": number, "@stem": stem, "@choices": []}


def _fill(template: Template, field: str, values: Mapping[str, Any], specials: Any) -> str:
    try:
        return template.render(values, specials)
    except TemplateValueError as exc:
        raise _Unmapped(RowProblem(exc.rule, field, str(exc))) from None


def _fill_list(
    templates: Iterable[Template], field: str, values: Mapping[str, Any], specials: Any
) -> list[str]:
    out: list[str] = []
    for template in templates:
        try:
            out.extend(template.values(values, specials))
        except TemplateValueError as exc:
            raise _Unmapped(RowProblem(exc.rule, field, str(exc))) from None
    return out


class _Unmapped(Exception):
    """Internal: a row's template could not be filled."""

    def __init__(self, problem: RowProblem) -> None:
        self.problem = problem


def few_shot_examples(mapping: ImportMapping) -> list[dict[str, str]]:
    """The mapping's few-shot examples: its source's first ``count`` rows, filled in.

    :raises FewShotError: the source is unreadable, short, or a row does not map.
    :raises OSError: it cannot be opened.
    """
    source = mapping.few_shot
    if source is None:
        return []
    # The few-shot file's own suffix first: a test split in Parquet may come with a
    # hand-written JSONL of examples.
    fmt = named_format(source.path) or input_format(source.path, mapping.format)
    examples: list[dict[str, str]] = []
    for row in read_rows(source.path, fmt, source.columns):
        if len(examples) == source.count:
            break
        where = f"few-shot source {source.path}: row {row.number}"
        if row.values is None:
            assert row.problem is not None
            raise FewShotError(f"{where}: {row.problem.rule} — {row.problem.message}")
        specials = _specials(source.path, row.number)
        try:
            specials["@choices"] = _fill_list(mapping.choices, "choices", row.values, specials)
        except _Unmapped as exc:
            p = exc.problem
            raise FewShotError(f"{where}: {p.rule} {p.field} — {p.message}") from None
        examples.append(
            {
                "prompt": _example_text(source.prompt, "prompt", row.values, specials, where),
                "completion": _example_text(
                    source.completion, "completion", row.values, specials, where
                ),
            }
        )
    if len(examples) < source.count:
        raise FewShotError(
            f"few-shot source {source.path} has {counted(len(examples), 'row')}; the mapping "
            f"asks for {source.count}"
        )
    return examples


def _example_text(template: Template, key: str, values: Any, specials: Any, where: str) -> str:
    try:
        return template.render(values, specials)
    except TemplateValueError as exc:
        raise FewShotError(f"{where}: {exc.rule} few_shot.{key} — {exc}") from None


def _build_task(
    mapping: ImportMapping,
    values: Mapping[str, Any],
    specials: dict[str, Any],
    examples: list[dict[str, str]],
) -> dict[str, Any]:
    """The task object of one row, fields in the spec's order (not yet validated).

    :raises _Unmapped: a template cannot be filled from the row.
    """
    specials["@choices"] = _fill_list(mapping.choices, "choices", values, specials)
    task: dict[str, Any] = {
        "task_id": _fill(mapping.task_id, "task_id", values, specials),
        "category": mapping.category,
        "prompt": _fill(mapping.prompt, "prompt", values, specials),
        "targets": _fill_list(mapping.targets, "targets", values, specials),
        "metric_name": mapping.metric,
        "post_process": mapping.post_process,
    }
    if mapping.preamble is not None:
        task["preamble"] = _fill(mapping.preamble, "preamble", values, specials)
    if mapping.code_protocol is not None:
        task["code_protocol"] = mapping.code_protocol
    if examples:
        task["few_shot_examples"] = examples
    if mapping.metadata:
        metadata: dict[str, Any] = {}
        for key, template in mapping.metadata:
            field = f"metadata.{key}"
            hole = template.single
            try:
                # A lone hole keeps the column's JSON type (a number stays a number).
                value = hole.fill(values, specials) if hole is not None else None
            except TemplateValueError as exc:
                raise _Unmapped(RowProblem(exc.rule, field, str(exc))) from None
            if hole is None or not isinstance(value, (str, int, float, bool)):
                value = _fill(template, field, values, specials)
            metadata[key] = value
        task["metadata"] = metadata
    return task


def _mapped(
    mapping: ImportMapping, source: Path, rows: Iterable[Row], examples: list[dict[str, str]]
) -> Iterator[tuple[Row, dict[str, Any] | None, RowReport | None]]:
    for row in rows:
        if row.values is None:
            assert row.problem is not None
            p = row.problem
            yield row, None, RowReport(row.number, row.line, p.rule, p.field, p.message)
            continue
        specials = _specials(source, row.number)
        try:
            yield row, _build_task(mapping, row.values, specials, examples), None
        except _Unmapped as exc:
            p = exc.problem
            yield row, None, RowReport(row.number, row.line, p.rule, p.field, p.message)


def _check_names(mapping: ImportMapping, spec: Any) -> None:
    """The mapping's category, metric and rule, checked once against the spec version, so
    a typo is one line about the mapping rather than the same rejection on every row (the
    validator still checks every task).

    :raises MappingError:
    """
    version = spec.version
    where = f"{mapping.path}: "
    if mapping.category not in spec.categories:
        known = ", ".join(spec.categories)
        raise MappingError(
            f"{where}category: {mapping.category!r} is not in spec version {version} "
            f"(known: {known})"
        )
    pairs = spec.categories[mapping.category]
    for key, value, allowed in (
        ("metric", mapping.metric, pairs.metrics),
        ("post_process", mapping.post_process, pairs.post_processes),
    ):
        if value not in allowed:
            raise MappingError(
                f"{where}{key}: {value!r} is not allowed for category {mapping.category!r} "
                f"at spec version {version} (allowed: {', '.join(allowed)})"
            )


def import_rows(
    source: str | os.PathLike[str],
    mapping: ImportMapping,
    *,
    registry: Any = None,
) -> ImportResult:
    """Map every row of ``source`` and validate every task at ``mapping.spec_version``.

    ``registry`` defaults to the project's (its plugins, at the mapping's version).

    :raises OSError: the input (or the few-shot source) cannot be read.
    :raises MappingError: its category, metric or rule is not in that spec version.
    :raises FewShotError: the few-shot source cannot give its examples.
    :raises evalspec.errors.SpecVersionError: no such spec version.
    :raises evalspec.errors.MissingDependencyError: Parquet without pyarrow.
    """
    from evalspec.registry.build import default_registry
    from evalspec.validation.validator import iter_validate

    if registry is None:
        registry = default_registry(mapping.spec_version)
    elif registry.version != mapping.spec_version:
        registry = registry.at_version(mapping.spec_version)
    _check_names(mapping, registry.spec)
    path = Path(source)
    examples = few_shot_examples(mapping)
    rows = read_rows(path, input_format(path, mapping.format), mapping.columns)
    problems: list[RowReport] = []
    candidates: list[tuple[Row, str]] = []
    for row, task, report in _mapped(mapping, path, rows, examples):
        if report is not None:
            problems.append(report)
        else:
            candidates.append((row, json.dumps(task, ensure_ascii=False)))
    # The validator reads the lines exactly as they will be written; its line k is
    # candidate k, so each verdict goes back to its row.
    tasks: list[ImportedTask] = []
    first_row: dict[str, int] = {}
    verdicts = iter_validate(
        (line.encode("utf-8", "surrogatepass") + b"\n" for _, line in candidates),
        registry=registry,
    )
    for verdict in verdicts:
        row, line = candidates[verdict.line - 1]
        if verdict.task is not None:
            first_row.setdefault(verdict.task.task_id, row.number)
            tasks.append(ImportedTask(row.number, verdict.task.task_id, line))
            continue
        for e in verdict.errors:
            message = e.message
            if e.rule == "duplicate_task_id" and e.task_id in first_row:
                message = f"task_id {e.task_id!r} is already used by row {first_row[e.task_id]}"
            problems.append(RowReport(row.number, row.line, e.rule, e.field, message, e.task_id))
    problems.sort(key=lambda p: p.row)
    return ImportResult(str(source), tuple(tasks), tuple(problems))


def format_report(source: str, report: RowReport) -> str:
    """``file: row N (line L): rule field — message``, the line shown when it differs."""
    if report.row == HEADER:
        where = "header"
    elif report.line and report.line != report.row:
        where = f"row {report.row} (line {report.line})"
    else:
        where = f"row {report.row}"
    field = f" {one_line(report.field)}" if report.field else ""
    return f"{one_line(source)}: {where}: {report.rule}{field} — {one_line(report.message)}"


class OutputExistsError(EvalspecError):
    """The output file exists and ``--force`` was not given."""


def write_tasks(result: ImportResult, output: str | os.PathLike[str], *, force: bool) -> None:
    """Write the task file atomically (a reader sees the old file or the whole new one).

    :raises OutputExistsError: ``output`` exists and not ``force``.
    :raises evalspec.io.atomicfile.UnsafePathError: a symlink leads out of the repository.
    :raises OSError: it cannot be written.
    """
    root = repository_of(os.getcwd())
    written = write_atomic(output, result.text(), root=root, create_only=not force)
    if not written:
        raise OutputExistsError(f"refusing to overwrite {output}: it exists (pass --force)")


__all__ = [
    "FewShotError",
    "ImportResult",
    "ImportedTask",
    "OutputExistsError",
    "RowReport",
    "few_shot_examples",
    "format_report",
    "import_rows",
    "write_tasks",
]
