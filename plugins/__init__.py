"""The built-in vocabulary of evalspec, written as ordinary plugins.

Installed as the package ``evalspec_plugins`` and found through the
``evalspec`` entry-point group, exactly like a third-party plugin. Each
module implements one kind of hook.
"""

MODULES = (
    "evalspec_plugins.spec",
    "evalspec_plugins.categories",
    "evalspec_plugins.metrics",
    "evalspec_plugins.postprocess",
)
"""The built-in plugin modules, for building a registry without entry points."""


def load() -> list[object]:
    """Import and return the built-in plugin modules."""
    import importlib

    return [importlib.import_module(name) for name in MODULES]
