"""``inspect eval evalspec/tasks -T path=FILE``: an evalspec task file, run by name.

inspect loads this module through evalspec's ``inspect_ai`` entry point when a
task of the ``evalspec`` package is named. It holds only the ``@task`` entry
point, because inspect finds a file's tasks by a decorator literally named
``task`` (its loader reads the source), and that name is the adapter's builder,
:func:`evalspec.integrations.inspect_adapter.task`.
"""

from __future__ import annotations

# The adapter first: without inspect_ai it says which extra to install.
from evalspec.integrations.inspect_adapter import task as build  # isort: skip
from inspect_ai import Task, task  # isort: skip

__all__ = ["tasks"]


@task
def tasks(
    path: str,
    spec_version: int | None = None,
    allow_code_exec: bool = False,
    min_isolation: str | None = None,
    jobs: int = 1,
) -> Task:
    """``inspect eval evalspec/tasks -T path=FILE``: the evalspec task file at ``path``."""
    return build(
        path,
        spec_version=None if spec_version is None else int(spec_version),
        allow_code_exec=_flag(allow_code_exec),
        min_isolation=min_isolation,
        jobs=int(jobs),
    )


def _flag(value: object) -> bool:
    # ``-T allow_code_exec=true`` arrives parsed as YAML (a bool); a string is
    # accepted only when it says yes or no, never taken as true for being non-empty.
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    msg = f"allow_code_exec must be true or false, got {value!r}"
    raise ValueError(msg)
