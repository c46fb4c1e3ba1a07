"""Public hypothesis strategies for evalspec tasks and model outputs.

Install with ``pip install 'evalspec-contract[hypothesis]'``; this is the only evalspec
module that imports hypothesis. Three entry points:

:func:`valid_tasks`
    task objects (``dict``, ready for ``json.dumps``) that the validator
    admits at a given registry and spec version: every category, every legal
    ``(metric, post_process)`` pair of the version table, few-shot lists up to
    :data:`evalspec.rules.MAX_FEW_SHOT`, unicode everywhere the spec allows
    it (prompts end in non-whitespace and hold no few-shot block, task ids
    have no ``str.isspace`` character).

:func:`broken_tasks`
    values that break exactly one named rule of :data:`evalspec.rules.RULES`.
    Most are task objects; the parse-stage rules (``invalid_json``,
    ``duplicate_key``, ``not_object``) give the raw bytes of one line, and
    ``duplicate_task_id`` gives the bytes of two lines.

:func:`model_outputs`
    text a model might return, shaped for one post-process rule by the
    ``shaped_outputs`` the rule declares (fenced code blocks for a code
    extractor, say), mixed with any ``str`` (lone surrogates included).

Examples::

    import json
    from hypothesis import given
    from evalspec import post_process, validate_task
    from evalspec.testing.strategies import broken_tasks, model_outputs, valid_tasks

    @given(valid_tasks())
    def test_my_loader_reads_every_valid_task(task):
        my_loader(json.dumps(task))

    @given(broken_tasks("mcq_target"))
    def test_my_runner_refuses_bad_mcq(task):
        _, errors = validate_task(task)
        assert {e.rule for e in errors} == {"mcq_target"}

    @given(model_outputs("extract_code_block"))
    def test_code_rule_is_total(text):
        post_process("extract_code_block", text)

Every strategy draws names with ``sampled_from`` over sorted lists, so a
shrunk counterexample is stable across runs and hash seeds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from hypothesis import assume
from hypothesis import strategies as st

from evalspec.errors import EvalspecError
from evalspec.model import PostProcessRule
from evalspec.registry.build import Registry, default_registry
from evalspec.rules import MAX_FEW_SHOT, RULES
from evalspec.validation.embedded import find_embedded_few_shot
from evalspec.validation.validator import EXAMPLE_KEYS, FIELDS, REQUIRED_FIELDS
from evalspec.versions import SpecVersion

Task: TypeAlias = dict[str, Any]
Broken: TypeAlias = "Task | bytes"

WHITESPACE: tuple[str, ...] = tuple(c for c in map(chr, range(0x3001)) if c.isspace())
"""Every character for which ``str.isspace`` is true (none lies above U+3000)."""

PARSE_RULES = ("invalid_json", "duplicate_key", "not_object")
"""Rules whose broken value is the bytes of one line rather than an object."""

MULTI_LINE_RULES = ("duplicate_task_id",)
"""Rules whose broken value is the bytes of several lines."""


class StrategyError(EvalspecError):
    """A strategy was asked for something the registry cannot provide."""


# -- building blocks -------------------------------------------------------------------


def _spec(registry: Registry | None, spec_version: int | None) -> SpecVersion:
    if registry is None:
        return default_registry(spec_version).spec
    return registry.spec if spec_version is None else registry.at_version(spec_version).spec


def text_chars() -> st.SearchStrategy[str]:
    """Any character that survives UTF-8 and JSON (every code point but surrogates)."""
    return st.characters(codec="utf-8")


def any_text(*, min_size: int = 0, max_size: int | None = None) -> st.SearchStrategy[str]:
    """Any ``str``, lone surrogates included (what a model's output may hold in memory)."""
    # Surrogates drawn as their own alternative: as one category among many
    # they are a sliver of the code points and a rule that chokes on them
    # would rarely be caught.
    # (hypothesis merges a union of `characters` strategies by code-point count,
    # so the surrogates come from a strategy of another kind).
    surrogates = st.integers(0xD800, 0xDFFF).map(chr)
    mixed = surrogates | st.characters(categories=["Cs", "L", "Zs", "Cc"])
    return st.text(st.characters(), min_size=min_size, max_size=max_size) | st.text(
        mixed, min_size=min_size, max_size=max_size
    )


def json_text(*, min_size: int = 0, max_size: int | None = 40) -> st.SearchStrategy[str]:
    """Unicode text that a JSON line can carry."""
    return st.text(text_chars(), min_size=min_size, max_size=max_size)


def task_ids() -> st.SearchStrategy[str]:
    """Non-empty ids without any ``str.isspace`` character."""
    return st.text(
        st.characters(codec="utf-8", exclude_characters=WHITESPACE), min_size=1, max_size=30
    )


def prompts(
    examples: Sequence[Mapping[str, str]] = (),
) -> st.SearchStrategy[str]:
    """Legal prompts: not blank, no trailing whitespace, no few-shot block inside.

    ``examples`` are the task's own few-shot examples, which the prompt must
    not already contain.
    """
    pairs = [(ex["prompt"], ex["completion"]) for ex in examples]
    return json_text(min_size=1, max_size=80).filter(
        lambda p: (
            bool(p.strip()) and not p[-1].isspace() and find_embedded_few_shot(p, pairs) is None
        )
    )


def few_shot_examples(
    *, min_size: int = 0, max_size: int = MAX_FEW_SHOT
) -> st.SearchStrategy[list[dict[str, str]]]:
    """Lists of well-formed ``{prompt, completion}`` examples."""
    example = st.fixed_dictionaries({"prompt": json_text(), "completion": json_text()})
    return st.lists(example, min_size=min_size, max_size=max_size)


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value that a strict parser reads back unchanged."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**64)
        | st.floats(allow_nan=False, allow_infinity=False)
        | json_text()
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_text(), inner, max_size=4),
        max_leaves=max_leaves,
    )


