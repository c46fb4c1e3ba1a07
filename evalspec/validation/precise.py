"""The precise path's checks of one line (stages 1-5), building no value object.

:mod:`evalspec.validation.validator` wraps these in
:class:`~evalspec.validation.validator.LineResult` and
:class:`~evalspec.model.TaskSpec`; the command's chunk checker
(:mod:`evalspec.validation.engine`) needs only the valid line's task id and an
invalid line's plain rows (:func:`line_rows`), which the parent of ``--jobs N``
builds into records once, at the numbers it reports. Nothing here imports attrs:
the value classes (:class:`~evalspec.model.ErrorRecord`) are imported only by
:func:`records`, for an invalid line, so a warm ``evalspec validate`` of a valid
file never loads them, and a ``--jobs`` worker never does.
"""

from __future__ import annotations

import functools

from evalspec.fields import EXAMPLE_FIELDS, FIELDS, REQUIRED_FIELDS
from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.linelimit import OverlongLine, overlong_message
from evalspec.rules import MAX_FEW_SHOT
from evalspec.validation.embedded import find_embedded_few_shot

# Not `from typing import ...`: typing costs milliseconds at start-up, and these
# names are only annotations. Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from evalspec.model import ErrorRecord
    from evalspec.registry.tables import AnySpec

EXAMPLE_KEYS = EXAMPLE_FIELDS
MAX_TEXT = 1000
"""Error records carry at most this many characters of the offending line."""

_COMBINERS_PATTERN = r"[,+|;>\s]+"
"""What joins rules in a combined post_process (compiled only for an invalid line:
json and re are not imported by the checks of a valid one, see evalspec.io.quickjson;
``evalspec.validation.validator._COMBINERS`` is it compiled)."""


LineProblem = tuple[str, "str | None", str]  # (rule, field, message)
ErrorRow = tuple[str, "str | None", str, "str | None", str]
"""An error record without its line number: (rule, field, message, task_id, text), the
fields of :class:`~evalspec.model.ErrorRecord` after ``line``, in its order."""


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
    import json  # only for an invalid line's message

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _suggest(name: str, choices: Iterable[str]) -> str:
    names = tuple(choices)
    close = _closest(name, names)
    if close is None and len(name) >= 3:  # "strip" -> "strip_whitespace"
        close = next((n for n in names if n.startswith(name) or name in n), None)
    return f"; did you mean {close!r}?" if close is not None else ""


_CACHED_CHARS = 4096
"""Names longer than this (all together) are matched afresh each time: a cache
must not keep a hostile file's megabyte-long names alive."""


def _closest(name: str, names: tuple[str, ...]) -> str | None:
    """The name of ``names`` closest to ``name`` (difflib, cutoff 0.6), if any.

    A file's misspellings repeat (one generator, one typo, thousands of lines),
    and difflib costs ~40 us a call: the answers for short names are cached.
    """
    if len(name) + sum(map(len, names)) > _CACHED_CHARS:
        return _closest_uncached(name, names)
    return _closest_cached(name, names)


def _closest_uncached(name: str, names: tuple[str, ...]) -> str | None:
    import difflib  # only for an invalid line: slow to import

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


_closest_cached = functools.lru_cache(maxsize=512)(_closest_uncached)


def _wrong_type(field: str, expected: str, value: Any) -> LineProblem:
    return ("wrong_type", field, f"{field} must be {expected}, found {_json_type(value)}")


# -- stage 2 -----------------------------------------------------------------


def _check_fields(obj: Mapping[str, Any], spec: AnySpec) -> list[LineProblem]:
    problems: list[LineProblem] = []
    known = FIELDS + tuple(spec.fields) if spec.fields else FIELDS
    unknown = [k for k in obj if k not in known]
    for key in unknown:
        msg = f"unknown field {_show(key)}: a task has only {', '.join(known)}"
        later = spec.added_in_later("field", key) if isinstance(key, str) else None
        if later is not None:
            msg += f"; {key!r} was added in spec version {later} (validate with --spec-version "
            msg += f"{later})"
        else:
            msg += _suggest(key, known)
        problems.append(("unknown_field", key, msg))
    for field in REQUIRED_FIELDS:
        if field not in obj:
            msg = f"required field {field!r} is missing"
            near = _closest(field, tuple(unknown)) if unknown else None
            if near is not None:
                msg += f" (found {near!r}; did you mean {field!r}?)"
            problems.append(("missing_field", field, msg))
    return problems


