"""Writing files so that no reader sees half a file and no writer loses another's update.

Every file evalspec rewrites (the manifest, the lock, ``.gitignore``,
``CODEOWNERS``, score and gate reports, the files ``init`` and ``spec new``
scaffold) goes through :func:`write_atomic`: the bytes go to a temp file in
the same directory, are fsync-ed, and the temp file is renamed over the
target (then the directory is fsync-ed), so a reader sees the old file or
the new one, never an empty or partial one. Read-modify-write sequences
(``manifest add``, ``spec new``, ``spec lock``, ``init``) hold :func:`repository_lock`
around the read and the write, so concurrent runs serialise instead of
losing each other's entries.

A repository can hold symlinks a pull request put there. A write to a path
inside the repository that a symlink (the file itself or any parent
directory) sends outside it is refused with :class:`UnsafePathError`; a
path the user names outside the repository on purpose is written as asked.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from evalspec.errors import EvalspecError
from evalspec.io.privatedir import PrivateDirError, euid, private_dir
from evalspec.io.repository import inside, repository_of

LOCK_TIMEOUT_SECONDS = 120.0
"""How long a writer waits for another evalspec process to finish with the repository."""


class UnsafePathError(EvalspecError):
    """Writing the path would follow a symlink out of the repository or project."""


class LockError(EvalspecError):
    """The repository's evalspec lock cannot be taken; the write does not run unlocked."""


class LockTimeoutError(LockError):
    """Another process held the repository's evalspec lock for too long."""


def _lexically_inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    return inside(os.path.abspath(root), os.path.abspath(path))