def metadata() -> st.SearchStrategy[dict[str, Any]]:
    """A task's free-form ``metadata`` object."""
    return st.dictionaries(json_text(), json_values(), max_size=4)


def targets_for(category: Any) -> st.SearchStrategy[list[str]]:
    """Targets legal for a :class:`evalspec.versions.CategoryPairs`."""
    if category.single_target_from:
        return st.sampled_from(sorted(category.single_target_from)).map(lambda t: [t])
    return st.lists(json_text(), min_size=1, max_size=4)


# -- valid tasks -----------------------------------------------------------------------


def valid_tasks(
    registry: Registry | None = None,
    spec_version: int | None = None,
    *,
    categories: Sequence[str] | None = None,
) -> st.SearchStrategy[Task]:
    """Task objects the validator admits at ``spec_version`` (default: the registry's).

    :param registry: the registry whose version table is used (default: the
        installed plugins).
    :param categories: draw only from these categories (default: all in force).
    """
    spec = _spec(registry, spec_version)
    names = sorted(spec.categories if categories is None else categories)
    if not names:
        raise StrategyError(f"spec version {spec.version} has no category to draw tasks from")
    unknown = [n for n in names if n not in spec.categories]
    if unknown:
        raise StrategyError(f"not a category of spec version {spec.version}: {unknown}")
    # One flat list of (category, metric, rule) triples, so every legal pair is
    # equally likely and shrinks towards the first in sorted order.
    triples = sorted(
        (name, metric, rule)
        for name in names
        for metric in spec.categories[name].metrics
        for rule in spec.categories[name].post_processes
    )
    targets = {name: targets_for(spec.categories[name]) for name in names}
    # Each optional field a migration added (spec v2's preamble, code_protocol), left
    # out or drawn: one of its choices, else any text; only where its categories allow.
    optional = {
        name: [
            (field.name, st.none() | (st.sampled_from(field.choices) if field.choices else _TEXT))
            for field in spec.fields.values()
            if not field.categories or name in field.categories
        ]
        for name in names
    }
    return _tasks(st.sampled_from(triples), targets, optional)


# Built once: constructing strategies inside a draw costs more than drawing from them.
_EXAMPLES = st.none() | few_shot_examples()
_METADATA = st.none() | metadata()
_TASK_IDS = task_ids()
_TEXT = json_text(max_size=80)
_PROMPT_TEXT = json_text(min_size=1, max_size=80).filter(
    lambda p: bool(p.strip()) and not p[-1].isspace()
)


