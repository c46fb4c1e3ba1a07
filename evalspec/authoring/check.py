"""``evalspec spec check`` as a function: every problem of a project's spec at once.

It runs, in order: the project settings, the chain (linear 1..N), the gate
(each migration ships what it adds), the fixtures, the lock (released
migrations unchanged; newer ones pending), the implementations (every
declared name implemented, nothing undeclared) and the changelog (an entry
per spec version the project ships). Later checks that need an earlier one
to pass (the gate needs a chain) are skipped when it fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from evalspec.authoring.gate import check_gate, where
from evalspec.authoring.problem import SpecProblem
from evalspec.errors import (
    ChainError,
    EvalspecError,
    LockError,
    MigrationError,
    PluginError,
    RegistryError,
    RegistryProblems,
    UnreadableFixtureError,
)
from evalspec.registry.project import Project, ProjectMigrations, lock_label
from evalspec.versions.changelog import spec_versions_in
from evalspec.versions.lock import Lock, verify
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
from evalspec.versions.table import order_chain


@attrs.frozen
class SpecReport:
    """What ``spec check`` found: the chain as collected, problems and notes.

    ``released`` is the newest version the effective lock releases (0 when
    none or unknown); versions above it are pending. ``owned`` are the
    versions this project ships itself (its migrations directory, its
    ``plugins`` and the entry points it distributes).
    """

    project: Project
    migrations: tuple[Migration, ...]
    problems: tuple[SpecProblem, ...]
    notes: tuple[str, ...]
    released: int
    lock_label: str
    owned: frozenset[int]
    chain_ok: bool

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def head(self) -> int:
        return max((m.version for m in self.migrations), default=0)

    def status(self, version: int) -> str:
        return "released" if version <= self.released else "pending"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
            "released": self.released,
            "head": self.head,
            "lock": self.lock_label,
        }


def collect_migrations(
    plugins: Sequence[object], *, entry_points: bool, project: Project
) -> tuple[list[Migration], set[int]]:
    """Every migration every plugin contributes (duplicates kept), and which the project owns.

    :raises PluginError: a plugin failed to load or its hook raised.
    """
    from evalspec.registry.build import collect_migrations as collect
    from evalspec.registry.manager import make_plugin_manager

    pm = make_plugin_manager(plugins, entry_points=entry_points)
    found: list[Migration] = []
    owned: set[int] = set()
    for owner, mig in collect(pm):
        plugin = pm.get_plugin(owner)
        mine = (
            isinstance(plugin, ProjectMigrations)
            or owner in project.own_entry_points
            or getattr(plugin, "__name__", None) in project.plugins
        )
        found.append(mig)
        if mine:
            owned.add(mig.version)
    return found, owned


def check_project(
    project: Project, *, plugins: Iterable[object] = (), entry_points: bool = True
) -> SpecReport:
    """Run every check on ``project``; ``plugins`` are added to the project's own."""
    problems: list[SpecProblem] = []
    notes: list[str] = []
    label = lock_label(project)

    def report(
        migrations: Sequence[Migration] = (),
        released: int = 0,
        owned: Iterable[int] = (),
        chain_ok: bool = False,
    ) -> SpecReport:
        return SpecReport(
            project,
            tuple(sorted(migrations, key=lambda m: m.version)),
            tuple(problems),
            tuple(notes),
            released,
            label,
            frozenset(owned),
            chain_ok,
        )

    try:
        all_plugins = [*project.load_plugins(), *plugins]
        migrations, owned = collect_migrations(
            all_plugins, entry_points=entry_points, project=project
        )
    except EvalspecError as exc:
        problems.append(SpecProblem("config", str(exc)))
        return report()
    try:
        chain = order_chain(migrations)
    except ChainError as exc:
        problems.extend(
            SpecProblem("chain", p, _version_named(p, migrations)) for p in exc.problems
        )
        try:
            released = project.effective_lock().released
        except LockError:
            released = 0
        return report(migrations, released, owned=owned)
    problems.extend(check_gate(chain))
    released = _check_lock(project, chain, problems, notes)
    _check_implementations(all_plugins, entry_points, problems)
    _check_changelog(project, chain, owned, problems)
    return report(chain, released, owned, chain_ok=True)


def _version_named(problem: str, migrations: Sequence[Migration]) -> int | None:
    """The highest version a chain problem names, so ``spec list`` can mark it."""
    words = problem.replace(",", " ").replace(":", " ").split()
    named = [int(w) for w in words if w.isdigit() and any(m.version == int(w) for m in migrations)]
    return max(named, default=None)


