"""The closed, frozen registries of categories, metrics and post-process rules.

:func:`build_registry` asks every plugin for its entries, one plugin at a
time so that each entry is stamped with its owner, and then closes the
registry against the version table: every implemented name must be declared
by a migration, every declared name implemented, and no name contributed
twice.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from evalspec.errors import (
    DuplicateNameError,
    PluginError,
    RegistryError,
    RegistryProblems,
    UndeclaredNameError,
    UnimplementedNameError,
    UnknownNameError,
)
from evalspec.manager import PluginManager, make_plugin_manager
from evalspec.model import Category, Metric, PostProcessRule
from evalspec.versions import Migration, SpecVersion, order_chain, replay

if TYPE_CHECKING:
    from evalspec.versions.settings import Project

T = TypeVar("T")

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


def build_registry(
    plugins: Iterable[object] = (),
    *,
    entry_points: bool = True,
    spec_version: int | None = None,
) -> Registry:
    """Load plugins and build the frozen registry at ``spec_version`` (default: newest).

    :param plugins: plugin objects to use besides (or, with
        ``entry_points=False``, instead of) the installed ones. Tests and
        embedding applications pass the exact list they want.
    :param entry_points: load the plugins of the ``evalspec`` entry-point group.
    :param spec_version: the version to validate against.
    :raises PluginError: a plugin failed to load or to register its entries.
    :raises RegistryError: a name is contributed twice, undeclared or unimplemented.
    :raises MigrationError: the migrations do not form a valid linear chain.
    :raises SpecVersionError: ``spec_version`` is not in the table.
    """
    pm = make_plugin_manager(plugins, entry_points=entry_points)
    owners: dict[tuple[str, str], str] = {}
    migrations = _collect(pm, "evalspec_register_migrations", Migration, "migration", owners)
    for name, mig in migrations.items():
        if not mig.origin:
            migrations[name] = attrs.evolve(
                mig, origin=f"plugin {owners[('migration', str(name))]}"
            )
    chain = order_chain(migrations.values())
    head = replay(chain)
    declared = _declared(chain)
    entries: dict[str, dict[str, Any]] = {}
    problems: list[RegistryError] = []
    for kind, (hook, cls) in _KINDS.items():
        try:
            entries[kind] = _collect(pm, hook, cls, kind, owners)
        except DuplicateNameError as exc:
            problems.append(exc)
            entries[kind] = {}
            continue
        for name in entries[kind]:
            if name not in declared[kind]:
                problems.append(UndeclaredNameError(kind, name, owners[(kind, name)]))
        for name, version in declared[kind].items():
            if name not in entries[kind]:
                problems.append(UnimplementedNameError(kind, name, version))
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise RegistryProblems(problems)
    spec = head if spec_version is None else replay(chain, spec_version)
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
    out: dict[str, dict[str, int]] = {
        "category": {n: c.added_in for n, c in head.categories.items()},
        "metric": dict(head.metrics),
        "post_process": dict(head.post_processes),
    }
    return out


def _collect(
    pm: PluginManager, hook_name: str, cls: type, kind: str, owners: dict[tuple[str, str], str]
) -> dict[Any, Any]:
    """Call one registration hook plugin by plugin; entries keyed by name (or version)."""
    found: dict[Any, Any] = {}
    caller = getattr(pm.hook, hook_name)
    # get_hookimpls() lists impls in registration order (pluggy *calls* them
    # LIFO), so "first" and "second" in a duplicate-name message mean what they say.
    for impl in caller.get_hookimpls():
        owner = impl.plugin_name
        state = {"open": True}

        def register(entry: object, _owner: str = owner, _state: dict[str, bool] = state) -> None:
            if not _state["open"]:
                msg = f"plugin {_owner!r} called register() after its hook returned"
                raise RegistryError(msg)
            if not isinstance(entry, cls):
                msg = f"{hook_name} expects {cls.__name__}, got {type(entry).__name__}"
                raise PluginError(_owner, hook_name, msg)
            key = entry.version if isinstance(entry, Migration) else entry.name  # type: ignore[attr-defined]
            if key in found:
                raise DuplicateNameError(kind, str(key), (owners[(kind, str(key))], _owner))
            found[key] = entry
            owners[(kind, str(key))] = _owner

        kwargs = {"register": register} if "register" in impl.argnames else {}
        try:
            impl.function(**kwargs)
        except (RegistryError, PluginError):
            raise
        except Exception as exc:
            raise PluginError(owner, hook_name, f"{type(exc).__name__}: {exc}") from exc
        finally:
            state["open"] = False
    return found


def default_registry(spec_version: int | None = None) -> Registry:
    """The registry of the installed plugins and the current project, at a version in force.

    The project is the nearest ``pyproject.toml`` above the current directory
    (see :mod:`evalspec.versions.settings`): its migrations and plugins join the
    installed ones, and its lock (or, without one, evalspec's own) decides
    which versions are in force. ``spec_version`` defaults to the newest of
    them; a version the project has not locked raises
    :class:`~evalspec.errors.PendingVersionError`. Cached per project.
    """
    from evalspec.versions.settings import current_project

    return _project_registry(current_project(), spec_version)


@functools.lru_cache(maxsize=16)
def _project_registry(project: Project, spec_version: int | None) -> Registry:
    from evalspec.versions.settings import project_registry

    if spec_version is not None:
        return _project_registry(project, None).at_version(_checked_version(project, spec_version))
    return project_registry(project)


def _checked_version(project: Project, spec_version: int) -> int:
    from evalspec.versions.settings import check_version, lock_label

    newest = _project_registry(project, None)
    return check_version(spec_version, newest.version, newest.head, lock_label(project))


def clear_default_registry() -> None:
    """Forget the cached default registry (after installing a plugin, in tests)."""
    from evalspec.versions.settings import forget_projects

    forget_projects()
    _project_registry.cache_clear()


__all__ = ["Registry", "build_registry", "clear_default_registry", "default_registry"]