@st.composite
def _tasks(
    draw: st.DrawFn,
    triples: st.SearchStrategy[tuple[str, str, str]],
    targets: Mapping[str, st.SearchStrategy[list[str]]],
    optional: Mapping[str, list[tuple[str, st.SearchStrategy[str | None]]]],
) -> Task:
    category, metric, rule = draw(triples)
    examples = draw(_EXAMPLES)
    pairs = [(ex["prompt"], ex["completion"]) for ex in examples or ()]
    prompt = draw(_PROMPT_TEXT)
    # Rare: the drawn prompt already holds a few-shot block; discard this draw.
    assume(find_embedded_few_shot(prompt, pairs) is None)
    task: Task = {
        "task_id": draw(_TASK_IDS),
        "category": category,
        "prompt": prompt,
        "targets": draw(targets[category]),
        "metric_name": metric,
        "post_process": rule,
    }
    if examples is not None:
        task["few_shot_examples"] = examples
    meta = draw(_METADATA)
    if meta is not None:
        task["metadata"] = meta
    for name, values in optional[category]:
        value = draw(values)
        if value is not None:
            task[name] = value
    return task


# -- broken tasks ----------------------------------------------------------------------


def _line(task: Any) -> bytes:
    return json.dumps(task, ensure_ascii=False).encode("utf-8")


def _name_outside(table: Mapping[str, Any] | Sequence[str]) -> st.SearchStrategy[str]:
    return st.text(
        st.characters(codec="utf-8", exclude_characters=WHITESPACE), min_size=1, max_size=20
    ).filter(lambda n: n not in table)


@st.composite
def _invalid_json(draw: st.DrawFn, task: Task) -> bytes:
    line = _line(task)
    how = draw(st.sampled_from(["bad_utf8", "nan", "overflow", "surrogate", "truncated"]))
    if how == "truncated":
        return line[: draw(st.integers(1, len(line) - 1))]
    if how == "bad_utf8":
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + line[at:]
    value = {"nan": "NaN", "overflow": "1e400", "surrogate": '"\\ud800"'}[how]
    return line[:-1] + b', "metadata": ' + value.encode() + b"}"


@st.composite
def _duplicate_key(draw: st.DrawFn, task: Task) -> bytes:
    key = draw(st.sampled_from(sorted(task)))
    return _line(task)[:-1] + b", " + _line(key) + b": " + _line(task[key]) + b"}"


@st.composite
def _not_object(draw: st.DrawFn, task: Task) -> bytes:
    value = draw(st.sampled_from(["list", "scalar"]))
    if value == "list":
        return _line(list(task.values()))
    return _line(draw(st.none() | st.booleans() | st.integers() | json_text()))


@st.composite
def _missing_field(draw: st.DrawFn, task: Task) -> Task:
    drop = draw(st.lists(st.sampled_from(REQUIRED_FIELDS), min_size=1, unique=True))
    return {k: v for k, v in task.items() if k not in drop}


@st.composite
def _unknown_field(draw: st.DrawFn, task: Task) -> Task:
    key = draw(json_text(min_size=0).filter(lambda k: k not in FIELDS))
    return {**task, key: draw(json_values())}


_NOT_STRING: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(json_text(), st.none(), max_size=2),
)


@st.composite
def _wrong_type(draw: st.DrawFn, task: Task) -> Task:
    field = draw(st.sampled_from([*sorted(FIELDS), "targets[i]", "few_shot_examples[i]"]))
    out = dict(task)
    if field in ("task_id", "category", "prompt", "metric_name"):
        out[field] = draw(_NOT_STRING | st.lists(json_text(), max_size=2))
    elif field == "post_process":
        # A non-empty list of strings is combined_post_process, not wrong_type.
        out[field] = draw(_NOT_STRING | st.just([]) | st.just([None]))
    elif field == "targets":
        out[field] = draw(_NOT_STRING)
    elif field == "targets[i]":
        out["targets"] = [*task["targets"], draw(_NOT_STRING)]
    elif field == "few_shot_examples":
        out[field] = draw(_NOT_STRING)
    elif field == "few_shot_examples[i]":
        bad = draw(
            _NOT_STRING.filter(lambda v: not isinstance(v, dict))
            | st.fixed_dictionaries({"prompt": _NOT_STRING, "completion": json_text()})
        )
        out[field[:-3]] = [*task.get("few_shot_examples", [])[: MAX_FEW_SHOT - 1], bad]
    else:  # metadata
        out[field] = draw(_NOT_STRING.filter(lambda v: not isinstance(v, dict)) | st.just([]))
    return out


