"""The value classes of evalspec: registry entries, tasks and error records.

All are frozen, slotted attrs classes, so a value handed to the runner cannot
change mid-pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

# The task's field names live in evalspec.fields (no attrs import, so the warm
# validation path can read them without loading attrs); re-exported here.
from evalspec.fields import EXAMPLE_FIELDS as EXAMPLE_FIELDS
from evalspec.fields import FIELDS as FIELDS
from evalspec.fields import OPTIONAL_FIELDS as OPTIONAL_FIELDS
from evalspec.fields import REQUIRED_FIELDS as REQUIRED_FIELDS


def _is_name(_inst: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        msg = f"{attribute.name} must be a non-empty string without whitespace, got {value!r}"
        raise ValueError(msg)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _are_aliases(_inst: object, attribute: attrs.Attribute[tuple[str, ...]], value: Any) -> None:
    for alias in value:
        if not isinstance(alias, str) or not alias or any(c.isspace() for c in alias):
            msg = f"{attribute.name} must be names or patterns without whitespace, got {alias!r}"
            raise ValueError(msg)


@attrs.frozen
class Category:
    """A task category a plugin implements (its legal pairs live in the version table).

    ``aliases`` are the names (or ``fnmatch`` patterns, matched without regard to
    case) other tools and habits give the category (``"sentiment"`` for
    ``classification``): a task naming one gets the hint to use this category
    instead, followed by ``alias_hint`` when given. Metrics declare theirs the same
    way.
    """

    name: str = attrs.field(validator=_is_name)
    description: str = ""
    aliases: tuple[str, ...] = attrs.field(
        default=(), converter=_names, validator=_are_aliases, kw_only=True
    )
    alias_hint: str = attrs.field(default="", kw_only=True)


Scorer = Callable[[str, Sequence[str]], float]
"""``(post-processed prediction, targets) -> float in [0, 1]``."""

SandboxedScorer = Callable[[str, Sequence[str], Any], float]
"""``(prediction, targets, sandbox) -> float``: a scorer that runs the prediction as code.