# -- stage 3 -----------------------------------------------------------------


def _check_types(obj: Mapping[str, Any], spec: AnySpec) -> list[LineProblem]:
    problems: list[LineProblem] = []
    for field in spec.fields:
        if field in obj and not isinstance(obj[field], str):
            problems.append(_wrong_type(field, "a string", obj[field]))
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


def _unknown_name(kind: str, field: str, rule: str, value: str, spec: AnySpec) -> LineProblem:
    table: Mapping[str, Any] = {
        "category": spec.categories,
        "metric": spec.metrics,
        "post_process": spec.post_processes,
    }[kind]
    later = spec.added_in_later(kind, value)
    msg = f"{field} {_show(value)} is not in spec version {spec.version}"
    if later is not None:
        msg += f"; it was added in spec version {later} ({LATER_VERSION_FIX.format(version=later)})"
    else:
        hint = _alias_hint(kind, value, tuple(table)) or _suggest(value, table)
        msg += f" (known: {', '.join(table)})" + hint
    return (rule, field, msg)


LATER_VERSION_FIX = "validate with --spec-version {version}"
"""How a message about a name a later spec version adds says to use that version.
``evalspec lint`` words it as its own fix (the data card's ``spec_version``)."""

_MAX_ALIAS = 100
"""Longer names are not looked up among the aliases (a hostile line's megabyte name)."""


def _alias_hint(kind: str, value: str, names: tuple[str, ...]) -> str:
    """``; did you mean 'code_exec'? ...`` when ``value`` is an alias the registered
    category or metric of that name declares (``Metric.aliases``); else ``""``."""
    if kind == "post_process" or len(value) > _MAX_ALIAS:
        return ""
    from evalspec.io.governing import governing_directory

    return _alias_hint_in(governing_directory(), kind, value, names)


@functools.lru_cache(maxsize=256)
def _alias_hint_in(project_dir: str, kind: str, value: str, names: tuple[str, ...]) -> str:
    # Only for an invalid line. The aliases come with the snapshot of the spec in
    # force, so no plugin (nor pluggy, nor attrs) is loaded for them when it is
    # current; the project directory is part of the key because its plugins declare
    # aliases too.
    from fnmatch import fnmatchcase

    declared = _declared_aliases(project_dir)
    if declared is None:
        return ""  # a hint never turns a verdict into an error of its own
    folded = value.lower()
    for name, aliases, alias_hint in declared[kind]:
        if name in names and any(fnmatchcase(folded, a.lower()) for a in aliases):
            note = f" {alias_hint}" if alias_hint else ""
            return f"; did you mean {name!r}?{note}"
    return ""


@functools.lru_cache(maxsize=16)
def _declared_aliases(project_dir: str) -> dict[str, tuple[Any, ...]] | None:
    # Once per project and process, not once per name: reading and verifying the
    # snapshot costs about a millisecond, and a file of distinct unknown names (each
    # a new key of _alias_hint_in's cache) would pay it on every line.
    from evalspec.errors import EvalspecError
    from evalspec.registry.snapshot import aliases_in_force

    try:
        return aliases_in_force()
    except EvalspecError:
        return None


def _check_rules(obj: Mapping[str, Any], spec: AnySpec) -> list[LineProblem]:
    problems: list[LineProblem] = []
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
    for field in spec.fields.values():
        value = obj.get(field.name)
        if value is not None and field.choices and value not in field.choices:
            problems.append(
                (
                    "bad_field_value",
                    field.name,
                    f"{field.name} {_show(value)} is not one of {', '.join(field.choices)}"
                    + _suggest(value, field.choices),
                )
            )
    waived = _waived(obj, spec) if spec.waivers else ()
    if not prompt.strip():
        problems.append(("empty_prompt", "prompt", "prompt is empty or whitespace only"))
    else:
        if prompt[-1].isspace() and "prompt_trailing_whitespace" not in waived:
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
        import re

        parts = [p for p in re.split(_COMBINERS_PATTERN, rule) if p]
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


