"""The migration-style version table of the task spec.

Plugins contribute :class:`Migration` objects through the
``evalspec_register_migrations`` hook; :func:`order_chain` checks that they
form one linear chain and :func:`replay` turns the first N of them into the
:class:`SpecVersion` the validator uses.

The tooling around the chain lives in its own modules, imported on use:
:mod:`~evalspec.authoring.gate` (what a migration must ship),
:mod:`~evalspec.versions.lock` (checksums of released versions),
:mod:`~evalspec.registry.project` (``[tool.evalspec]``, the project's own
migrations, which versions are in force), :mod:`~evalspec.authoring.check`
(``evalspec spec check`` as a function), :mod:`~evalspec.authoring.new`
(``spec new``) and :mod:`~evalspec.versions.changelog`.
"""

from evalspec.versions.migration import (
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
from evalspec.versions.table import (
    CategoryPairs,
    OptionalField,
    SpecVersion,
    check_bindings,
    order_chain,
    replay,
)

__all__ = [
    "AddCategory",
    "AddField",
    "AddMetric",
    "AddPostProcess",
    "BindMetric",
    "BindPostProcess",
    "CategoryPairs",
    "Deprecate",
    "Migration",
    "Operation",
    "OptionalField",
    "SpecVersion",
    "WaiveFieldRule",
    "check_bindings",
    "order_chain",
    "replay",
]
