"""The directory a run's configuration is found from: its *governing directory*.

Like pytest and ruff, evalspec finds the ``pyproject.toml`` (its
``[tool.evalspec]`` table) and the evals layout that govern a path by walking up
from that path, not from the working directory, so ``evalspec lint evals`` run
from the repository root and ``evalspec lint`` run inside ``evals/`` read the
same configuration and give the same verdict. A command that is given paths
makes the directory holding them the governing one (:func:`govern`); without
that it is the working directory. The registry and its snapshot
(:mod:`evalspec.registry`) read it through :func:`governing_directory`.

This module imports nothing but :mod:`os`: the warm ``evalspec validate`` keys
its snapshot on the ``pyproject.toml`` found from here.
"""

from __future__ import annotations

import os

_chosen: str | None = None


def governing_directory() -> str:
    """The directory configuration is looked for from (absolute, symlinks resolved)."""
    return _chosen if _chosen is not None else os.path.realpath(os.getcwd())


def govern(directory: str | os.PathLike[str] | None) -> None:
    """Look for configuration from ``directory`` from now on (``None``: the working
    directory again)."""
    global _chosen
    _chosen = None if directory is None else os.path.realpath(directory)


def start_of(path: str | os.PathLike[str]) -> str:
    """Where the walk up for ``path`` starts: the directory itself, or the one holding
    the file (a file that does not exist yet counts as a file)."""
    absolute = os.path.abspath(path)
    directory = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
    return os.path.realpath(directory)


def nearest(name: str, start: str | os.PathLike[str]) -> str | None:
    """The file ``name`` in ``start`` or the nearest directory above it holding one."""
    directory = os.path.realpath(start)
    while True:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


__all__ = ["govern", "governing_directory", "nearest", "start_of"]
