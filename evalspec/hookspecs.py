"""Every hook a plugin can implement: the one module a plugin author reads.

A plugin is any module or object with functions marked ``@evalspec.hookimpl``
whose names match the specs below. It is found through the ``evalspec``
entry-point group, or passed explicitly to :func:`evalspec.build_registry`::

    # pyproject.toml of a plugin package
    [project.entry-points.evalspec]
    my-plugin = "my_package.evalspec_plugin"

    # my_package/evalspec_plugin.py
    from evalspec import PostProcessRule, hookimpl

    @hookimpl
    def evalspec_register_post_processors(register):
        register(PostProcessRule("collapse_whitespace", lambda s: " ".join(s.split())))

Each hook receives a ``register`` callable and calls it once per entry. The
registries are *closed*: a name is accepted only when a migration in the
version table declares it (see :mod:`evalspec.versions`), every declared name
must be implemented by exactly one plugin, and the finished registry is
frozen. The built-in vocabulary (package ``evalspec_plugins``) uses these
same hooks.
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
    The migrations of all plugins form one linear chain, numbered from 1.

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

    Call ``register(Metric(name, description, scorer))`` for each.

    :param register: takes one :class:`evalspec.Metric`.
    """


@hookspec
def evalspec_register_post_processors(register: Callable[[PostProcessRule], None]) -> None:
    """Contribute post-process rules.

    Call ``register(PostProcessRule(name, function))`` for each; ``function``
    must be deterministic, stateless, total over ``str`` and linear in time.
    The property suite fuzzes every registered rule.

    :param register: takes one :class:`evalspec.PostProcessRule`.
    """
