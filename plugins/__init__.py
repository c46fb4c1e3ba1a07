"""The built-in vocabulary of evalspec, written as ordinary plugins.

Installed as the package ``evalspec_plugins`` and found through the
``evalspec`` entry-point group, exactly like a third-party plugin. Each
module implements one kind of hook.
"""

PLUGINS = {
    "builtin-spec": "evalspec_plugins.spec",
    "builtin-categories": "evalspec_plugins.categories",
    "builtin-metrics": "evalspec_plugins.metrics",
    "builtin-post-process": "evalspec_plugins.postprocess",
}
"""Entry-point name -> module: the names ``pyproject.toml`` registers them under."""

MODULES = tuple(PLUGINS.values())
"""The built-in plugin modules, for building a registry without entry points."""


def load() -> list[object]:
    """Import and return the built-in plugin modules."""
    import importlib

    return [importlib.import_module(name) for name in MODULES]