def _waived(obj: Mapping[str, Any], spec: AnySpec) -> tuple[str, ...]:
    """The field rules a :class:`~evalspec.versions.WaiveFieldRule` lifts for this task."""
    category = obj["category"]
    return tuple(
        rule
        for rule, in_category, field, value in spec.waivers
        if category == in_category and obj.get(field) == value
    )


# -- stage 5 -----------------------------------------------------------------


def _check_pairs(obj: Mapping[str, Any], spec: AnySpec) -> list[LineProblem]:
    problems: list[LineProblem] = []
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
    for field in spec.fields.values():
        if field.name in obj and field.categories and cat.name not in field.categories:
            problems.append(
                (
                    "illegal_field",
                    field.name,
                    f"category {cat.name!r} does not allow field {field.name!r} "
                    f"(only {', '.join(field.categories)} may carry it)",
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


def check_object(obj: Any, spec: AnySpec) -> list[LineProblem]:
    """Stages 2-5 on a decoded value; the problems of the first stage that fails."""
    if not isinstance(obj, dict):
        return [("not_object", None, f"a task is a JSON object, found {_json_type(obj)}")]
    for stage in (_check_fields, _check_types, _check_rules, _check_pairs):
        problems = stage(obj, spec)
        if problems:
            return problems
    return []


def _short(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def line_content(raw: bytes, number: int) -> bytes:
    """Line ``number`` without its ``\\n``/``\\r\\n`` ending (and the file's BOM on line 1)."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return raw


def rows(problems: list[LineProblem], obj: Any, text: str) -> list[ErrorRow]:
    """The error rows of a line with ``problems`` (``text`` is shown shortened)."""
    task_id = obj.get("task_id") if isinstance(obj, dict) else None
    if not isinstance(task_id, str):
        task_id = None
    shown = _short(text)
    return [(r, f, m, task_id, shown) for r, f, m in problems]


def records(line: int, errors: list[ErrorRow]) -> tuple[ErrorRecord, ...]:
    """``errors`` as the error records of line ``line``."""
    from evalspec.model import ErrorRecord

    return tuple(ErrorRecord(line, *e) for e in errors)


def text_outcome(line: int, text: str, spec: AnySpec) -> tuple[Any, tuple[ErrorRecord, ...]]:
    """Stages 1-5 on one decoded line: ``(task object, ())`` when it is valid, else
    ``(the decoded value or None, its error records)``."""
    obj, errors = text_rows(text, spec)
    return obj, (records(line, errors) if errors else ())


def text_rows(text: str, spec: AnySpec) -> tuple[Any, list[ErrorRow]]:
    """:func:`text_outcome` with error rows for records."""
    obj, parse_problems = parse_line(text)
    if parse_problems:
        return None, rows([(p.rule, p.field, p.message) for p in parse_problems], None, text)
    problems = check_object(obj, spec)
    if problems:
        return obj, rows(problems, obj, text)
    return obj, []


def line_outcome(
    number: int, raw: bytes, spec: AnySpec
) -> tuple[Any, tuple[ErrorRecord, ...]] | None:
    """The precise path on one line's bytes, as :func:`text_outcome` answers;
    ``None`` for a blank line."""
    outcome = line_rows(number, raw, spec)
    if outcome is None:
        return None
    obj, errors = outcome
    return obj, (records(number, errors) if errors else ())


def line_rows(number: int, raw: bytes, spec: AnySpec) -> tuple[Any, list[ErrorRow]] | None:
    """:func:`line_outcome` with error rows for records (``number`` decides only
    whether a BOM may start the line): what a ``--jobs`` worker sends."""
    if isinstance(raw, OverlongLine):
        return None, [overlong_row(raw)]
    raw = line_content(raw, number)
    text, problem = decode_bytes(raw)
    if problem is not None:
        shown = raw.decode("utf-8", "replace")
        return None, rows([(problem.rule, problem.field, problem.message)], None, shown)
    assert text is not None
    if not text.strip():
        return None
    return text_rows(text, spec)


def overlong_row(shown: bytes) -> ErrorRow:
    """The ``invalid_json`` error of an overlong line (its first bytes ``shown``)."""
    text = shown.decode("utf-8", "replace") + "…"
    return ("invalid_json", None, overlong_message(), None, text)


def overlong_record(number: int, shown: bytes) -> ErrorRecord:
    """The ``invalid_json`` error of an overlong line ``number`` (its first bytes shown)."""
    return records(number, [overlong_row(shown)])[0]
