"""This user's private directory, ``<tmp>/evalspec-<euid>``, for what no other user may touch.

It holds the lock of a project outside git (:func:`evalspec.io.atomicfile.lock_file_for`)
and the key that seals evalspec's caches (:mod:`evalspec.io.seal`). Anyone can
compute its name, so anyone could have made it first: it is used only while it
is a real directory (not a symlink) owned by the effective uid with no
permission for group or others.

It lives in the temporary directory, not beside the caches, on purpose: a CI
system restores ``~/.cache`` from an earlier (perhaps a pull request's) run,
never ``/tmp``.

Light on purpose (no :mod:`tempfile`, which imports :mod:`shutil` and
:mod:`random`): a warm ``evalspec validate`` reads the cache key from here.
"""

from __future__ import annotations

import os
import stat

from evalspec.errors import EvalspecError


class PrivateDirError(EvalspecError):
    """The private directory cannot be made, or exists but is not private to this user."""


def euid() -> int:
    """The effective uid (0 where there are no uids)."""
    return os.geteuid() if hasattr(os, "geteuid") else 0


def temp_root() -> str:
    """The temporary directory :func:`tempfile.gettempdir` would name, without importing
    :mod:`tempfile` when ``$TMPDIR``, ``$TEMP``, ``$TMP`` or ``/tmp`` answers."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value and os.path.isdir(value):
            return os.path.abspath(value)
    if os.path.isdir("/tmp"):  # the first directory tempfile tries
        return "/tmp"
    import tempfile

    return tempfile.gettempdir()


def private_dir() -> str:
    """This user's private directory, created 0700 when missing.

    :raises PrivateDirError: it cannot be made, or it exists but is a symlink, not a
        directory, owned by another uid, or open to group or others.
    """
    uid = euid()
    path = os.path.join(temp_root(), f"evalspec-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise PrivateDirError(
            f"cannot create the private directory {path}: {exc.strerror or exc}"
        ) from None
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise PrivateDirError(
            f"cannot use the private directory {path}: {exc.strerror or exc}"
        ) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise PrivateDirError(
            f"refusing the private directory {path}: it must be a directory owned by uid {uid} "
            f"with mode 0700, found uid {st.st_uid} mode {stat.filemode(st.st_mode)}; "
            "remove it if you trust it"
        )
    return path
