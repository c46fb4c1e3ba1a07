"""Every hook a plugin can implement: the one module a plugin author reads.

A plugin is any module or object with functions marked ``@evalspec.hookimpl``
whose names match the specs below. It is found through the ``evalspec``
entry-point group, listed in a project's ``[tool.evalspec] plugins``, or
passed explicitly to :func:`evalspec.build_registry`::

    # pyproject.toml of a plugin package
    [project.entry-points.evalspec]
    my-plugin = "my_package.evalspec_plugin"

    # my_package/evalspec_plugin.py
    from evalspec import PostProcessRule, hookimpl

    @hookimpl
    def evalspec_register_post_processors(register):
        register(PostProcessRule("collapse_whitespace", lambda s: " ".join(s.split())))

The registries are *closed*: a name is accepted only when a migration in the
version table declares it (see :mod:`evalspec.versions`), every declared name
must be implemented by exactly one plugin, and the finished registry is
frozen. The built-in vocabulary (package ``evalspec_plugins``) uses these
same hooks. docs/plugins.md is the plugin author's guide.

Calling semantics (the same for every hook below)
-------------------------------------------------
* Each hook is called through pluggy **once per plugin**, in the order the
  plugins were registered (entry points, then the built-ins, then explicit
  and project plugins), with a ``register`` callable bound to that plugin, so
  every entry is attributed to the plugin that registered it (in messages
  and ``Registry.owners``). An implementation may omit the ``register``
  argument; it is then called with none.
* An implementation calls ``register(entry)`` zero or more times and returns
  ``None``; return values are ignored (``firstresult`` does not apply).
  ``register`` refuses an entry of the wrong class (``PluginError``) and a call
  after the hook returned (``RegistryError``).
* Hook wrappers work: ``@hookimpl(wrapper=True)`` (or the older
  ``hookwrapper=True``) wraps the *same plugin's* implementations of that
  hook, and may register entries itself before or after its ``yield``.
  ``tryfirst``/``trylast`` order a plugin's own implementations;
  ``specname`` and ``optionalhook`` work as in pluggy. pluggy's tracing
  (``pm.trace``, ``pm.add_hookcall_monitoring``) sees every call: build the
  manager with :func:`evalspec.registry.manager.make_plugin_manager` and pass it as
  ``build_registry(plugin_manager=pm)``.
* An exception raised by an implementation becomes a ``PluginError`` naming
  the plugin and the hook; an ``EvalspecError`` passes through unchanged.
* Hooks run every time a registry is built (once per process for the
  command line); they must only register entries, with no I/O or side effects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from evalspec.model import Category, Metric, PostProcessRule
    from evalspec.versions import Migration

PROJECT = "evalspec"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def evalspec_register_migrations(register: Callable[[Migration], None]) -> None:
    """Contribute spec migrations (the version table's entries).

    Call ``register(migration)`` for each :class:`evalspec.versions.Migration`.
    The migrations of all plugins form one linear chain, numbered from 1; a
    migration without an ``origin`` is given ``"plugin <name>"``. Duplicate
    versions are reported by the chain check, naming both origins.

    :param register: takes one ``Migration``.
    """


@hookspec
def evalspec_register_categories(register: Callable[[Category], None]) -> None:
    """Contribute task categories.

    Call ``register(Category(name, description))`` for each. Which metrics and
    post-process rules a category allows is declared by its migration, not here.

    :param register: takes one :class:`evalspec.Category`.
    """


@hookspec
def evalspec_register_metrics(register: Callable[[Metric], None]) -> None:
    """Contribute metrics.

    Call ``register(Metric(name, description, scorer, ...))`` for each; what
    the score report needs to know (``reference_packages``, ``target_check``,
    ``caveat``) is declared on the entry.

    :param register: takes one :class:`evalspec.Metric`.
    """


@hookspec
def evalspec_register_post_processors(register: Callable[[PostProcessRule], None]) -> None:
    """Contribute post-process rules.

    Call ``register(PostProcessRule(name, function, ...))`` for each;
    ``function`` must be deterministic, stateless, total over ``str`` and
    linear in time. What the rest of evalspec needs to know (``unparsed``,
    ``idempotent``, ``contract``, ``shaped_outputs``) is declared on the entry;
    the conformance kit fuzzes every registered rule with it.

    :param register: takes one :class:`evalspec.PostProcessRule`.
    """