def resolve_for_write(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path:
    """The real path a write to ``path`` lands on; refuse when a symlink leads out of ``root``.

    ``path`` may be relative to the current directory. A path that is not
    (lexically) under ``root`` is the caller's explicit choice and is only
    resolved. A symlink inside ``root`` that stays inside is followed, so
    the link itself survives the rewrite.

    :raises UnsafePathError: a parent directory or the file is a symlink
        that resolves outside ``root``, or the path (spelled so or through a
        symlink) lands inside ``root``'s git directory.
    """
    absolute = os.path.abspath(path)
    parent = os.path.realpath(os.path.dirname(absolute))
    target = os.path.join(parent, os.path.basename(absolute))
    if os.path.islink(target):
        target = os.path.realpath(target)
    # The root may be spelled through a symlink, or resolved (as git gives it).
    if _lexically_inside(root, absolute) or _lexically_inside(os.path.realpath(root), absolute):
        root_real = os.path.realpath(root)
        if not inside(root_real, parent):
            raise UnsafePathError(
                f"refusing to write {path}: its directory is a symlink to {parent}, outside {root}"
            )
        if not inside(root_real, target):
            raise UnsafePathError(
                f"refusing to write {path}: it is a symlink to {target}, outside {root}"
            )
        # Inside the repository but in its git directory (``reports -> .git``, or
        # ``../.git`` from a subdirectory): a hook or the config written there runs
        # or decides at the next git command. evalspec writes nothing there this way.
        git_dir = _git_dir(Path(root_real))
        if git_dir is not None and inside(os.path.realpath(git_dir), target):
            raise UnsafePathError(
                f"refusing to write {path}: it lands on {target}, inside the repository's "
                "git directory"
            )
    return Path(target)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    # Makes the rename durable; not every platform can open a directory.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    root: str | os.PathLike[str],
    create_only: bool = False,
    mode: int = 0o644,
) -> bool:
    """Replace (or create) ``path`` with ``data`` atomically; returns whether it wrote.

    ``create_only`` never replaces an existing file (nor a symlink, even a
    dangling one): False is returned and nothing is written. A replaced
    file keeps its permission bits; a new one gets ``mode``. The temp file
    is removed on every exit path.

    :raises UnsafePathError: see :func:`resolve_for_write`.
    :raises OSError: the directory is not writable, the disk is full, ...
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    target = resolve_for_write(path, root)
    if create_only and (os.path.lexists(path) or os.path.lexists(target)):
        return False
    with contextlib.suppress(OSError):
        mode = stat.S_IMODE(os.stat(target).st_mode)
    try:
        written = _write_via_temp(path, target, raw, root=root, create_only=create_only, mode=mode)
    except OSError as exc:
        # The temp file's name (or none: a full disk fails at flush) means nothing to
        # the user, who asked for ``path``.
        raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from exc
    if written:
        fsync_dir(target.parent)
    return written


def _write_via_temp(
    path: str | os.PathLike[str],
    target: Path,
    raw: bytes,
    *,
    root: str | os.PathLike[str],
    create_only: bool,
    mode: int,
) -> bool:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        # A parent may have been swapped for a symlink while we wrote.
        if resolve_for_write(path, root) != target:
            raise UnsafePathError(f"refusing to write {path}: it changed while being written")
        if create_only:
            try:
                os.link(tmp, target)  # fails, rather than follows, when anything is there
            except FileExistsError:
                return False
        else:
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return True


def read_for_update(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bytes | None:
    """The bytes of a file about to be rewritten (None when absent), with the same symlink rule."""
    target = resolve_for_write(path, root)
    try:
        return target.read_bytes()
    except FileNotFoundError:
        return None


def _git_dir(root: Path) -> Path | None:
    dotgit = root / ".git"
    if dotgit.is_dir() and not dotgit.is_symlink():
        return dotgit
    if dotgit.is_file():  # a worktree or submodule: "gitdir: <path>"
        try:
            first = dotgit.read_text(encoding="utf-8", errors="replace").splitlines()[0]
        except (OSError, IndexError):
            return None
        if first.startswith("gitdir:"):
            found = (root / first[len("gitdir:") :].strip()).resolve()
            if found.is_dir():
                return found
    return None


def private_lock_dir() -> Path:
    """This user's lock directory: the private directory of
    :func:`evalspec.io.privatedir.private_dir` (anyone can compute its name, so
    anyone could have made it first; it is used only while it is private).

    :raises LockError: it cannot be made, or exists but is not private to this user.
    """
    try:
        return Path(private_dir())
    except PrivateDirError as exc:
        raise LockError(str(exc)) from None


def lock_file_for(root: str | os.PathLike[str]) -> Path:
    """Where the repository's evalspec lock lives: inside ``.git`` when there is one
    (git ignores it there), else in this user's private lock directory
    (:func:`private_lock_dir`), named for the root's real path, so a project outside
    git gains no stray file and no other user can plant or remove its lock."""
    base = Path(os.path.realpath(root))
    git_dir = _git_dir(base)
    if git_dir is not None:
        return git_dir / "evalspec.lock"
    key = hashlib.sha256(os.fsencode(base)).hexdigest()[:24]
    return private_lock_dir() / f"{key}.lock"


def _check_lock_file(path: Path) -> None:
    """Refuse a lock file this user does not own: whoever planted it could remove it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LockError(f"cannot use the lock file {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(f"refusing to use the lock file {path}: it is a symlink")
    if not stat.S_ISREG(st.st_mode) or st.st_uid != euid():
        raise LockError(
            f"refusing the lock file {path}: it belongs to uid {st.st_uid}, not {euid()} "
            "(or is not a regular file); remove it if you trust it"
        )


def write_report(path: str | os.PathLike[str], text: str) -> None:
    """Write a report the user named (``--output``, ``--markdown``) atomically.

    The root the symlink rule protects is the repository holding the current
    directory (else the current directory).

    :raises UnsafePathError: the path leads out of it through a symlink.
    :raises OSError: it cannot be written.
    """
    root = repository_of(os.getcwd())
    target = resolve_for_write(path, root)
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        special = False
    if special:  # /dev/stdout, a named pipe: nothing to replace, write as asked
        with open(target, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return
    write_atomic(path, text, root=root)


@contextlib.contextmanager
def repository_lock(
    root: str | os.PathLike[str], timeout: float = LOCK_TIMEOUT_SECONDS
) -> Iterator[None]:
    """Hold the repository's evalspec lock (a ``filelock`` lock) for a read-modify-write.

    Never runs the body unlocked: a lock that cannot be taken (read-only
    checkout, a lock file planted by another user, a lock directory that is not
    private) is an error.

    :raises LockTimeoutError: another process held it longer than ``timeout`` seconds.
    :raises LockError: the lock cannot be taken.
    """
    import filelock

    path = lock_file_for(root)
    _check_lock_file(path)
    try:
        # filelock 4 may otherwise unlink the path on release (a second process can
        # then lock a new file while a third holds the old one) or fall back to a
        # soft lock; filelock 3 does neither and lacks the option.
        lock = filelock.FileLock(str(path), timeout=timeout, mode=0o600, preserve_lock_file=True)
    except TypeError:
        lock = filelock.FileLock(str(path), timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise LockTimeoutError(
            f"another evalspec process has held {path} for over {timeout:.0f} s; "
            "if none is running, delete the file"
        ) from None
    except OSError as exc:
        raise LockError(f"cannot take the lock {path}: {exc.strerror or exc}") from None
    try:
        _check_lock_file(path)  # planted between the check and the open
        yield
    finally:
        lock.release()
