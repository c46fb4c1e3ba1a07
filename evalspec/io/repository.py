"""The repository a path belongs to, and whether a path stays inside it.

Task files, configs and manifests arrive in pull requests, so what evalspec
reads or writes on their behalf stays inside the repository: the git work tree
(the nearest directory holding ``.git``, a file too for worktrees and
submodules), or the directory itself outside git. Writes
(:mod:`evalspec.io.atomicfile`), task files (:mod:`evalspec.io.inputs`) and
``[tool.evalspec]`` paths (:mod:`evalspec.registry.project`) apply this rule.
"""

from __future__ import annotations

import os


def repository_of(directory: str | os.PathLike[str]) -> str:
    """The git work tree holding ``directory`` (absolute), else ``directory`` itself."""
    here = os.path.abspath(directory)
    at = here
    while not os.path.lexists(os.path.join(at, ".git")):
        parent = os.path.dirname(at)
        if parent == at:
            return here
        at = parent
    return at


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``root`` or below it, as spelled (resolve both first to
    follow symlinks)."""
    try:
        return os.path.commonpath([os.fspath(root), os.fspath(path)]) == os.fspath(root)
    except ValueError:  # different drives on Windows, or one relative and one absolute
        return False


__all__ = ["inside", "repository_of"]
