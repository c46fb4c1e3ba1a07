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

import difflib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any

import attrs

from evalspec.fewshot import find_embedded_few_shot
from evalspec.jsonline import decode_bytes, parse_line
from evalspec.linelimit import OverlongLine, bounded_lines, overlong_record
from evalspec.model import EXAMPLE_FIELDS, ErrorRecord, TaskSpec
from evalspec.model import FIELDS as FIELDS
from evalspec.model import OPTIONAL_FIELDS as OPTIONAL_FIELDS
from evalspec.model import REQUIRED_FIELDS as REQUIRED_FIELDS
from evalspec.rules import MAX_FEW_SHOT
from evalspec.versions import SpecVersion

if TYPE_CHECKING:  # the registry (and pluggy) is imported only when one is built
    from evalspec.registry import Registry

EXAMPLE_KEYS = EXAMPLE_FIELDS  # the field names live in evalspec.model
MAX_TEXT = 1000
"""Error records carry at most this many characters of the offending line."""

_COMBINERS = re.compile(r"[,+|;>\s]+")

Problem = tuple[str, "str | None", str]  # (rule, field, message)


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


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _suggest(name: str, choices: Iterable[str]) -> str:
    names = list(choices)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close and len(name) >= 3:  # "strip" -> "strip_whitespace"
        close = [n for n in names if n.startswith(name) or name in n][:1]
    return f"; did you mean {close[0]!r}?" if close else ""


def _wrong_type(field: str, expected: str, value: Any) -> Problem:
    return ("wrong_type", field, f"{field} must be {expected}, found {_json_type(value)}")


# -- stage 2 -----------------------------------------------------------------


