"""The version table: order the migrations into a chain and replay it.

Replaying migrations 1..N gives :class:`SpecVersion` N, the vocabulary and
pair table that the validator checks tasks against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import attrs

from evalspec.errors import ChainError, MigrationError, SpecVersionError
from evalspec.versions.migration import (
    AddCategory,
    AddField,
    AddMetric,
    AddPostProcess,
    BindMetric,
    BindPostProcess,
    Deprecate,
    Migration,
    WaiveFieldRule,
)

Waiver = tuple[str, str, str, str]
"""``(rule, category, field, value)``: ``rule`` does not apply to the tasks of
``category`` whose ``field`` is ``value`` (a :class:`WaiveFieldRule`)."""


@attrs.frozen
class CategoryPairs:
    """A category in force at some version, with what it allows."""

    name: str
    metrics: tuple[str, ...]
    post_processes: tuple[str, ...]
    fixtures: tuple[str, ...]
    added_in: int
    single_target_from: tuple[str, ...] = ()
    bound: tuple[tuple[str, str, int], ...] = ()
    """``(kind, name, version)`` for each metric or rule a later migration bound to it."""


@attrs.frozen
class OptionalField:
    """An optional string field a migration added (:class:`AddField`), as in force."""

    name: str
    choices: tuple[str, ...]
    categories: tuple[str, ...]
    added_in: int


@attrs.frozen(repr=False)
class SpecVersion:
    """The vocabulary and pair table in force at one spec version."""

    def __repr__(self) -> str:
        return (
            f"<SpecVersion {self.version}: {len(self.categories)} categories, "
            f"{len(self.metrics)} metrics, {len(self.post_processes)} post-process rules>"
        )

    version: int
    categories: Mapping[str, CategoryPairs]
    metrics: Mapping[str, int]
    post_processes: Mapping[str, int]
    deprecated: frozenset[tuple[str, str]]
    later: Mapping[tuple[str, str], int]
    """``(kind, name) -> version`` for names a *later* version adds (kind ``field`` included)."""
    fields: Mapping[str, OptionalField] = MappingProxyType({})
    """The optional fields migrations added, in the order they were added."""
    waivers: frozenset[Waiver] = frozenset()

    def added_in_later(self, kind: str, name: str) -> int | None:
        return self.later.get((kind, name))


def order_chain(migrations: Iterable[Migration]) -> tuple[Migration, ...]:
    """Check that the migrations form one linear chain 1..N and return it in order.

    Every problem is reported at once, each naming the versions involved:
    duplicate versions, a parent that does not exist, two heads (two
    migrations with the same parent), a cycle, a base that is not version 1,
    and a gap in the numbering.
    """
    migs = list(migrations)
    problems: list[str] = []
    by_version: dict[int, Migration] = {}
    for m in migs:
        if m.version in by_version:
            other = by_version[m.version]
            problems.append(
                f"duplicate version {m.version}: from {other.origin or 'an unnamed source'} and "
                f"{m.origin or 'an unnamed source'}; two migrations cannot share a version"
            )
        else:
            by_version[m.version] = m
    children: dict[int | None, list[int]] = {}
    for m in by_version.values():
        if m.parent is not None and m.parent not in by_version:
            problems.append(
                f"version {m.version}{_from(m)} names parent {m.parent}, which does not exist"
            )
        children.setdefault(m.parent, []).append(m.version)
    for parent, kids in sorted(children.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)):
        if len(kids) > 1:
            where = "no parent (several bases)" if parent is None else f"parent {parent}"
            named = ", ".join(f"{k}{_from(by_version[k])}" for k in sorted(kids))
            problems.append(
                f"two heads: versions {named} all have {where}; "
                "make one follow the other so the chain stays linear"
            )
    # A cycle: walking parents from some version comes back to it.
    for start in sorted(by_version):
        seen = [start]
        cur = by_version[start].parent
        while cur is not None and cur in by_version:
            if cur in seen:
                cycle = [*seen[seen.index(cur) :], cur]
                problems.append(f"cycle: {' -> '.join(map(str, cycle))}")
                break
            seen.append(cur)
            cur = by_version[cur].parent
        else:
            continue
        break
    for m in by_version.values():
        if m.parent is None and m.version != 1:
            problems.append(
                f"version {m.version}{_from(m)} has no parent but only version 1 may be the base"
            )
        # A parent that does not exist is reported above, once.
        if m.parent is not None and m.parent in by_version and m.version != m.parent + 1:
            problems.append(
                f"version {m.version}{_from(m)} follows parent {m.parent}: "
                "versions must go up by one"
            )
    if by_version:
        expected = set(range(1, max(by_version) + 1))
        missing = sorted(expected - set(by_version))
        if missing:
            problems.append(f"gap: version(s) {', '.join(map(str, missing))} missing")
    if problems:
        raise ChainError(problems)
    return tuple(by_version[v] for v in sorted(by_version))


def _from(m: Migration) -> str:
    return f" (from {m.origin})" if m.origin else ""


def replay(chain: tuple[Migration, ...], version: int | None = None) -> SpecVersion:
    """Apply migrations 1..``version`` (default: the head) and return the result.

    Raises :class:`MigrationError` when an operation is inconsistent: a name
    added twice, a category bound to an undeclared metric or rule, or a
    category added without a metric, a rule and a fixture.
    """
    if not chain:
        raise SpecVersionError("the version table is empty: no plugin contributes a migration")
    check_bindings(chain)
    head = chain[-1].version
    target = head if version is None else version
    if not 1 <= target <= head:
        msg = f"unknown spec version {target}: the version table holds 1..{head}"
        raise SpecVersionError(msg)
    categories: dict[str, CategoryPairs] = {}
    metrics: dict[str, int] = {}
    rules: dict[str, int] = {}
    deprecated: set[tuple[str, str]] = set()
    later: dict[tuple[str, str], int] = {}
    fields: dict[str, OptionalField] = {}
    waivers: set[Waiver] = set()
    for mig in chain:
        in_force = mig.version <= target
        for op in mig.operations:
            where = f"migration {mig.version}"
            if isinstance(op, AddMetric):
                _add_name(metrics, later, "metric", op.name, mig.version, in_force, where)
            elif isinstance(op, AddPostProcess):
                _add_name(rules, later, "post_process", op.name, mig.version, in_force, where)
            elif isinstance(op, AddCategory):
                _check_category(op, where)
                if op.name in categories or ("category", op.name) in later:
                    raise MigrationError(f"{where}: category {op.name!r} is added twice")
                if in_force:
                    categories[op.name] = CategoryPairs(
                        op.name,
                        op.metrics,
                        op.post_processes,
                        op.fixtures,
                        mig.version,
                        op.single_target_from,
                    )
                else:
                    later[("category", op.name)] = mig.version
            elif isinstance(op, (BindMetric, BindPostProcess)) and in_force:
                categories[op.category] = _bind(categories, op, where, mig.version)
            elif isinstance(op, Deprecate) and in_force:
                deprecated.add((op.kind, op.name))
            elif isinstance(op, AddField):
                if op.name in fields or ("field", op.name) in later:
                    raise MigrationError(f"{where}: field {op.name!r} is added twice")
                if not in_force:
                    later[("field", op.name)] = mig.version
                    continue
                for cat_name in op.categories:
                    if cat_name not in categories:
                        msg = f"{where}: field {op.name!r} names category {cat_name!r}, "
                        raise MigrationError(msg + "which is not in force")
                fields[op.name] = OptionalField(op.name, op.choices, op.categories, mig.version)
            elif isinstance(op, WaiveFieldRule) and in_force:
                waivers.add(_waiver(op, categories, fields, where))
    return SpecVersion(
        version=target,
        categories=MappingProxyType(categories),
        metrics=MappingProxyType(metrics),
        post_processes=MappingProxyType(rules),
        deprecated=frozenset(deprecated),
        later=MappingProxyType(later),
        fields=MappingProxyType(fields),
        waivers=frozenset(waivers),
    )


def _waiver(
    op: WaiveFieldRule,
    categories: Mapping[str, CategoryPairs],
    fields: Mapping[str, OptionalField],
    where: str,
) -> Waiver:
    what = f"{where}: waiving {op.rule!r} for category {op.category!r}"
    if op.category not in categories:
        raise MigrationError(f"{what}: the category is not in force")
    field = fields.get(op.field)
    if field is None:
        raise MigrationError(f"{what}: field {op.field!r} is not added by this or an earlier one")
    if field.choices and op.value not in field.choices:
        msg = f"{what}: {op.value!r} is not one of field {op.field!r}'s {', '.join(field.choices)}"
        raise MigrationError(msg)
    if field.categories and op.category not in field.categories:
        raise MigrationError(f"{what}: field {op.field!r} is not allowed in that category")
    return (op.rule, op.category, op.field, op.value)


def _bind(
    categories: Mapping[str, CategoryPairs],
    op: BindMetric | BindPostProcess,
    where: str,
    version: int,
) -> CategoryPairs:
    cat = categories.get(op.category)
    if cat is None:
        raise MigrationError(f"{where}: binds to category {op.category!r}, which is not in force")
    if isinstance(op, BindMetric):
        if op.metric in cat.metrics:
            raise MigrationError(f"{where}: category {op.category!r} already allows {op.metric!r}")
        return attrs.evolve(
            cat,
            metrics=(*cat.metrics, op.metric),
            bound=(*cat.bound, ("metric", op.metric, version)),
        )
    if op.post_process in cat.post_processes:
        msg = f"{where}: category {op.category!r} already allows {op.post_process!r}"
        raise MigrationError(msg)
    return attrs.evolve(
        cat,
        post_processes=(*cat.post_processes, op.post_process),
        bound=(*cat.bound, ("post_process", op.post_process, version)),
    )


def _add_name(
    table: dict[str, int],
    later: dict[tuple[str, str], int],
    kind: str,
    name: str,
    version: int,
    in_force: bool,
    where: str,
) -> None:
    if name in table or (kind, name) in later:
        raise MigrationError(f"{where}: {kind} {name!r} is added twice")
    if in_force:
        table[name] = version
    else:
        later[(kind, name)] = version


def _check_category(op: AddCategory, where: str) -> None:
    missing = []
    if not op.metrics:
        missing.append("at least one metric")
    if not op.post_processes:
        missing.append("at least one post-process rule")
    if not op.fixtures:
        missing.append("at least one fixture")
    if missing:
        raise MigrationError(f"{where}: category {op.name!r} is added without {', '.join(missing)}")


def check_bindings(chain: tuple[Migration, ...]) -> None:
    """Each category binds only metrics and rules declared in its migration or earlier."""
    metrics: set[str] = set()
    rules: set[str] = set()
    for mig in chain:
        for op in mig.operations:
            if isinstance(op, AddMetric):
                metrics.add(op.name)
            elif isinstance(op, AddPostProcess):
                rules.add(op.name)
        for op in mig.operations:
            if isinstance(op, BindMetric) and op.metric not in metrics:
                raise MigrationError(
                    f"migration {mig.version}: binds metric {op.metric!r} to category "
                    f"{op.category!r}, but this migration or an earlier one does not declare it"
                )
            if isinstance(op, BindPostProcess) and op.post_process not in rules:
                raise MigrationError(
                    f"migration {mig.version}: binds post-process rule {op.post_process!r} to "
                    f"category {op.category!r}, but this migration or an earlier one does not "
                    "declare it"
                )
            if isinstance(op, AddCategory):
                for m in op.metrics:
                    if m not in metrics:
                        raise MigrationError(
                            f"migration {mig.version}: category {op.name!r} binds metric {m!r}, "
                            "which this migration or an earlier one does not declare"
                        )
                for r in op.post_processes:
                    if r not in rules:
                        raise MigrationError(
                            f"migration {mig.version}: category {op.name!r} binds post-process "
                            f"rule {r!r}, which this migration or an earlier one does not declare"
                        )