def _check_lock(
    project: Project, chain: tuple[Migration, ...], problems: list[SpecProblem], notes: list[str]
) -> int:
    try:
        lock: Lock = project.effective_lock()
    except LockError as exc:
        problems.append(SpecProblem("lock", str(exc)))
        return 0
    # The gate already names a fixture it cannot read: report it once, there.
    unreadable = {
        p.version for p in problems if p.check == "fixture" and "cannot be read" in p.message
    }
    for err in verify(chain, lock):
        if isinstance(err, UnreadableFixtureError) and err.version in unreadable:
            continue
        problems.append(SpecProblem("lock", str(err), getattr(err, "version", None)))
    label = lock_label(project)
    for mig in chain:
        if mig.version > lock.released:
            notes.append(
                f"spec version {mig.version} ({mig.origin or 'unknown origin'}) is pending: "
                f"{label} does not release it, so tasks validate against version "
                f"{lock.released} by default; `evalspec spec lock` releases it once "
                "`evalspec spec check` passes"
            )
    return lock.released


def _check_implementations(
    plugins: Sequence[object], entry_points: bool, problems: list[SpecProblem]
) -> None:
    from evalspec.registry.build import build_registry

    try:
        build_registry(plugins, entry_points=entry_points)
    except RegistryProblems as exc:
        problems.extend(SpecProblem("implementation", str(p)) for p in exc.problems)
    except (RegistryError, PluginError, MigrationError) as exc:
        problems.append(SpecProblem("implementation", str(exc)))


def _check_changelog(
    project: Project, chain: tuple[Migration, ...], owned: set[int], problems: list[SpecProblem]
) -> None:
    path = project.changelog
    if path is None or not path.is_file():
        return
    try:
        recorded = spec_versions_in(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(SpecProblem("changelog", f"cannot read {project.relative(path)}: {exc}"))
        return
    for mig in chain:
        if mig.version in owned and mig.version not in recorded:
            problems.append(
                SpecProblem(
                    "changelog",
                    f"{where(mig)} has no entry in {project.relative(path)}: add a line "
                    f"starting `- Spec version {mig.version}:` saying what it adds",
                    mig.version,
                )
            )


def summarize(mig: Migration) -> dict[str, list[str]]:
    """What a migration adds, binds and deprecates, by kind (for ``spec list``)."""
    out: dict[str, list[str]] = {
        "categories": [],
        "metrics": [],
        "post_processes": [],
        "fields": [],
        "binds": [],
        "waives": [],
        "deprecates": [],
    }
    for op in mig.operations:
        if isinstance(op, AddCategory):
            out["categories"].append(op.name)
        elif isinstance(op, AddMetric):
            out["metrics"].append(op.name)
        elif isinstance(op, AddPostProcess):
            out["post_processes"].append(op.name)
        elif isinstance(op, BindMetric):
            out["binds"].append(f"metric {op.metric} to {op.category}")
        elif isinstance(op, BindPostProcess):
            out["binds"].append(f"post_process {op.post_process} to {op.category}")
        elif isinstance(op, Deprecate):
            out["deprecates"].append(f"{op.kind} {op.name}")
        elif isinstance(op, AddField):
            out["fields"].append(op.name)
        elif isinstance(op, WaiveFieldRule):
            out["waives"].append(f"{op.rule} for {op.category} when {op.field}={op.value}")
    return out


def operation_lines(mig: Migration) -> list[str]:
    """One line per operation of a migration, with its description (for ``spec show``)."""
    lines = []
    for op in mig.operations:
        if isinstance(op, AddMetric):
            what = f"metric {op.name}"
        elif isinstance(op, AddPostProcess):
            what = f"post-process rule {op.name}"
        elif isinstance(op, AddCategory):
            what = f"category {op.name}"
        elif isinstance(op, BindMetric):
            what = f"binds metric {op.metric} to {op.category}"
        elif isinstance(op, BindPostProcess):
            what = f"binds post-process rule {op.post_process} to {op.category}"
        elif isinstance(op, AddField):
            details = [f"one of {', '.join(op.choices)}"] if op.choices else []
            if op.categories:
                details.append(f"only in {', '.join(op.categories)}")
            what = f"optional field {op.name}" + (f" ({'; '.join(details)})" if details else "")
        elif isinstance(op, WaiveFieldRule):
            what = f"waives {op.rule} for {op.category} when {op.field}={op.value}"
        else:
            what = f"deprecates {op.kind} {op.name}"
        description = op.reason if isinstance(op, Deprecate) else op.description
        lines.append(f"{what}: {description}" if description else what)
    return lines
