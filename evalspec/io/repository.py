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
import stat

from evalspec.errors import EvalspecError

# Annotations only: typing costs the warm `evalspec validate` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO


class OutsideRootError(EvalspecError):
    """The file opened is not a regular file inside the root (a symlink sent the open
    outside it, or the path was swapped for another file while it was checked)."""


class NotRegularFileError(OutsideRootError):
    """The file opened is a directory, a named pipe or a device."""


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


def open_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened once for reading, as a regular file inside ``root``; the caller
    reads everything from the returned file, never from the name again.

    Checking a path and then opening it by name leaves a window in which a pull
    request's process, or a checkout, swaps the file for a symlink to a secret.
    Here the check is of what was opened: after the open, the path's real location
    must lie inside ``root`` *and* be the very file the descriptor holds (device
    and inode), so a swap on either side of the open is refused, not followed. The
    open does not wait on a named pipe, and a device or directory is refused
    before anything is read.

    :raises NotRegularFileError: not a regular file.
    :raises OutsideRootError: outside ``root``, or swapped.
    :raises OSError: it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(f"{os.fspath(path)}: not a regular file")
        real = os.path.realpath(path)
        try:
            now = os.stat(real)
        except OSError:
            now = None
        if not inside(os.path.realpath(root), real) or now is None:
            raise OutsideRootError(f"{os.fspath(path)}: it leads outside the repository")
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise OutsideRootError(f"{os.fspath(path)}: it was replaced while it was opened")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_for_reading(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened once for reading: through :func:`open_inside` when it is spelled
    inside ``root`` (a symlink must not send it out, a swap is refused), as asked when
    the user named a path outside ``root`` (``/dev/stdin``, ``/tmp/x.jsonl``).

    :raises OutsideRootError: see :func:`open_inside`.
    :raises OSError: it cannot be opened.
    """
    absolute = os.path.abspath(path)
    if inside(os.path.abspath(root), absolute) or inside(os.path.realpath(root), absolute):
        return open_inside(path, root)
    return open(path, "rb")  # the caller closes it


__all__ = [
    "NotRegularFileError",
    "OutsideRootError",
    "inside",
    "open_for_reading",
    "open_inside",
    "repository_of",
]