@st.composite
def _bad_task_id(draw: st.DrawFn, task: Task) -> Task:
    tid = task["task_id"]
    if draw(st.booleans()):
        return {**task, "task_id": ""}
    at = draw(st.integers(0, len(tid)))
    return {**task, "task_id": tid[:at] + draw(st.sampled_from(WHITESPACE)) + tid[at:]}


def _with(field: str, values: st.SearchStrategy[Any]) -> Callable[[Task], st.SearchStrategy[Task]]:
    def mutate(task: Task) -> st.SearchStrategy[Task]:
        return values.map(lambda v: {**task, field: v})

    return mutate


@st.composite
def _trailing_whitespace(draw: st.DrawFn, task: Task) -> Task:
    tail = draw(st.text(st.sampled_from(WHITESPACE), min_size=1, max_size=3))
    return {**task, "prompt": task["prompt"] + tail}


@st.composite
def _embedded_few_shot(draw: st.DrawFn, task: Task) -> Task:
    examples: list[dict[str, str]] = task.get("few_shot_examples") or []
    usable = [ex for ex in examples if (ex["prompt"] + " " + ex["completion"]).strip()]
    copy_example: bool = draw(st.booleans())
    if usable and copy_example:
        # (a) one of the task's own examples copied into the prompt.
        ex = draw(st.sampled_from(usable))
        return {**task, "prompt": f"{ex['prompt']} {ex['completion']}\n{task['prompt']}"}
    # (b) an earlier block answers the cue the prompt ends with.
    word = draw(st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8))
    cue = word + draw(st.sampled_from([":", "\uff1a"]))
    answer = draw(st.text(st.characters(codec="utf-8", exclude_characters=WHITESPACE), min_size=1))
    return {**task, "prompt": f"{task['prompt']}\n{cue} {answer}\n\n{cue}"}


@st.composite
def _too_many_few_shot(draw: st.DrawFn, task: Task) -> Task:
    def not_in_prompt(exs: list[dict[str, str]]) -> bool:
        pairs = [(e["prompt"], e["completion"]) for e in exs]
        return find_embedded_few_shot(task["prompt"], pairs) is None

    many = few_shot_examples(min_size=MAX_FEW_SHOT + 1, max_size=MAX_FEW_SHOT + 4)
    examples = draw(many.filter(not_in_prompt))
    return {**task, "few_shot_examples": examples}


@st.composite
def _few_shot_shape(draw: st.DrawFn, task: Task) -> Task:
    how = draw(st.sampled_from(["missing", "extra"]))
    if how == "missing":
        bad: dict[str, str] = {draw(st.sampled_from(EXAMPLE_KEYS)): draw(json_text())}
    else:
        extra = draw(json_text().filter(lambda k: k not in EXAMPLE_KEYS))
        bad = {"prompt": draw(json_text()), "completion": draw(json_text()), extra: ""}
    kept = list(task.get("few_shot_examples", []))[: MAX_FEW_SHOT - 1]
    at = draw(st.integers(0, len(kept)))
    return {**task, "few_shot_examples": [*kept[:at], bad, *kept[at:]]}


def _combined_post_process(spec: SpecVersion) -> Callable[[Task], st.SearchStrategy[Task]]:
    rules = sorted(spec.post_processes)
    as_list = st.lists(st.sampled_from(rules) | json_text(), min_size=1, max_size=3)
    as_text = st.tuples(
        st.lists(st.sampled_from(rules), min_size=2, max_size=3),
        st.sampled_from([",", "+", "|", ";", ">", " ", " + ", ", ", " | ", " > "]),
    ).map(lambda pair: pair[1].join(pair[0]))
    return _with("post_process", as_list | as_text)


