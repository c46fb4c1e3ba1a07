"""The spec version in force as plain data: what the registry snapshot holds.

A warm ``evalspec validate`` reads the spec version in force from the
snapshot (:mod:`evalspec.registry.snapshot`) and checks every line against it. The
registry's :class:`~evalspec.versions.SpecVersion` is a frozen attrs class,
and importing attrs costs that command more than all the rest of its
start-up, so the snapshot is read into the plain classes here instead: the
same attributes (and :meth:`SpecTables.added_in_later`), read-only mappings,
no attrs. Everything that checks tasks (:mod:`evalspec.validation.precise`,
:mod:`evalspec.validation.engine`, :mod:`evalspec.validation.fast`) accepts either
(:data:`AnySpec`).
"""

from __future__ import annotations

# Not `from typing import ...`: typing costs milliseconds at start-up, and these
# names are only annotations. Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypeAlias

    from evalspec.versions import SpecVersion

    AnySpec: TypeAlias = "SpecVersion | SpecTables"
    """What the validator checks against: the registry's spec version, or the
    snapshot's plain tables of the same spec version."""


class PairsTable:
    """A category's row of the snapshot's plain tables: what
    :class:`~evalspec.versions.CategoryPairs` holds, as the validator reads it."""

    __slots__ = (
        "added_in",
        "bound",
        "fixtures",
        "metrics",
        "name",
        "post_processes",
        "single_target_from",
    )

    def __init__(
        self,
        name: str,
        metrics: tuple[str, ...],
        post_processes: tuple[str, ...],
        fixtures: tuple[str, ...],
        added_in: int,
        single_target_from: tuple[str, ...] = (),
        bound: tuple[tuple[str, str, int], ...] = (),
    ) -> None:
        self.name = name
        self.metrics = metrics
        self.post_processes = post_processes
        self.fixtures = fixtures
        self.added_in = added_in
        self.single_target_from = single_target_from
        self.bound = bound


class FieldTable:
    """An optional field's row of the snapshot's plain tables: what
    :class:`~evalspec.versions.OptionalField` holds, as the validator reads it."""

    __slots__ = ("added_in", "categories", "choices", "name")

    def __init__(
        self, name: str, choices: tuple[str, ...], categories: tuple[str, ...], added_in: int
    ) -> None:
        self.name = name
        self.choices = choices
        self.categories = categories
        self.added_in = added_in


class SpecTables:
    """The snapshot's spec version as plain, read-only data: the attributes and
    :meth:`added_in_later` of :class:`~evalspec.versions.SpecVersion` that
    validation reads, without building attrs classes (importing attrs costs the
    warm command more than all the rest of its start-up)."""

    __slots__ = (
        "categories",
        "deprecated",
        "fields",
        "later",
        "metrics",
        "post_processes",
        "version",
        "waivers",
    )

    def __init__(
        self,
        *,
        version: int,
        categories: Mapping[str, PairsTable],
        metrics: Mapping[str, int],
        post_processes: Mapping[str, int],
        deprecated: frozenset[tuple[str, str]],
        later: Mapping[tuple[str, str], int],
        fields: Mapping[str, FieldTable] | None = None,
        waivers: frozenset[tuple[str, str, str, str]] = frozenset(),
    ) -> None:
        self.version = version
        self.categories = categories
        self.metrics = metrics
        self.post_processes = post_processes
        self.deprecated = deprecated
        self.later = later
        self.fields: Mapping[str, FieldTable] = {} if fields is None else fields
        self.waivers = waivers

    def added_in_later(self, kind: str, name: str) -> int | None:
        return self.later.get((kind, name))

    def __repr__(self) -> str:
        return (
            f"<SpecTables {self.version}: {len(self.categories)} categories, "
            f"{len(self.metrics)} metrics, {len(self.post_processes)} post-process rules>"
        )
