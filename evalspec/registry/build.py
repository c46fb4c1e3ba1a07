"""The closed, frozen registries of categories, metrics and post-process rules.

:func:`build_registry` asks every plugin for its entries and then closes the
registry against the version table: every implemented name must be declared
by a migration, every declared name implemented, and no name contributed
twice. :func:`project_registry` does the same for a project: the installed
plugins plus the project's ``[tool.evalspec]`` migrations and plugins, with
the project's lock deciding which versions are in force.

Hooks are called through pluggy, one plugin at a time (see
:mod:`evalspec.hookspecs` for the calling semantics), so that each entry is
stamped with the plugin that registered it.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from evalspec.errors import (
    DuplicateNameError,
    EvalspecError,
    MigrationError,
    PendingVersionError,
    PluginError,
    RegistryError,
    RegistryProblems,
    UndeclaredNameError,
    UnimplementedNameError,
    UnknownNameError,
)
from evalspec.model import Category, Metric, PostProcessRule
from evalspec.registry.project import (
    Project,
    check_version,
    current_project,
    forget_projects,
    in_force,
    load_project,
    lock_label,
    project_governing,
)
from evalspec.versions import Migration, SpecVersion, order_chain, replay

if TYPE_CHECKING:  # pluggy is imported only when a registry is built, off the snapshot's path
    from evalspec.registry.manager import PluginManager

T = TypeVar("T")

MIGRATIONS_HOOK = "evalspec_register_migrations"

# kind label used in messages -> (hook name, entry class)
_KINDS: dict[str, tuple[str, type]] = {
    "category": ("evalspec_register_categories", Category),
    "metric": ("evalspec_register_metrics", Metric),
    "post_process": ("evalspec_register_post_processors", PostProcessRule),
}


@attrs.frozen
class Registry:
    """Everything in force at one spec version: its table and the implementations.

    Built only by :func:`build_registry`; its mappings are read-only.
    """

    spec: SpecVersion
    chain: tuple[Migration, ...] = attrs.field(repr=False)
    categories: Mapping[str, Category] = attrs.field(repr=False)
    metrics: Mapping[str, Metric] = attrs.field(repr=False)
    post_processors: Mapping[str, PostProcessRule] = attrs.field(repr=False)
    owners: Mapping[tuple[str, str], str] = attrs.field(repr=False)
    """``(kind, name) -> plugin name`` for every entry, including migrations."""
    plugins: Mapping[str, str | None] = attrs.field(repr=False)
    """Plugin name -> distribution version (``None`` for plugins passed in)."""

    @property
    def version(self) -> int:
        return self.spec.version

    @property
    def head(self) -> int:
        """The newest version the version table holds."""
        return self.chain[-1].version

    def category(self, name: str) -> Category:
        return _lookup(self.categories, "category", name)

    def metric(self, name: str) -> Metric:
        return _lookup(self.metrics, "metric", name)

    def post_processor(self, name: str) -> PostProcessRule:
        return _lookup(self.post_processors, "post-process rule", name)

    def at_version(self, version: int | None) -> Registry:
        """The same implementations with the table replayed to ``version``."""
        if version == self.spec.version:
            return self
        spec = replay(self.chain, version)
        return attrs.evolve(
            self,
            spec=spec,
            categories=_restrict(self.categories, spec.categories),
            metrics=_restrict(self.metrics, spec.metrics),
            post_processors=_restrict(self.post_processors, spec.post_processes),
        )


def _lookup(table: Mapping[str, T], kind: str, name: str) -> T:
    try:
        return table[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(table), n=1)
        raise UnknownNameError(kind, name, close) from None


def _restrict(table: Mapping[str, T], names: Iterable[str]) -> Mapping[str, T]:
    return MappingProxyType({n: table[n] for n in names})


# -- calling the hooks ---------------------------------------------------------------------


def collect(pm: PluginManager, hook_name: str, cls: type[T]) -> list[tuple[str, T]]:
    """``(plugin name, entry)`` for every entry every plugin registers, duplicates kept.

    The hook is called through pluggy once per plugin, in registration order,
    with a ``register`` callable that knows its plugin: hook wrappers
    (``wrapper=True`` / ``hookwrapper=True``) wrap their own plugin's
    implementations, ``tryfirst``/``trylast`` order them, and pluggy's tracing
    (``pm.trace``, ``pm.add_hookcall_monitoring``) sees every call.

    :raises PluginError: a plugin registered something other than ``cls``,
        called ``register`` after its hook returned, or its hook raised.
    """
    found: list[tuple[str, T]] = []
    implementing = {impl.plugin_name for impl in getattr(pm.hook, hook_name).get_hookimpls()}
    plugins = [(name, plugin) for name, plugin in pm.list_name_plugin() if name in implementing]
    for owner, _ in plugins:
        others = [p for name, p in plugins if name != owner]
        caller = pm.subset_hook_caller(hook_name, remove_plugins=others)
        open_ = [True]

        def register(entry: object, _owner: str = owner, _open: list[bool] = open_) -> None:
            if not _open[0]:
                msg = f"plugin {_owner!r} called register() after its hook returned"
                raise RegistryError(msg)
            if not isinstance(entry, cls):
                msg = f"{hook_name} expects {cls.__name__}, got {type(entry).__name__}"
                raise PluginError(_owner, hook_name, msg)
            found.append((_owner, entry))

        try:
            caller(register=register)
        except EvalspecError:
            raise
        except Exception as exc:
            raise PluginError(owner, hook_name, f"{type(exc).__name__}: {exc}") from exc
        finally:
            open_[0] = False
    return found


def collect_migrations(pm: PluginManager) -> list[tuple[str, Migration]]:
    """Every migration with its plugin name; each gets an ``origin`` naming that plugin."""
    return [
        (owner, mig if mig.origin else attrs.evolve(mig, origin=f"plugin {owner}"))
        for owner, mig in collect(pm, MIGRATIONS_HOOK, Migration)
    ]


# -- building ------------------------------------------------------------------------------


def build_registry(
    plugins: Iterable[object] = (),
    *,
    entry_points: bool = True,
    builtins: bool = True,
    spec_version: int | None = None,
    plugin_manager: PluginManager | None = None,
) -> Registry:
    """Load plugins and build the frozen registry at ``spec_version`` (default: newest).

    :param plugins: plugin objects (modules, classes or instances) to use
        besides the installed ones; wrap one in :class:`evalspec.registry.manager.NamedPlugin`
        to choose its name. Tests and embedding applications pass the exact
        list they want with ``entry_points=False``.
    :param entry_points: load the plugins of the ``evalspec`` entry-point group.
    :param builtins: include evalspec's built-in vocabulary (package
        ``evalspec_plugins``) even when ``entry_points`` is false; pass
        ``builtins=False`` for a registry of exactly ``plugins``.
    :param spec_version: the version to build the registry at.
    :param plugin_manager: a manager from :func:`evalspec.registry.manager.make_plugin_manager`
        to use instead of making one (to trace its hook calls, say).
    :raises PluginError: a plugin failed to load or to register its entries.
    :raises RegistryError: a name is contributed twice, undeclared or unimplemented.
    :raises MigrationError: the migrations do not form a valid linear chain.
    :raises SpecVersionError: ``spec_version`` is not in the table.
    """
    pm = plugin_manager
    if pm is None:
        from evalspec.registry.manager import make_plugin_manager

        pm = make_plugin_manager(plugins, entry_points=entry_points, builtins=builtins)
    return _assemble(pm, collect_migrations(pm), spec_version)


def _assemble(
    pm: PluginManager,
    migrations: list[tuple[str, Migration]],
    spec_version: int | None,
    *,
    upto: int | None = None,
) -> Registry:
    """Close the registry over ``migrations``; with ``upto``, over versions 1..upto only.

    With ``upto``, entries for names the first ``upto`` versions do not declare
    are left out instead of refused: they belong to pending versions.
    """
    owners: dict[tuple[str, str], str] = {}
    kept = [(o, m) for o, m in migrations if upto is None or m.version <= upto]
    for owner, mig in kept:
        owners.setdefault(("migration", str(mig.version)), owner)
    chain = order_chain(m for _, m in kept)
    declared = _declared(chain)
    entries: dict[str, dict[str, Any]] = {}
    problems: list[RegistryError] = []
    for kind, (hook, cls) in _KINDS.items():
        entries[kind] = {}
        seen: dict[str, str] = {}  # name -> first owner, declared or not
        found: list[tuple[str, Any]] = collect(pm, hook, cls)
        for owner, entry in found:
            name: str = entry.name
            if upto is not None and name not in declared[kind]:
                continue  # a pending version's name: not this registry's business
            if name in seen:
                problems.append(DuplicateNameError(kind, name, (seen[name], owner)))
                continue
            seen[name] = owner
            if name not in declared[kind]:
                problems.append(UndeclaredNameError(kind, name, owner))
                continue
            entries[kind][name] = entry
            owners[(kind, name)] = owner
        for name, version in declared[kind].items():
            if name not in entries[kind] and not any(
                isinstance(p, DuplicateNameError) and p.name == name for p in problems
            ):
                problems.append(UnimplementedNameError(kind, name, version))
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise RegistryProblems(problems)
    spec = replay(chain, spec_version)
    return Registry(
        spec=spec,
        chain=chain,
        categories=_restrict(entries["category"], spec.categories),
        metrics=_restrict(entries["metric"], spec.metrics),
        post_processors=_restrict(entries["post_process"], spec.post_processes),
        owners=MappingProxyType(owners),
        plugins=MappingProxyType(pm.plugin_versions()),
    )


def _declared(chain: tuple[Migration, ...]) -> dict[str, dict[str, int]]:
    head = replay(chain)
    return {
        "category": {n: c.added_in for n, c in head.categories.items()},
        "metric": dict(head.metrics),
        "post_process": dict(head.post_processes),
    }


# -- the project's registry ----------------------------------------------------------------


def project_registry(
    project: Project | str | None = None,
    spec_version: int | None = None,
    *,
    pending: bool = False,
) -> Registry:
    """The registry of a project: installed plugins plus its migrations and plugins.

    :param project: a :class:`~evalspec.registry.project.Project`, a
        directory inside one, or ``None`` for the project of the current
        directory (the nearest ``pyproject.toml`` above it).
    :param spec_version: the version to build at (default: the newest in force).
    :param pending: include the versions the project has not locked yet (for
        a plugin's own tests and the conformance kit); without it only the
        versions the project's lock releases are in force.

    A pending version that is broken (a duplicate or dangling migration, a
    name not implemented yet) never blocks the released versions: they are
    built without it, and ``evalspec spec check`` names the problem.

    :raises PendingVersionError: ``spec_version`` is not released by the project.
    :raises SpecVersionError: ``spec_version`` is not in the table.
    :raises LockError: a released migration was edited, or is missing.
    :raises ProjectConfigError: ``[tool.evalspec]`` or a project plugin is unusable.
    """
    if project is None:
        proj = current_project()
    elif isinstance(project, Project):
        proj = project
    else:
        proj = load_project(project)
    released = None if pending else proj.effective_lock().released
    from evalspec.registry.manager import make_plugin_manager

    pm = make_plugin_manager(proj.load_plugins(skip_broken_after=released))
    migrations = collect_migrations(pm)
    try:
        newest = _assemble(pm, migrations, None)
    except (MigrationError, RegistryError) as exc:
        if released is None:
            raise
        try:
            newest = _assemble(pm, migrations, None, upto=released)
        except (MigrationError, RegistryError):
            raise exc from None
        if spec_version is not None and spec_version > released:
            msg = (
                f"spec version {spec_version} is pending and invalid ({exc}); "
                "run `evalspec spec check`"
            )
            raise PendingVersionError(msg) from exc
    if pending:
        return newest.at_version(spec_version)
    current = in_force(proj, newest.chain)
    target = check_version(spec_version, current, newest.head, lock_label(proj))
    return newest.at_version(target)


def default_registry(spec_version: int | None = None) -> Registry:
    """The registry of the installed plugins and the current project, at a version in force.

    :func:`project_registry` of the current directory's project, cached per
    project: its migrations and plugins join the installed ones, and its lock
    (or, without one, evalspec's own) decides which versions are in force.
    ``spec_version`` defaults to the newest of them; a version the project
    has not locked raises :class:`~evalspec.errors.PendingVersionError`.
    """
    return _cached_registry(current_project(), spec_version)


def registry_governing(path: str | os.PathLike[str], spec_version: int | None = None) -> Registry:
    """:func:`default_registry` of the project governing ``path`` (the nearest
    ``pyproject.toml`` at or above it), whatever the current directory: what the
    pytest plugin validates a task file against, as ``evalspec validate PATH`` does."""
    return _cached_registry(project_governing(path), spec_version)


@functools.lru_cache(maxsize=16)
def _cached_registry(project: Project, spec_version: int | None) -> Registry:
    if spec_version is not None:
        newest = _cached_registry(project, None)
        if spec_version <= newest.version:
            return newest.at_version(check_version(spec_version, newest.version, newest.head, ""))
    return project_registry(project, spec_version)


def clear_default_registry() -> None:
    """Forget the cached default registry (after installing a plugin, in tests)."""
    forget_projects()
    _cached_registry.cache_clear()


__all__ = [
    "Registry",
    "build_registry",
    "clear_default_registry",
    "collect",
    "collect_migrations",
    "default_registry",
    "project_registry",
]