def _check_fields(obj: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    unknown = [k for k in obj if k not in FIELDS]
    for key in unknown:
        msg = f"unknown field {_show(key)}: a task has only {', '.join(FIELDS)}"
        problems.append(("unknown_field", key, msg + _suggest(key, FIELDS)))
    for field in REQUIRED_FIELDS:
        if field not in obj:
            msg = f"required field {field!r} is missing"
            near = difflib.get_close_matches(field, unknown, n=1, cutoff=0.6)
            if near:
                msg += f" (found {near[0]!r}; did you mean {field!r}?)"
            problems.append(("missing_field", field, msg))
    return problems


# -- stage 3 -----------------------------------------------------------------


def _check_types(obj: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for field in ("task_id", "category", "prompt", "metric_name"):
        if not isinstance(obj[field], str):
            problems.append(_wrong_type(field, "a string", obj[field]))
    rule = obj["post_process"]
    if isinstance(rule, list) and rule and all(isinstance(r, str) for r in rule):
        problems.append(
            (
                "combined_post_process",
                "post_process",
                f"post_process takes exactly one rule name, found a list {_show(rule)}; "
                "rules cannot be combined",
            )
        )
    elif not isinstance(rule, str):
        problems.append(_wrong_type("post_process", "a string", rule))
    targets = obj["targets"]
    if not isinstance(targets, list):
        problems.append(_wrong_type("targets", "an array of strings", targets))
    else:
        for i, t in enumerate(targets):
            if not isinstance(t, str):
                problems.append(_wrong_type(f"targets[{i}]", "a string", t))
    if "few_shot_examples" in obj:
        examples = obj["few_shot_examples"]
        if not isinstance(examples, list):
            problems.append(_wrong_type("few_shot_examples", "an array of objects", examples))
        else:
            for i, ex in enumerate(examples):
                path = f"few_shot_examples[{i}]"
                if not isinstance(ex, dict):
                    problems.append(_wrong_type(path, "an object", ex))
                    continue
                for key in EXAMPLE_KEYS:
                    if key in ex and not isinstance(ex[key], str):
                        problems.append(_wrong_type(f"{path}.{key}", "a string", ex[key]))
    if "metadata" in obj and not isinstance(obj["metadata"], dict):
        problems.append(_wrong_type("metadata", "an object", obj["metadata"]))
    return problems


# -- stage 4 -----------------------------------------------------------------


def _unknown_name(kind: str, field: str, rule: str, value: str, spec: SpecVersion) -> Problem:
    table: Mapping[str, Any] = {
        "category": spec.categories,
        "metric": spec.metrics,
        "post_process": spec.post_processes,
    }[kind]
    later = spec.added_in_later(kind, value)
    msg = f"{field} {_show(value)} is not in spec version {spec.version}"
    if later is not None:
        msg += f"; it was added in spec version {later} (validate with --spec-version {later})"
    else:
        msg += f" (known: {', '.join(table)})" + _suggest(value, table)
    return (rule, field, msg)


def _check_rules(obj: Mapping[str, Any], spec: SpecVersion) -> list[Problem]:
    problems: list[Problem] = []
    task_id = obj["task_id"]
    if not task_id or any(c.isspace() for c in task_id):
        what = "is empty" if not task_id else f"contains whitespace ({_show(task_id)})"
        problems.append(("bad_task_id", "task_id", f"task_id {what}; use a non-empty id"))
    if obj["category"] not in spec.categories:
        problems.append(
            _unknown_name("category", "category", "unknown_category", obj["category"], spec)
        )
    prompt: str = obj["prompt"]
    examples = obj.get("few_shot_examples", [])
    if not prompt.strip():
        problems.append(("empty_prompt", "prompt", "prompt is empty or whitespace only"))
    else:
        if prompt[-1].isspace():
            problems.append(
                (
                    "prompt_trailing_whitespace",
                    "prompt",
                    f"prompt ends in whitespace ({_show(prompt[-1])}); strip it",
                )
            )
        pairs = [
            (ex["prompt"], ex["completion"]) for ex in examples if set(ex) == set(EXAMPLE_KEYS)
        ]
        why = find_embedded_few_shot(prompt, pairs)
        if why is not None:
            problems.append(("prompt_embedded_few_shot", "prompt", why))
    if not obj["targets"]:
        problems.append(("empty_targets", "targets", "targets is empty; give at least one"))
    if obj["metric_name"] not in spec.metrics:
        problems.append(
            _unknown_name("metric", "metric_name", "unknown_metric", obj["metric_name"], spec)
        )
    if len(examples) > MAX_FEW_SHOT:
        problems.append(
            (
                "too_many_few_shot",
                "few_shot_examples",
                f"{len(examples)} few-shot examples; at most {MAX_FEW_SHOT} are allowed",
            )
        )
    for i, ex in enumerate(examples):
        if set(ex) != set(EXAMPLE_KEYS):
            missing = [k for k in EXAMPLE_KEYS if k not in ex]
            extra = [k for k in ex if k not in EXAMPLE_KEYS]
            parts = []
            if missing:
                parts.append(f"missing {', '.join(map(repr, missing))}")
            if extra:
                parts.append(f"unexpected {', '.join(_show(k) for k in extra)}")
            problems.append(
                (
                    "few_shot_shape",
                    f"few_shot_examples[{i}]",
                    f"a few-shot example is exactly {{prompt, completion}}: {'; '.join(parts)}",
                )
            )
    rule = obj["post_process"]
    if isinstance(rule, str) and rule not in spec.post_processes:
        parts = [p for p in _COMBINERS.split(rule) if p]
        if len(parts) > 1 and all(p in spec.post_processes for p in parts):
            problems.append(
                (
                    "combined_post_process",
                    "post_process",
                    f"post_process {_show(rule)} combines rules {', '.join(parts)}; exactly one "
                    "rule is allowed (a combination belongs in a new rule)",
                )
            )
        else:
            problems.append(
                _unknown_name("post_process", "post_process", "unknown_post_process", rule, spec)
            )
    return problems


# -- stage 5 -----------------------------------------------------------------


def _check_pairs(obj: Mapping[str, Any], spec: SpecVersion) -> list[Problem]:
    problems: list[Problem] = []
    cat = spec.categories[obj["category"]]
    if obj["metric_name"] not in cat.metrics:
        problems.append(
            (
                "illegal_metric",
                "metric_name",
                f"category {cat.name!r} does not allow metric {obj['metric_name']!r} "
                f"(allowed: {', '.join(cat.metrics)})",
            )
        )
    if obj["post_process"] not in cat.post_processes:
        problems.append(
            (
                "illegal_post_process",
                "post_process",
                f"category {cat.name!r} does not allow post_process {obj['post_process']!r} "
                f"(allowed: {', '.join(cat.post_processes)})",
            )
        )
    if cat.single_target_from:
        targets = obj["targets"]
        if len(targets) != 1 or targets[0] not in cat.single_target_from:
            problems.append(
                (
                    "mcq_target",
                    "targets",
                    f"a {cat.name!r} task has exactly one target, one of "
                    f"{', '.join(cat.single_target_from)}; found {_show(targets)}",
                )
            )
    return problems


def check_object(obj: Any, spec: SpecVersion) -> list[Problem]:
    """Stages 2-5 on a decoded value; the problems of the first stage that fails."""
    if not isinstance(obj, dict):
        return [("not_object", None, f"a task is a JSON object, found {_json_type(obj)}")]
    for stage in (_check_fields, _check_types):
        problems = stage(obj)
        if problems:
            return problems
    for stage2 in (_check_rules, _check_pairs):
        problems = stage2(obj, spec)
        if problems:
            return problems
    return []


# -- entry points --------------------------------------------------------------


def _resolve(registry: Registry | None, spec_version: int | None) -> SpecVersion:
    if registry is None:
        from evalspec.registry import default_registry

        return default_registry(spec_version).spec
    if spec_version is not None and spec_version != registry.version:
        return registry.at_version(spec_version).spec
    return registry.spec


def _short(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _records(line: int, problems: list[Problem], obj: Any, text: str) -> tuple[ErrorRecord, ...]:
    task_id = obj.get("task_id") if isinstance(obj, dict) else None
    if not isinstance(task_id, str):
        task_id = None
    shown = _short(text)
    return tuple(ErrorRecord(line, r, f, m, task_id, shown) for r, f, m in problems)


def _verdict_on_text(line: int, text: str, spec: SpecVersion) -> tuple[Any, LineResult]:
    obj, parse_problems = parse_line(text)
    if parse_problems:
        problems = [(p.rule, p.field, p.message) for p in parse_problems]
        return None, LineResult(line, None, _records(line, problems, None, text))
    problems = check_object(obj, spec)
    if problems:
        return obj, LineResult(line, None, _records(line, problems, obj, text))
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
        return None, list(_records(line, problems, task, text))
    return TaskSpec.from_dict(task), []


Source = str | os.PathLike[str] | IO[bytes] | Iterable[bytes]
"""A JSONL input: a path, a binary file, or an iterable of byte lines."""


def read_lines(source: Source) -> Iterator[bytes]:
    """The byte lines of ``source``, split at ``\\n`` only (a path is opened in binary).

    The one line reader: validation, predictions, the parallel validator's
    blocks and the evals-as-code records all split lines with it. Each line
    keeps its ending; :func:`line_content` drops it.
    A line over :func:`evalspec.linelimit.max_line_bytes` comes as an
    :class:`~evalspec.linelimit.OverlongLine` and is the last one read.
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


def line_verdict(number: int, raw: bytes, spec: SpecVersion) -> LineResult | None:
    """The precise path on one line's bytes; ``None`` for a blank line."""
    if isinstance(raw, OverlongLine):
        return LineResult(number, None, (overlong_record(number, raw),))
    raw = line_content(raw, number)
    text, problem = decode_bytes(raw)
    if problem is not None:
        shown = _short(raw.decode("utf-8", "replace"))
        return LineResult(
            number,
            None,
            (ErrorRecord(number, problem.rule, problem.field, problem.message, None, shown),),
        )
    assert text is not None
    if not text.strip():
        return None
    return _verdict_on_text(number, text, spec)[1]


def line_content(raw: bytes, number: int) -> bytes:
    """Line ``number`` without its ``\\n``/``\\r\\n`` ending (and the file's BOM on line 1)."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return raw


def duplicate_record(number: int, task_id: str, first: int, raw: bytes) -> ErrorRecord:
    """The ``duplicate_task_id`` error for a valid line whose id line ``first`` already used."""
    text = line_content(raw, number).decode("utf-8")
    msg = f"task_id {task_id!r} is already used on line {first}"
    return ErrorRecord(number, "duplicate_task_id", "task_id", msg, task_id, _short(text))


def _iter_validate(source: Source, spec: SpecVersion, *, fast: bool) -> Iterator[LineResult]:
    # --- fast path hook: evalspec.fastpath vouches for certainly-valid lines; every
    # other line takes the precise path below, which alone writes error records.
    vouch = None
    if fast:
        from evalspec.fastpath import FastPath

        vouch = FastPath(spec).vouch
    # --- end of hook
    first_seen: dict[str, int] = {}
    for number, raw in enumerate(read_lines(source), start=1):
        obj = vouch(raw) if vouch is not None and not isinstance(raw, OverlongLine) else None
        if obj is not None:
            result = LineResult(number, TaskSpec.from_dict(obj), ())
        else:
            verdict = line_verdict(number, raw, spec)
            if verdict is None:
                continue
            result = verdict
        if result.task is not None:
            tid = result.task.task_id
            first = first_seen.get(tid)
            if first is not None:
                result = LineResult(number, None, (duplicate_record(number, tid, first, raw),))
            else:
                first_seen[tid] = number
        yield result


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