def _unknown_post_process(spec: SpecVersion) -> Callable[[Task], st.SearchStrategy[Task]]:
    from evalspec.validation.validator import (
        _COMBINERS,  # the combination grammar is the validator's
    )

    def not_a_combination(name: str) -> bool:
        parts = [p for p in _COMBINERS.split(name) if p]
        return not (len(parts) > 1 and all(p in spec.post_processes for p in parts))

    names = json_text().filter(lambda n: n not in spec.post_processes and not_a_combination(n))
    return _with("post_process", names)


def _pair_rule(spec: SpecVersion, registry: Registry | None, rule: str) -> st.SearchStrategy[Task]:
    """A valid task of some category, given a name of the table its category forbids."""
    field, table = {
        "illegal_metric": ("metric_name", spec.metrics),
        "illegal_post_process": ("post_process", spec.post_processes),
    }[rule]
    choices = sorted(
        (cat.name, name)
        for cat in spec.categories.values()
        for name in table
        if name not in (cat.metrics if field == "metric_name" else cat.post_processes)
    )
    if not choices:
        raise StrategyError(
            f"spec version {spec.version}: every category allows every {field}; "
            f"nothing can break {rule}"
        )

    def for_pair(pair: tuple[str, str]) -> st.SearchStrategy[Task]:
        category, name = pair
        tasks = valid_tasks(registry, spec.version, categories=[category])
        return tasks.map(lambda t: {**t, field: name})

    return st.sampled_from(choices).flatmap(for_pair)


def _mcq_target(spec: SpecVersion, registry: Registry | None) -> st.SearchStrategy[Task]:
    cats = sorted(n for n, c in spec.categories.items() if c.single_target_from)
    if not cats:
        raise StrategyError(f"spec version {spec.version} has no single-target category")

    def for_category(name: str) -> st.SearchStrategy[Task]:
        allowed = spec.categories[name].single_target_from
        one_wrong = json_text().filter(lambda t: t not in allowed).map(lambda t: [t])
        several = st.lists(st.sampled_from(sorted(allowed)) | json_text(), min_size=2, max_size=4)
        tasks = valid_tasks(registry, spec.version, categories=[name])
        return st.tuples(tasks, one_wrong | several).map(lambda p: {**p[0], "targets": p[1]})

    return st.sampled_from(cats).flatmap(for_category)


def _field_rule(spec: SpecVersion, registry: Registry | None, rule: str) -> st.SearchStrategy[Task]:
    """A valid task carrying an optional field (an ``AddField``) with a value it may not hold
    (``bad_field_value``) or in a category that may not carry it (``illegal_field``)."""
    cases: list[tuple[str, str]] = []  # (category, field)
    for field in spec.fields.values():
        allowed = field.categories or tuple(spec.categories)
        if rule == "bad_field_value" and field.choices:
            cases += [(c, field.name) for c in allowed if c in spec.categories]
        elif rule == "illegal_field" and field.categories:
            cases += [(c, field.name) for c in spec.categories if c not in field.categories]
    if not cases:
        raise StrategyError(f"spec version {spec.version} has no optional field to break {rule}")

    def for_case(case: tuple[str, str]) -> st.SearchStrategy[Task]:
        category, name = case
        field = spec.fields[name]
        if rule == "bad_field_value":
            values = json_text().filter(lambda v: v not in field.choices)
        else:
            values = st.sampled_from(field.choices) if field.choices else json_text()
        tasks = valid_tasks(registry, spec.version, categories=[category])
        return st.tuples(tasks, values).map(lambda p: {**p[0], name: p[1]})

    return st.sampled_from(sorted(cases)).flatmap(for_case)


def _duplicate_task_id(task: Task) -> st.SearchStrategy[bytes]:
    return st.just(task).map(lambda t: _line(t) + b"\n" + _line(t) + b"\n")


