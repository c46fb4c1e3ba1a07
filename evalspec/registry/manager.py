"""Build the pluggy plugin manager: entry points, the built-ins and explicitly passed plugins.

Every plugin gets a stable name, the same in every process: an entry point's
name, a module's ``__name__``, the name a :class:`NamedPlugin` gives it (the
project's plugins are ``project-plugin:<module>``, its migrations directory
``project:<path>``), or, for any other object, its class's qualified name.
Messages and the score report's provenance use these names.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

import attrs
import pluggy

from evalspec import hookspecs
from evalspec.errors import PluginError
from evalspec.registry import discovery

ENTRY_POINT_GROUP = "evalspec"
BUILTIN_PACKAGE = "evalspec_plugins"
"""The package of the built-in vocabulary; its ``PLUGINS`` maps entry-point names to modules."""


@attrs.frozen
class NamedPlugin:
    """A plugin object with the name to register it under (instead of its canonical name)."""

    name: str
    plugin: object = attrs.field(eq=False)


class PluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers which distribution each plugin came from."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.distributions: dict[str, tuple[str, str]] = {}
        """Plugin name -> (distribution name, version), for entry-point plugins."""

    def get_canonical_name(self, plugin: object) -> str:
        """A module's ``__name__``; for other objects, a name that is the same in every run.

        pluggy's default falls back to ``id(plugin)``, which changes per
        process and would leak into messages and reports.
        """
        name = getattr(plugin, "__name__", None)
        if isinstance(name, str) and name:
            return name
        cls = plugin if isinstance(plugin, type) else type(plugin)
        return f"{cls.__module__}.{cls.__qualname__}"

    def plugin_versions(self) -> dict[str, str | None]:
        """Plugin name -> version of the distribution that installed it (None if unknown)."""
        return {
            name: self.distributions[name][1] if name in self.distributions else None
            for name, _ in self.list_name_plugin()
        }


def builtin_plugins() -> list[NamedPlugin]:
    """evalspec's built-in vocabulary, named as its entry points name it."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    return [
        NamedPlugin(name, importlib.import_module(module))
        for name, module in package.PLUGINS.items()
    ]


def make_plugin_manager(
    plugins: Iterable[object] = (), *, entry_points: bool = True, builtins: bool = True
) -> PluginManager:
    """A fresh plugin manager with the hookspecs added.

    :param plugins: plugin objects (modules, classes or instances, or
        :class:`NamedPlugin`) to register explicitly, after the entry points.
        Passing the same object twice, or one already loaded from an entry
        point, registers it once.
    :param entry_points: also load every plugin of the ``evalspec`` entry-point
        group (the built-in vocabulary is one of them).
    :param builtins: register the built-in vocabulary even without entry points.
    :raises PluginError: a plugin failed to import, or implements a hook
        that does not exist or with arguments the hook does not offer.
    """
    pm = PluginManager()
    if entry_points:
        # Cached by the installed distributions' mtimes (evalspec.registry.discovery).
        for ep in discovery.entry_points(ENTRY_POINT_GROUP):
            if pm.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:
                raise PluginError(ep.name, "import", f"{type(exc).__name__}: {exc}") from exc
            if not pm.is_registered(plugin):
                _register(pm, plugin, ep.name)
                if ep.dist is not None:
                    pm.distributions[ep.name] = (ep.dist.name, ep.dist.version)
    chosen = [*builtin_plugins(), *plugins] if builtins else list(plugins)
    for item in chosen:
        name, plugin = (item.name, item.plugin) if isinstance(item, NamedPlugin) else (None, item)
        if not pm.is_registered(plugin):
            _register(pm, plugin, name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = str(pm.get_name(exc.plugin) or pm.get_canonical_name(exc.plugin))
        raise PluginError(name, "registration", str(exc)) from exc
    return pm


def _register(pm: PluginManager, plugin: object, name: str | None) -> None:
    label = name or pm.get_canonical_name(plugin)
    if pm.has_plugin(label):
        # Two distinct objects with one canonical name (two instances of a
        # class): number them in registration order, which is deterministic.
        n = 2
        while pm.has_plugin(f"{label}#{n}"):
            n += 1
        label = f"{label}#{n}"
    try:
        pm.register(plugin, name=label)
    except (pluggy.PluginValidationError, ValueError) as exc:
        raise PluginError(label, "registration", str(exc)) from exc
