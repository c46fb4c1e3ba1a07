"""The gate: what a migration must ship before the spec accepts it.

The seed's rule, applied to every migration of the chain: a category is
refused unless the same migration binds it to at least one metric and one
post-process rule (each added by that migration or an earlier one) and ships
at least one fixture task for it. Every fixture line must validate under the
migration's own version and belong to a category the migration adds, and
every metric and rule the migration adds must be bound by some category by
the end of it (no orphans). An optional field (``AddField``) and a lifted
field rule (``WaiveFieldRule``) ship fixtures too: a task that carries the
field, and a task the waiver admits that breaks the rule without it. Each
refusal names the migration, the entry and the missing piece.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from evalspec.authoring.problem import SpecProblem
from evalspec.errors import MigrationError
from evalspec.model import TaskSpec
from evalspec.versions.migration import (
    PLACEHOLDER,
    AddCategory,
    AddField,
    AddMetric,
    AddPostProcess,
    BindMetric,
    BindPostProcess,
    Deprecate,
    Migration,
    Operation,
    WaiveFieldRule,
)
from evalspec.versions.table import SpecVersion, replay

MAX_FIXTURE_ERRORS = 5
"""Fixture errors listed per file; the rest are counted, so one bad file cannot flood the report."""

_KIND_LABEL = {"metric": "metric", "post_process": "post-process rule", "category": "category"}


def _bound(op: BindMetric | BindPostProcess) -> tuple[str, str]:
    """``(kind, name)`` of what a binding allows."""
    if isinstance(op, BindMetric):
        return "metric", op.metric
    return "post_process", op.post_process


def _label(op: Operation) -> str:
    if isinstance(op, AddField):
        return f"field {op.name!r}"
    if isinstance(op, WaiveFieldRule):
        return (
            f"the waiver of {op.rule!r} for category {op.category!r} when {op.field}={op.value!r}"
        )
    if isinstance(op, Deprecate):
        return f"the deprecation of {_KIND_LABEL[op.kind]} {op.name!r}"
    if isinstance(op, (BindMetric, BindPostProcess)):
        kind, name = _bound(op)
        return f"the binding of {_KIND_LABEL[kind]} {name!r} to category {op.category!r}"
    kind = {AddMetric: "metric", AddPostProcess: "post_process", AddCategory: "category"}[type(op)]
    return f"{_KIND_LABEL[kind]} {op.name!r}"


def where(mig: Migration) -> str:
    """``migration 2 (from spec/migrations/0002_translation.py)``, for messages."""
    return f"migration {mig.version}" + (f" (from {mig.origin})" if mig.origin else "")


def check_gate(chain: Sequence[Migration]) -> list[SpecProblem]:
    """Every gate refusal for an ordered chain (see :func:`evalspec.versions.order_chain`)."""
    problems: list[SpecProblem] = []
    added: dict[str, dict[str, int]] = {
        "metric": {},
        "post_process": {},
        "category": {},
        "field": {},
    }
    bindings: dict[str, dict[str, set[str]]] = {}
    for index, mig in enumerate(chain):
        found = _check_one(mig, added, bindings)
        problems.extend(found)
        problems.extend(_placeholders(mig))
        if not found:
            problems.extend(_check_fixtures(mig, chain[: index + 1]))
    return problems


def _check_one(
    mig: Migration, added: dict[str, dict[str, int]], bindings: dict[str, dict[str, set[str]]]
) -> list[SpecProblem]:
    here = where(mig)
    out: list[SpecProblem] = []

    def refuse(message: str) -> None:
        out.append(SpecProblem("gate", f"{here}: {message}", mig.version))

    if not mig.operations:
        refuse("has no operations; a migration adds or deprecates at least one entry")
    new: dict[str, list[str]] = {"metric": [], "post_process": [], "category": []}
    categories: list[AddCategory] = []
    for op in mig.operations:
        if isinstance(op, (AddMetric, AddPostProcess, AddCategory)):
            kind = (
                "metric"
                if isinstance(op, AddMetric)
                else "post_process"
                if isinstance(op, AddPostProcess)
                else "category"
            )
            earlier = added[kind].get(op.name)
            if earlier is not None:
                again = "this migration" if earlier == mig.version else f"migration {earlier}"
                refuse(f"{_KIND_LABEL[kind]} {op.name!r} is added twice (also by {again})")
                continue
            added[kind][op.name] = mig.version
            new[kind].append(op.name)
            if isinstance(op, AddCategory):
                categories.append(op)
                bindings[op.name] = {
                    "metric": set(op.metrics),
                    "post_process": set(op.post_processes),
                }
    for op in mig.operations:
        if isinstance(op, Deprecate) and op.name not in added[op.kind]:
            refuse(
                f"deprecates {_KIND_LABEL[op.kind]} {op.name!r}, which neither this migration "
                "nor an earlier one adds"
            )
    for cat in categories:
        name = f"category {cat.name!r}"
        if not cat.metrics:
            refuse(f"{name} is added without a metric: bind at least one in metrics=(...)")
        if not cat.post_processes:
            refuse(
                f"{name} is added without a post-process rule: bind at least one in "
                "post_processes=(...)"
            )
        if not cat.fixtures:
            refuse(
                f"{name} is added without a fixture: list at least one file of its tasks "
                "in fixtures=(...)"
            )
        for kind, names, op_name in (
            ("metric", cat.metrics, "AddMetric"),
            ("post_process", cat.post_processes, "AddPostProcess"),
        ):
            for n in names:
                if n not in added[kind]:
                    refuse(
                        f"{name} binds {_KIND_LABEL[kind]} {n!r}, which neither this migration "
                        f"nor an earlier one adds (add {op_name}({n!r}) to this migration)"
                    )
    for op in mig.operations:
        if isinstance(op, (BindMetric, BindPostProcess)):
            out.extend(_check_binding(mig, op, added, bindings))
        elif isinstance(op, (AddField, WaiveFieldRule)):
            out.extend(_check_field_op(mig, op, added))
    bound = {
        "metric": {m for c in bindings.values() for m in c["metric"]},
        "post_process": {r for c in bindings.values() for r in c["post_process"]},
    }
    for kind in ("metric", "post_process"):
        for n in new[kind]:
            if n not in bound[kind]:
                refuse(
                    f"{_KIND_LABEL[kind]} {n!r} is added but no category binds it: an orphan "
                    "cannot be used by any task; bind it in an AddCategory, BindMetric or "
                    "BindPostProcess of this migration"
                )
    return out


def _check_binding(
    mig: Migration,
    op: BindMetric | BindPostProcess,
    added: dict[str, dict[str, int]],
    bindings: dict[str, dict[str, set[str]]],
) -> list[SpecProblem]:
    kind, name = _bound(op)
    label = _KIND_LABEL[kind]
    what = f"{where(mig)}: binding {label} {name!r} to category {op.category!r}"
    out: list[str] = []
    if op.category not in added["category"]:
        out.append(f"{what}: no migration up to this one adds category {op.category!r}")
    if name not in added[kind]:
        maker = "AddMetric" if kind == "metric" else "AddPostProcess"
        out.append(
            f"{what}: neither this migration nor an earlier one adds {label} {name!r} "
            f"(add {maker}({name!r}) to this migration)"
        )
    allowed = bindings.get(op.category)
    if allowed is not None and name in allowed[kind]:
        out.append(f"{what}: the category already allows it")
    if not op.fixtures:
        out.append(
            f"{what}: no fixture; list at least one file of tasks of {op.category!r} that use "
            f"{name!r} in fixtures=(...)"
        )
    if not out and allowed is not None:
        allowed[kind].add(name)
    return [SpecProblem("gate", message, mig.version) for message in out]


def _check_field_op(
    mig: Migration, op: AddField | WaiveFieldRule, added: dict[str, dict[str, int]]
) -> list[SpecProblem]:
    """An optional field or a waiver: what it names exists, and it ships a fixture."""
    what = f"{where(mig)}: {_label(op)}"
    out: list[str] = []
    if isinstance(op, AddField):
        earlier = added["field"].get(op.name)
        if earlier is not None:
            again = "this migration" if earlier == mig.version else f"migration {earlier}"
            out.append(f"{what} is added twice (also by {again})")
        else:
            added["field"][op.name] = mig.version
        categories = op.categories
        needs = f"tasks that carry {op.name!r}"
    else:
        if op.field not in added["field"]:
            out.append(
                f"{what}: neither this migration nor an earlier one adds field {op.field!r} "
                f"(add AddField({op.field!r}, ...) to this migration)"
            )
        categories = (op.category,)
        needs = f"tasks of {op.category!r} with {op.field}={op.value!r} that the waiver admits"
    for cat in categories:
        if cat not in added["category"]:
            out.append(f"{what}: no migration up to this one adds category {cat!r}")
    if not op.fixtures:
        out.append(f"{what}: no fixture; list at least one file of {needs} in fixtures=(...)")
    return [SpecProblem("gate", message, mig.version) for message in out]


def _placeholders(mig: Migration) -> list[SpecProblem]:
    """Descriptions ``spec new`` left for the author to write (they do not block other checks)."""
    out = []
    for op in mig.operations:
        description = op.reason if isinstance(op, Deprecate) else op.description
        if description.startswith(PLACEHOLDER):
            message = (
                f"{where(mig)}: {_label(op)} still has the placeholder description "
                f"{description!r} from `evalspec spec new`; say what it is"
            )
            out.append(SpecProblem("gate", message, mig.version))
    return out


def _check_fixtures(mig: Migration, prefix: Sequence[Migration]) -> list[SpecProblem]:
    categories = [op for op in mig.operations if isinstance(op, AddCategory)]
    binds = [op for op in mig.operations if isinstance(op, (BindMetric, BindPostProcess))]
    field_ops = [op for op in mig.operations if isinstance(op, (AddField, WaiveFieldRule))]
    if not categories and not binds and not field_ops:
        return []
    try:
        spec = replay(tuple(prefix))
    except MigrationError:
        return []  # the chain itself is broken; its problems are reported elsewhere
    here = where(mig)
    out: list[SpecProblem] = []
    added = {c.name for c in categories} | {b.category for b in binds}
    for op in field_ops:
        if isinstance(op, WaiveFieldRule):
            added.add(op.category)
        else:  # a field any category may carry extends every one of them
            added.update(op.categories or spec.categories)
    # fixture file -> its valid tasks, and their (category, metric, rule)
    valid_in: dict[str, list[TaskSpec]] = {}
    tasks_in: dict[str, set[tuple[str, str, str]]] = {}
    unreadable: set[str] = set()
    # (what the fixtures belong to, for messages; the fixtures)
    owners = [(f"category {c.name!r}", c.fixtures) for c in categories]
    owners += [(f"category {b.category!r}", b.fixtures) for b in binds]
    owners += [(_label(op), op.fixtures) for op in field_ops]
    for owner, fixtures in owners:
        for rel in fixtures:
            if rel in tasks_in or rel in unreadable:
                continue
            try:
                data = mig.read_fixture(rel)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                unreadable.add(rel)
                out.append(
                    SpecProblem(
                        "fixture",
                        f"{here}: fixture {rel!r} of {owner} cannot be read ({reason})",
                        mig.version,
                    )
                )
                continue
            valid_in[rel], found = _validate_fixture(mig, rel, data, spec, added)
            tasks_in[rel] = {(t.category, t.metric_name, t.post_process) for t in valid_in[rel]}
            out.extend(found)
    for op in field_ops:
        readable = [rel for rel in op.fixtures if rel in valid_in]
        if not op.fixtures or len(readable) != len(op.fixtures):
            continue
        tasks = [t for rel in readable for t in valid_in[rel]]
        if not any(_exercises(op, t, spec) for t in tasks):
            holds = (
                f"a valid task that carries field {op.name!r}"
                if isinstance(op, AddField)
                else f"a valid task of category {op.category!r} with {op.field}={op.value!r} "
                f"that breaks {op.rule!r} without the waiver"
            )
            out.append(
                SpecProblem(
                    "fixture",
                    f"{here}: {_label(op)} has no fixture task: none of "
                    f"{', '.join(map(repr, op.fixtures))} holds {holds}",
                    mig.version,
                )
            )
    for bind in binds:
        kind, name = _bound(bind)
        column = 1 if kind == "metric" else 2
        readable = [rel for rel in bind.fixtures if rel in tasks_in]
        uses = any(
            t[0] == bind.category and t[column] == name for rel in readable for t in tasks_in[rel]
        )
        if bind.fixtures and not uses and len(readable) == len(bind.fixtures):
            out.append(
                SpecProblem(
                    "fixture",
                    f"{here}: {_label(bind)} has no fixture task: none of "
                    f"{', '.join(map(repr, bind.fixtures))} holds a valid task of category "
                    f"{bind.category!r} that uses {name!r}",
                    mig.version,
                )
            )
    for cat in categories:
        readable = [rel for rel in cat.fixtures if rel in tasks_in]
        if readable and not any(t[0] == cat.name for rel in readable for t in tasks_in[rel]):
            out.append(
                SpecProblem(
                    "fixture",
                    f"{here}: category {cat.name!r} has no fixture task: none of "
                    f"{', '.join(map(repr, readable))} holds a valid task of category "
                    f"{cat.name!r}",
                    mig.version,
                )
            )
    return out


def _exercises(op: AddField | WaiveFieldRule, task: TaskSpec, spec: SpecVersion) -> bool:
    """``task`` (valid at ``spec``) uses the field, or is admitted only by the waiver."""
    if isinstance(op, AddField):
        return op.name in task.added_fields
    if task.category != op.category or task.added_fields.get(op.field) != op.value:
        return False
    from evalspec.validation.precise import check_object

    waiver = (op.rule, op.category, op.field, op.value)
    unwaived = _evolve(spec, waivers=spec.waivers - {waiver})
    return any(rule == op.rule for rule, _f, _m in check_object(task.to_dict(), unwaived))


def _evolve(spec: SpecVersion, **changes: Any) -> SpecVersion:
    import attrs

    evolved: SpecVersion = attrs.evolve(spec, **changes)
    return evolved


def _table_only(spec: SpecVersion) -> Any:
    """A registry of ``spec``'s table and no implementations.

    Validation reads only the table, so this is enough, and the gate does not
    depend on which plugins are installed.
    """
    from evalspec.registry.build import Registry

    empty: MappingProxyType[Any, Any] = MappingProxyType({})
    return Registry(
        spec=spec,
        chain=tuple(),
        categories=empty,
        metrics=empty,
        post_processors=empty,
        owners=empty,
        plugins=empty,
    )


def _validate_fixture(
    mig: Migration, rel: str, data: bytes, spec: SpecVersion, added: set[str]
) -> tuple[list[TaskSpec], list[SpecProblem]]:
    from evalspec.validation.validator import iter_validate

    here = where(mig)
    messages: list[str] = []
    seen: list[TaskSpec] = []
    for verdict in iter_validate(io.BytesIO(data), registry=_table_only(spec)):
        if verdict.task is None:
            for e in verdict.errors:
                field = f" {e.field}" if e.field else ""
                messages.append(
                    f"fixture {rel!r} line {e.line} does not validate under spec version "
                    f"{spec.version}: {e.rule}{field} — {e.message}"
                )
        elif verdict.task.category not in added:
            messages.append(
                f"fixture {rel!r} line {verdict.line} is a task of category "
                f"{verdict.task.category!r}, which this migration neither adds nor extends; a "
                "migration's fixtures hold only tasks of the categories it adds or binds to"
            )
        else:
            seen.append(verdict.task)
    shown = messages[:MAX_FIXTURE_ERRORS]
    if len(messages) > len(shown):
        shown.append(f"fixture {rel!r}: {len(messages) - len(shown)} more problems not shown")
    return seen, [SpecProblem("fixture", f"{here}: {m}", mig.version) for m in shown]
