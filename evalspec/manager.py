"""Build the pluggy plugin manager: entry points plus explicitly passed plugins."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata

import pluggy

from evalspec import hookspecs
from evalspec.errors import PluginError

ENTRY_POINT_GROUP = "evalspec"


class PluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers which distribution each plugin came from."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.distributions: dict[str, tuple[str, str]] = {}
        """Plugin name -> (distribution name, version), for entry-point plugins."""

    def plugin_versions(self) -> dict[str, str | None]:
        """Plugin name -> version of the distribution that installed it (None if unknown)."""
        return {
            name: self.distributions[name][1] if name in self.distributions else None
            for name, _ in self.list_name_plugin()
        }


def make_plugin_manager(
    plugins: Iterable[object] = (), *, entry_points: bool = True
) -> PluginManager:
    """A fresh plugin manager with the hookspecs added.

    :param plugins: plugin objects (modules, classes or instances) to register
        explicitly, after the entry points. Passing the same object twice, or
        one already loaded from an entry point, registers it once.
    :param entry_points: also load every plugin of the ``evalspec`` entry-point
        group (the built-in vocabulary is one of them).
    :raises PluginError: a plugin failed to import, or implements a hook
        that does not exist or with arguments the hook does not offer.
    """
    pm = PluginManager()
    if entry_points:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
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
    for plugin in plugins:
        if not pm.is_registered(plugin):
            _register(pm, plugin, None)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = str(pm.get_name(exc.plugin) or exc.plugin)
        raise PluginError(name, "registration", str(exc)) from exc
    return pm


def _register(pm: pluggy.PluginManager, plugin: object, name: str | None) -> None:
    try:
        pm.register(plugin, name=name)
    except (pluggy.PluginValidationError, ValueError) as exc:
        label = name or str(getattr(plugin, "__name__", plugin))
        raise PluginError(label, "registration", str(exc)) from exc
