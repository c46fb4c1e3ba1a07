"""The few git operations lint and diff need, through the real ``git`` binary."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import IO

from evalspec.errors import EvalspecError


class GitError(EvalspecError):
    """A git command failed for a reason other than a missing file."""


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed (needed for version checks and --rev)") from None


def toplevel(path: Path) -> Path | None:
    """The work tree root of the repository holding ``path``, or ``None`` outside git."""
    where = path.resolve()
    while not where.is_dir() and where != where.parent:
        where = where.parent  # a path that does not exist yet lives in its nearest parent
    try:
        proc = _git(["rev-parse", "--show-toplevel"], where)
    except GitError:
        return None
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode().strip())


def has_commit(root: Path, rev: str) -> bool:
    """Whether ``rev`` names a commit (false in a repository without commits yet)."""
    proc = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root)
    return proc.returncode == 0


def show(root: Path, rev: str, relpath: str) -> bytes | None:
    """The bytes of ``relpath`` (relative to ``root``) at ``rev``; ``None`` if absent there.

    :raises GitError: ``rev`` is not a revision of the repository.
    """
    if not has_commit(root, rev):
        raise GitError(f"unknown revision {rev!r}")
    proc = _git(["show", f"{rev}:{relpath}"], root)
    if proc.returncode != 0:
        return None
    return proc.stdout


def show_into(root: Path, rev: str, relpath: str, out: IO[bytes]) -> bool:
    """Write the bytes of ``relpath`` at ``rev`` into ``out`` (streamed, never held in
    memory); False when it is absent there.

    :raises GitError: ``rev`` is not a revision of the repository.
    """
    if not has_commit(root, rev):
        raise GitError(f"unknown revision {rev!r}")
    out.flush()
    proc = subprocess.run(
        ["git", "show", f"{rev}:{relpath}"],
        cwd=root,
        stdout=out,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    out.seek(0)
    if proc.returncode != 0:
        out.truncate()
        return False
    return True


def merge_base(root: Path, a: str, b: str) -> str:
    """The commit ``A...B`` compares from: the best common ancestor of ``a`` and ``b``.

    :raises GitError: either is not a revision, or they share no history.
    """
    for rev in (a, b):
        if not has_commit(root, rev):
            raise GitError(f"unknown revision {rev!r}")
    proc = _git(["merge-base", a, b], root)
    if proc.returncode != 0:
        raise GitError(f"{a} and {b} have no common ancestor")
    return proc.stdout.decode().strip()
