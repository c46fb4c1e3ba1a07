"""The migration-style version table of the task spec.

Plugins contribute :class:`Migration` objects through the
``evalspec_register_migrations`` hook; :func:`order_chain` checks that they
form one linear chain and :func:`replay` turns the first N of them into the
:class:`SpecVersion` the validator uses.
"""

from evalspec.versions.migration import (
    AddCategory,
    AddMetric,
    AddPostProcess,
    Deprecate,
    Migration,
    Operation,
)
from evalspec.versions.table import CategoryPairs, SpecVersion, check_bindings, order_chain, replay

__all__ = [
    "AddCategory",
    "AddMetric",
    "AddPostProcess",
    "CategoryPairs",
    "Deprecate",
    "Migration",
    "Operation",
    "SpecVersion",
    "check_bindings",
    "order_chain",
    "replay",
]
