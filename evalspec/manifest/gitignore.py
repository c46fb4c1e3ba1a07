"""Keeping manifest files out of git: the root ``.gitignore`` and the index."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from evalspec.io.atomicfile import read_for_update, write_atomic

_SPECIAL = re.compile(r"([*?\[\\!#])")


def ignore_pattern(path: str) -> str:
    """The ``.gitignore`` line that matches exactly the file at repository path ``path``.

    Anchored with a leading ``/``; glob characters and trailing spaces are
    escaped so the pattern matches this one file and nothing else.
    """
    body = _SPECIAL.sub(r"\\\1", path)
    stripped = body.rstrip(" ")
    return "/" + stripped + "\\ " * (len(body) - len(stripped))


def ensure_ignored(root: str | os.PathLike[str], path: str) -> bool:
    """Add ``path`` to ``root/.gitignore`` unless a line for it is there; True if added.

    The file is rewritten atomically; hold :func:`evalspec.io.atomicfile.repository_lock`
    around the call when other processes may add lines at the same time.

    :raises UnsafePathError: ``.gitignore`` is a symlink out of the repository.
    """
    gitignore = Path(root) / ".gitignore"
    pattern = ignore_pattern(path)
    existing = read_for_update(gitignore, root) or b""
    lines = existing.decode("utf-8", errors="surrogateescape").splitlines()
    if any(line.rstrip("\r") in (pattern, "/" + path, path) for line in lines):
        return False
    prefix = b"" if not existing or existing.endswith(b"\n") else b"\n"
    write_atomic(gitignore, existing + prefix + pattern.encode("utf-8") + b"\n", root=root)
    return True


def is_tracked(root: str | os.PathLike[str], path: str) -> bool:
    """Whether git already tracks ``path`` (a .gitignore line will not untrack it)."""
    git = shutil.which("git")
    if git is None or not os.path.lexists(Path(root) / ".git"):
        return False
    result = subprocess.run(
        [git, "--literal-pathspecs", "-C", str(root), "ls-files", "--error-unmatch", "--", path],
        capture_output=True,
        check=False,
    )
    return result.returncode == 0