The third argument is an ``evalspec.sandbox.Sandbox``; it is typed ``Any`` so
that this module does not import the sandbox.
"""

CorpusScorer = Callable[[Sequence[str], Sequence[Sequence[str]]], float]
"""``(predictions, targets of each item) -> float``: a dataset-level figure."""

TargetCheck = Callable[[Sequence[str]], bool]
"""``targets -> bool``: true when a metric cannot score a task with these targets."""

OutputCheck = Callable[[str], bool]
"""``text -> bool``: a predicate on one string (a raw output, or a rule's result)."""


@attrs.frozen
class Metric:
    """A metric a plugin implements.

    ``scorer`` maps ``(prediction, targets)`` to a float in [0, 1]; a metric may
    be registered without one, in which case it can be named in tasks but not
    used to score them. Per-item scores aggregate over a dataset as their mean;
    a metric whose field reports a different dataset-level figure (BLEU's
    corpus score is not the mean of sentence scores) also gives a
    ``corpus_scorer``, reported beside the mean.

    ``best_target_wins`` declares that the score is the best over the targets,
    so adding a target can never lower it (the property suite checks this).
    ``sandboxed`` declares that the scorer executes the prediction: it is then
    a :data:`SandboxedScorer`, called only after the user opted in to code
    execution, with the sandbox as its third argument.

    What the report needs to know about the metric is declared here too, so
    a third-party metric is reported exactly like a built-in one (keyword
    only):

    ``reference_packages``
        distributions whose installed versions the score report records in
        its provenance (the reference implementation the metric wraps).
    ``target_check`` and ``caveat``
        ``target_check(targets)`` is true for a task the metric cannot score
        meaningfully; the report notes such tasks with ``caveat`` as the reason.
    ``binary``
        every score is 0.0 or 1.0 (a sample is right or wrong): with n samples
        per task the report then gives pass@k, and a scorer that returns
        anything else is an error.
    ``aliases`` and ``alias_hint``
        what other tools call the metric, as for :class:`Category`: a task naming
        an alias (``"pass@1"`` for ``code_exec``) is told to use this metric.
    """

    name: str = attrs.field(validator=_is_name)
    description: str = ""
    scorer: Scorer | SandboxedScorer | None = attrs.field(default=None, eq=False)
    best_target_wins: bool = False
    corpus_scorer: CorpusScorer | None = attrs.field(default=None, eq=False)
    sandboxed: bool = False
    reference_packages: tuple[str, ...] = attrs.field(default=(), converter=_names, kw_only=True)
    target_check: TargetCheck | None = attrs.field(
        default=None,
        eq=False,
        kw_only=True,
        validator=attrs.validators.optional(attrs.validators.is_callable()),
    )
    caveat: str = attrs.field(default="", kw_only=True)
    binary: bool = attrs.field(default=False, kw_only=True)
    aliases: tuple[str, ...] = attrs.field(
        default=(), converter=_names, validator=_are_aliases, kw_only=True
    )
    alias_hint: str = attrs.field(default="", kw_only=True)


_optional_callable = attrs.validators.optional(attrs.validators.is_callable())


@attrs.frozen
class PostProcessRule:
    """A post-process rule: a deterministic, total ``str -> str`` function.

    Besides the function, a rule declares what the rest of evalspec needs to
    know about it (keyword only), so a third-party rule is counted, fuzzed and
    exercised exactly like a built-in one:

    ``unparsed``
        for an *extracting* rule, ``unparsed(raw_output)`` is true when the
        rule could not decide on the raw output: it found nothing to extract,
        or several different answers. The score report counts such outputs
        per category and rule; a rule without it is never counted.
    ``idempotent``
        ``function(function(x)) == function(x)`` for every ``x``; the
        conformance kit fuzzes it.
    ``contract`` and ``contract_description``
        ``contract(output)`` is true for every output the rule may give; the
        conformance kit fuzzes it and names ``contract_description`` ("one
        letter A-E") when it fails.
    ``shaped_outputs``
        a zero-argument factory returning a hypothesis strategy of raw outputs
        shaped for the rule (fenced blocks for a code extractor). The
        conformance kit and :func:`evalspec.testing.strategies.model_outputs` draw from
        it, mixed with arbitrary text. Import hypothesis inside the factory, so
        registering the rule does not need it.
    """

    name: str = attrs.field(validator=_is_name)
    function: Callable[[str], str] = attrs.field(eq=False, validator=attrs.validators.is_callable())
    description: str = ""
    unparsed: OutputCheck | None = attrs.field(
        default=None, eq=False, kw_only=True, validator=_optional_callable
    )
    idempotent: bool = attrs.field(default=False, kw_only=True)
    contract: OutputCheck | None = attrs.field(
        default=None, eq=False, kw_only=True, validator=_optional_callable
    )
    contract_description: str = attrs.field(default="", kw_only=True)
    shaped_outputs: Callable[[], Any] | None = attrs.field(
        default=None, eq=False, kw_only=True, validator=_optional_callable
    )

    def __call__(self, text: str) -> str:
        return self.function(text)


@attrs.frozen
class FewShotExample:
    """One ``{prompt, completion}`` pair rendered before the task prompt."""

    prompt: str = attrs.field(validator=attrs.validators.instance_of(str))
    completion: str = attrs.field(validator=attrs.validators.instance_of(str))

    def to_dict(self) -> dict[str, str]:
        return {"prompt": self.prompt, "completion": self.completion}


def _to_examples(value: Sequence[FewShotExample | Mapping[str, str]]) -> tuple[FewShotExample, ...]:
    return tuple(
        ex if isinstance(ex, FewShotExample) else FewShotExample(ex["prompt"], ex["completion"])
        for ex in value
    )


def _str_tuple(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        msg = "targets must be a sequence of strings, not one string"
        raise TypeError(msg)
    return tuple(value)


_str = attrs.validators.instance_of(str)


@attrs.frozen
class TaskSpec:
    """One validated task: a line of ``tasks.jsonl`` that the validator admitted.

    Constructing one directly checks field types only; whether the category,
    metric and rule are legal is the validator's business, since that depends
    on the spec version.
    """

    task_id: str = attrs.field(validator=_str)
    category: str = attrs.field(validator=_str)
    prompt: str = attrs.field(validator=_str)
    targets: tuple[str, ...] = attrs.field(
        converter=_str_tuple,
        validator=attrs.validators.deep_iterable(_str),
    )
    metric_name: str = attrs.field(validator=_str)
    post_process: str = attrs.field(validator=_str)
    few_shot_examples: tuple[FewShotExample, ...] = attrs.field(default=(), converter=_to_examples)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    added_fields: Mapping[str, str] = attrs.field(factory=dict, hash=False, kw_only=True)
    """The optional fields a spec version added (``AddField``) that the task carries."""

    @property
    def preamble(self) -> str:
        """Text rendered before the few-shot examples (field ``preamble``, spec 2); ``""``."""
        return self.added_fields.get("preamble", "")

    @property
    def code_protocol(self) -> str:
        """``"program"`` (the output is the whole program, the default) or ``"completion"``
        (the program is the prompt followed by the output): field ``code_protocol``, spec 2."""
        return self.added_fields.get("code_protocol", "program")

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> TaskSpec:
        """Build from a decoded JSON object with the spec's field names.

        Keys beyond the spec's own fields are the optional fields a spec
        version added (a validated record holds no other).
        """
        return cls(
            task_id=record["task_id"],
            category=record["category"],
            prompt=record["prompt"],
            targets=record["targets"],
            metric_name=record["metric_name"],
            post_process=record["post_process"],
            few_shot_examples=record.get("few_shot_examples", ()),
            metadata=dict(record.get("metadata", {})),
            added_fields={k: v for k, v in record.items() if k not in FIELDS},
        )

    def to_dict(self) -> dict[str, Any]:
        """The task as a JSON-ready object, fields in spec order (added fields last)."""
        return {
            "task_id": self.task_id,
            "category": self.category,
            "prompt": self.prompt,
            "targets": list(self.targets),
            "metric_name": self.metric_name,
            "post_process": self.post_process,
            "few_shot_examples": [ex.to_dict() for ex in self.few_shot_examples],
            "metadata": dict(self.metadata),
            **self.added_fields,
        }


@attrs.frozen
class ErrorRecord:
    """Why one line of a task file was rejected.

    ``line`` is the 1-based physical line, ``rule`` one code of
    :data:`evalspec.rules.RULES`, ``field`` the offending field or path (or
    ``None``), ``task_id`` the line's task id when it could be read, and
    ``text`` the offending line (shortened when it is very long).
    """

    line: int
    rule: str
    field: str | None
    message: str
    task_id: str | None = None
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)