def broken_tasks(
    rule: str, registry: Registry | None = None, spec_version: int | None = None
) -> st.SearchStrategy[Broken]:
    """Values that break exactly the rule named ``rule`` (a key of :data:`RULES`).

    A ``dict`` for the object-level rules; ``bytes`` of one line for
    :data:`PARSE_RULES` and of two lines for ``duplicate_task_id``. Validate
    a ``dict`` with :func:`evalspec.validate_task`, bytes with
    :func:`evalspec.iter_validate` (``io.BytesIO(value)``).

    :raises StrategyError: ``rule`` is unknown, or the version table gives
        nothing to break it with (e.g. no category forbids any metric).
    """
    if rule not in RULES:
        raise StrategyError(f"unknown rule {rule!r}; rules are {', '.join(RULES)}")
    spec = _spec(registry, spec_version)
    if rule in ("illegal_metric", "illegal_post_process"):
        return _pair_rule(spec, registry, rule)
    if rule == "mcq_target":
        return _mcq_target(spec, registry)
    if rule in ("bad_field_value", "illegal_field"):
        return _field_rule(spec, registry, rule)
    mutations: dict[str, Callable[[Task], st.SearchStrategy[Any]]] = {
        "invalid_json": _invalid_json,
        "duplicate_key": _duplicate_key,
        "not_object": _not_object,
        "missing_field": _missing_field,
        "unknown_field": _unknown_field,
        "wrong_type": _wrong_type,
        "bad_task_id": _bad_task_id,
        "unknown_category": _with("category", _name_outside(spec.categories)),
        "empty_prompt": _with("prompt", st.text(st.sampled_from(WHITESPACE), max_size=4)),
        "prompt_trailing_whitespace": _trailing_whitespace,
        "prompt_embedded_few_shot": _embedded_few_shot,
        "empty_targets": _with("targets", st.just([])),
        "unknown_metric": _with("metric_name", _name_outside(spec.metrics)),
        "too_many_few_shot": _too_many_few_shot,
        "few_shot_shape": _few_shot_shape,
        "unknown_post_process": _unknown_post_process(spec),
        "combined_post_process": _combined_post_process(spec),
        "duplicate_task_id": _duplicate_task_id,
    }
    return valid_tasks(registry, spec.version).flatmap(mutations[rule])


# -- model outputs ---------------------------------------------------------------------


def model_outputs(
    rule: str | PostProcessRule | None = None, registry: Registry | None = None
) -> st.SearchStrategy[str]:
    """Model outputs for the post-process rule ``rule`` (a name or the rule itself).

    A rule that declares ``shaped_outputs`` gets its shaped text, mixed with
    arbitrary ``str`` (lone surrogates included) so totality is always
    exercised; a rule without shapes gets arbitrary ``str``. ``None`` gives
    arbitrary ``str`` mixed with the shapes of every rule of ``registry``.
    A name is looked up in ``registry`` (default: the current project's
    registry); an unknown name gives arbitrary ``str``.
    """
    if isinstance(rule, PostProcessRule):
        return _shaped(rule)
    if rule is not None:
        reg = registry if registry is not None else _registry_or_none()
        found = None if reg is None else reg.post_processors.get(rule)
        return any_text(max_size=60) if found is None else _shaped(found)
    reg = registry if registry is not None else _registry_or_none()
    rules = [] if reg is None else [reg.post_processors[n] for n in sorted(reg.post_processors)]
    every = [r.shaped_outputs() for r in rules if r.shaped_outputs is not None]
    return st.one_of(any_text(max_size=60), *every)


def _shaped(rule: PostProcessRule) -> st.SearchStrategy[str]:
    if rule.shaped_outputs is None:
        return any_text(max_size=60)
    shaped: st.SearchStrategy[str] = rule.shaped_outputs()
    return shaped | any_text(max_size=40)


def _registry_or_none() -> Registry | None:
    # Arbitrary text is still a fine strategy when the project cannot be loaded;
    # the project's problems are reported by the commands that load it.
    try:
        return default_registry()
    except EvalspecError:
        return None


__all__ = [
    "MULTI_LINE_RULES",
    "PARSE_RULES",
    "WHITESPACE",
    "StrategyError",
    "any_text",
    "broken_tasks",
    "few_shot_examples",
    "json_text",
    "json_values",
    "metadata",
    "model_outputs",
    "prompts",
    "targets_for",
    "task_ids",
    "text_chars",
    "valid_tasks",
]
