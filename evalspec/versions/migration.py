"""Migrations: the immutable, declarative steps of the spec's version table.

A migration is one spec version. Like an Alembic revision or a Django
migration it names its parent and lists operations; unlike them it never
touches a database, it only says which names exist and which pairs are legal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from importlib.abc import Traversable
from typing import Any

import attrs

from evalspec.fields import FIELDS
from evalspec.model import _is_name
from evalspec.rules import WAIVABLE

PLACEHOLDER = "TODO: "
"""What ``evalspec spec new``'s descriptions start with, until the author writes them.

The gate refuses a migration that still has one."""


def _names(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@attrs.frozen
class AddMetric:
    """Declare a metric name."""

    name: str = attrs.field(validator=_is_name)
    description: str = ""


@attrs.frozen
class AddPostProcess:
    """Declare a post-process rule name."""

    name: str = attrs.field(validator=_is_name)
    description: str = ""


@attrs.frozen
class AddCategory:
    """Declare a category with its legal metrics, legal rules and fixture files.

    ``fixtures`` are paths relative to the migration's ``fixture_dir``; the
    category's fixture tasks are the lines of those files whose ``category``
    is this one. ``single_target_from``, when not empty, requires every task
    of the category to have exactly one target, drawn from these strings
    (rule ``mcq_target``).
    """

    name: str = attrs.field(validator=_is_name)
    metrics: tuple[str, ...] = attrs.field(converter=_names)
    post_processes: tuple[str, ...] = attrs.field(converter=_names)
    fixtures: tuple[str, ...] = attrs.field(converter=_names)
    description: str = ""
    single_target_from: tuple[str, ...] = attrs.field(default=(), converter=_names)


@attrs.frozen
class BindMetric:
    """Allow an existing category to use a metric, from this migration's version on.

    The metric is added by this migration or an earlier one (a new metric, or
    one another category already uses); the category by an earlier one (or
    this one). ``fixtures`` are paths relative to the migration's
    ``fixture_dir`` holding tasks of the category that use the metric: they
    validate from this version on, and would not before it.
    """

    category: str = attrs.field(validator=_is_name)
    metric: str = attrs.field(validator=_is_name)
    fixtures: tuple[str, ...] = attrs.field(converter=_names)
    description: str = ""


@attrs.frozen
class BindPostProcess:
    """Allow an existing category to use a post-process rule, from this version on.

    As :class:`BindMetric`, for a rule: its fixtures hold tasks of the
    category that use the rule.
    """

    category: str = attrs.field(validator=_is_name)
    post_process: str = attrs.field(validator=_is_name)
    fixtures: tuple[str, ...] = attrs.field(converter=_names)
    description: str = ""


@attrs.frozen
class Deprecate:
    """Mark a category, metric or rule as deprecated; names are never deleted.

    A deprecated name stays valid: tasks that use it still validate at every
    version, and ``evalspec spec show`` lists it as deprecated from the
    deprecating version on. Deprecation is a signal to authors (write new
    tasks with something else), never a change of which tasks validate: that
    would break the promise that a released version is frozen.
    """

    kind: str = attrs.field(validator=attrs.validators.in_(("category", "metric", "post_process")))
    name: str = attrs.field(validator=_is_name)
    reason: str = ""


def _not_a_core_field(_inst: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value in FIELDS:
        msg = f"{attribute.name} {value!r} is one of the task's own fields ({', '.join(FIELDS)})"
        raise ValueError(msg)


@attrs.frozen
class AddField:
    """Declare an optional task field holding a string, from this version on.

    A task may leave the field out; when it has it, the value is a string
    and, if ``choices`` is not empty, one of them (``choices[0]`` is what a
    task without the field means; the code reading the field applies it).
    ``categories``, when not empty, are the only categories whose tasks may
    carry it (each is added by this migration or an earlier one). Before
    this version the field is an ``unknown_field``. ``fixtures`` (relative to
    the migration's ``fixture_dir``) hold tasks that use the field: they
    validate from this version on, and would not before it.
    """

    name: str = attrs.field(validator=[_is_name, _not_a_core_field])
    fixtures: tuple[str, ...] = attrs.field(converter=_names)
    description: str = ""
    choices: tuple[str, ...] = attrs.field(default=(), converter=_names)
    categories: tuple[str, ...] = attrs.field(default=(), converter=_names)


@attrs.frozen
class WaiveFieldRule:
    """Lift one field rule for the tasks of a category whose field has a given value.

    A field rule of the validator (one of :data:`evalspec.rules.WAIVABLE`)
    stops applying, from this version on, to tasks of ``category`` whose
    optional ``field`` (an :class:`AddField` of this migration or an earlier
    one) is ``value``; every other task is checked as before. This is how a
    version says "a completion-protocol prompt may end in its newline"
    without loosening the rule for anyone else. ``fixtures`` hold tasks the
    waiver admits: they validate from this version on and break ``rule``
    without it.
    """

    rule: str = attrs.field(validator=attrs.validators.in_(WAIVABLE))
    category: str = attrs.field(validator=_is_name)
    field: str = attrs.field(validator=_is_name)
    value: str = attrs.field(validator=attrs.validators.instance_of(str))
    fixtures: tuple[str, ...] = attrs.field(converter=_names)
    description: str = ""


Operation = (
    AddMetric
    | AddPostProcess
    | AddCategory
    | BindMetric
    | BindPostProcess
    | Deprecate
    | AddField
    | WaiveFieldRule
)
Binding = BindMetric | BindPostProcess
WITH_FIXTURES = (AddCategory, BindMetric, BindPostProcess, AddField, WaiveFieldRule)
"""The operations that ship fixture files."""


def _operations(value: Iterable[Operation]) -> tuple[Operation, ...]:
    return tuple(value)


@attrs.frozen
class Migration:
    """One spec version: its number, its parent, a message and its operations.

    ``fixture_dir`` is where the fixture paths of its operations
    (:data:`WITH_FIXTURES`) are resolved (a
    directory or an ``importlib.resources`` traversable; a project's migration
    file defaults to its migrations directory); ``origin`` says where the
    migration came from, for messages. The lock's checksum covers the
    operations (fixture paths as written, relative to ``fixture_dir``) and the
    fixture bytes, never ``fixture_dir`` or ``origin``: a migration moved from
    a project's directory into a package keeps its checksum when its fixtures
    keep their relative paths.
    """

    version: int = attrs.field(validator=attrs.validators.instance_of(int))
    parent: int | None
    message: str
    operations: tuple[Operation, ...] = attrs.field(converter=_operations)
    fixture_dir: Traversable | None = attrs.field(default=None, eq=False, repr=False)
    origin: str = attrs.field(default="", eq=False)

    def fixture_files(self) -> Iterator[tuple[str, bytes]]:
        """Each fixture path the migration names, once, with its bytes."""
        seen: set[str] = set()
        for op in self.operations:
            if isinstance(op, WITH_FIXTURES):
                for rel in op.fixtures:
                    if rel in seen:
                        continue
                    seen.add(rel)
                    yield rel, self.read_fixture(rel)

    def read_fixture(self, rel: str) -> bytes:
        """The bytes of one fixture file; ``FileNotFoundError`` when absent."""
        if self.fixture_dir is None:
            msg = f"migration {self.version} has no fixture directory to find {rel!r} in"
            raise FileNotFoundError(msg)
        node = self.fixture_dir
        for part in rel.split("/"):
            node = node.joinpath(part)
        return node.read_bytes()

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (used by ``spec list``/``show`` and checksums)."""
        return {
            "version": self.version,
            "parent": self.parent,
            "message": self.message,
            "operations": [{"op": type(op).__name__, **attrs.asdict(op)} for op in self.operations],
        }
