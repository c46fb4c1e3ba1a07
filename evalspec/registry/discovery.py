"""Entry-point discovery, cached by the installed distributions' modification times.

``importlib.metadata.entry_points(group=...)`` imports the email parser and
reads the metadata of every installed distribution on every start: about
10 ms with a few dozen distributions and several times that with hundreds.
:func:`entry_points` answers from a small JSON cache instead, as long as the
*fingerprint* of the installation is unchanged: ``sys.path``, the
modification time of each directory on it, and that of every distribution's
``entry_points.txt``. Installing, removing or editing a distribution
changes the fingerprint, and the next call rescans with
``importlib.metadata``, so a third-party plugin is found exactly as before.

Set ``EVALSPEC_NO_PLUGIN_CACHE=1`` to always scan. The cache lives in
``$XDG_CACHE_HOME/evalspec`` (default ``~/.cache/evalspec``); a cache that
cannot be read or written is ignored.

The cache names modules that get imported, so it is untrusted input, read
and written as the spec snapshot is (:func:`read_own_file`,
:func:`write_own_file`): a file that is not a regular file of this user's,
writable only by them, or that is a symlink, too big, not sealed under this
user's key (:mod:`evalspec.io.seal`) or not well-formed, is ignored and
rescanned; a named pipe or ``/dev/zero`` planted there cannot
stall or exhaust the run.

Each key has a file of its own (an interpreter, ``sys.path``, a project), so
:func:`write_own_file` prunes the directory as it writes (:func:`prune`): the
:data:`KEEP_FILES` most recently written files of each kind stay.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import stat
import sys

from evalspec.io import seal
from evalspec.io.privatedir import PrivateDirError, euid
from evalspec.io.quickjson import loads as _loads

# Annotations only: typing costs every warm run milliseconds. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NO_CACHE_ENV = "EVALSPEC_NO_PLUGIN_CACHE"
_VERSION = 1  # of the cache format
MAX_CACHE_BYTES = 4 << 20
"""An entry-point cache file bigger than this is not read (it is not one of ours)."""

KEEP_FILES = 256
"""Cache files of each kind (``spec-*.json``, ``entry-points-*.json``) kept when one is
written: the most recently written. Each key (an interpreter, ``sys.path``, a
project) has a file of its own, and CI jobs or test runs in fresh directories make
new keys every day: without a bound the directory only grows."""

STALE_TEMP_SECONDS = 3600
"""A temporary file of a writer (``.NAME.PID.RANDOM``) older than this was left by a
writer that was killed before its rename: it is removed."""


class Distribution:
    """The name and version of the distribution that declares an entry point."""

    __slots__ = ("name", "version")

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version


class EntryPoint:
    """What the plugin manager needs of an ``importlib.metadata.EntryPoint``."""

    __slots__ = ("dist", "name", "value")

    def __init__(self, name: str, value: str, dist: Distribution | None) -> None:
        self.name = name
        self.value = value
        self.dist = dist

    def load(self) -> Any:
        """Import the object ``module:attr.path`` names, as ``EntryPoint.load`` does."""
        module, _, attrs = self.value.partition(":")
        attrs = attrs.split("[", 1)[0].strip()  # drop any [extras]
        obj: Any = importlib.import_module(module.strip())
        for part in filter(None, attrs.split(".")):
            obj = getattr(obj, part)
        return obj


def cache_home() -> str | None:
    """evalspec's cache directory: ``$XDG_CACHE_HOME/evalspec``, else
    ``~/.cache/evalspec``; ``None`` (no caching) when neither is an absolute path.

    A relative value would put the cache in whatever directory the command runs
    in, often a repository; the XDG specification says to ignore one.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "evalspec")


def _cache_file() -> str | None:
    home = cache_home()
    if home is None:
        return None
    # One file per environment; the SHA-256 the seal has already loaded names it.
    where = seal.sha256(repr((sys.executable, sys.path)).encode()).hexdigest()[:8]
    return os.path.join(home, f"entry-points-{where}.json")


def read_own_file(path: str, max_bytes: int) -> bytes | None:
    """The content of the cache file ``path`` if it is a regular file (not a symlink,
    nor a named pipe that would block the open) of at most ``max_bytes`` that only
    this user can write, sealed under this user's key (:mod:`evalspec.io.seal`: a
    file copied in from a restored cache or written by anyone without the key
    does not open); otherwise ``None``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        # Checked before anything reads: a directory opens, and only fails at the read.
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return seal.unseal(f.read(max_bytes + 1))
    except OSError:
        return None
    finally:
        os.close(fd)


def write_own_file(path: str, text: str) -> None:
    """Replace the cache file ``path`` with ``text`` sealed under this user's key,
    atomically, in a directory only this user can write (made when missing).

    :raises OSError: the directory cannot be made, is not private, or cannot be
        written, or there is no private key to seal with.
    """
    try:
        sealed = seal.seal(text.encode("utf-8"))
    except PrivateDirError as exc:
        raise PermissionError(str(exc)) from None
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode) or (
        hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022)
    ):
        # A symlink, or a directory someone else can write to: not ours to trust.
        raise PermissionError(f"{directory} is not a private directory of this user")
    # A fresh file (never an existing one, never through a symlink) renamed over
    # the old: a reader sees the old file or the new one, whole.
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(sealed)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    prune(directory, keep=os.path.basename(path))


def prune(directory: str, keep: str = "") -> int:
    """Remove from the cache ``directory`` all but the :data:`KEEP_FILES` most recently
    written files of each kind (never ``keep``, the one just written), and writers'
    temporary files older than :data:`STALE_TEMP_SECONDS`; returns how many went.

    Only regular files of this user's with a cache file's name are removed: nothing
    else in the directory, no symlink, no directory. A file removed while another
    process reads it is, to that process, a cache miss (it rebuilds and writes it
    again), never a wrong answer. Errors are ignored: pruning is housekeeping.
    """
    import time

    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    if len(entries) <= KEEP_FILES:
        return 0  # the usual case: nothing to look at
    uid = euid()  # the owner of the files this process writes
    now = time.time()
    kinds: dict[str, list[tuple[int, str]]] = {}
    stale: list[str] = []
    for entry in entries:
        name = entry.name
        temp = _temp_of(name)
        kind = _kind_of(temp if temp is not None else name)
        if kind is None or name == keep:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
            continue
        if temp is not None:
            if now - st.st_mtime > STALE_TEMP_SECONDS:
                stale.append(entry.path)
        else:
            kinds.setdefault(kind, []).append((st.st_mtime_ns, entry.path))
    doomed = stale  # and, of each kind, all but the newest
    for kind, files in kinds.items():
        files.sort(reverse=True)  # newest first
        room = KEEP_FILES - (1 if _kind_of(keep) == kind else 0)  # `keep` is one of them
        doomed += [path for _, path in files[room:]]
    removed = 0
    for path in doomed:
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed += 1
    return removed


def _kind_of(name: str) -> str | None:
    """``"spec"`` for ``spec-0123abcd.json`` (a cache file's name: a kind, 8 hex digits
    of its key), else ``None``."""
    if not name.endswith(".json"):
        return None
    kind, dash, key = name[: -len(".json")].rpartition("-")
    if not dash or not kind or len(key) != 8 or key.strip("0123456789abcdef"):
        return None
    return kind


def _temp_of(name: str) -> str | None:
    """The cache file's name a writer's temporary file ``.NAME.PID.RANDOM`` is for."""
    if not name.startswith("."):
        return None
    target, pid, random = [*name[1:].rsplit(".", 2), "", ""][:3]
    if (
        not (pid.isascii() and pid.isdigit())
        or len(random) != 8
        or random.strip("0123456789abcdef")
    ):
        return None
    return target


def fingerprint() -> list[Any]:
    """``sys.path`` with the mtimes of its directories and of every distribution's
    ``entry_points.txt`` (or ``None`` where there is none)."""
    out: list[Any] = []
    for entry in sys.path:
        path = entry or "."
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            out.append([entry, None])
            continue
        dists: list[Any] = []
        try:
            with os.scandir(path) as it:
                for child in it:
                    if child.name.endswith((".dist-info", ".egg-info")):
                        try:
                            stamp = os.stat(os.path.join(child.path, "entry_points.txt"))
                            dists.append([child.name, stamp.st_mtime_ns, stamp.st_size])
                        except OSError:
                            dists.append([child.name, None, None])
        except OSError:  # a zip file or unreadable directory: its mtime is the stamp
            pass
        dists.sort()
        out.append([entry, mtime, dists])
    return out


def _scan(group: str) -> list[EntryPoint]:
    from importlib import metadata

    found = []
    for ep in metadata.entry_points(group=group):
        dist = Distribution(ep.dist.name, ep.dist.version) if ep.dist is not None else None
        found.append(EntryPoint(ep.name, ep.value, dist))
    return found


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, in ``importlib.metadata`` order."""
    path = _cache_file()
    if os.environ.get(NO_CACHE_ENV) or path is None:
        return _scan(group)
    stamp = fingerprint()
    try:
        data = read_own_file(path, MAX_CACHE_BYTES)
        if data is None:
            raise ValueError("no cache file of ours")
        cached = _loads(data)  # json.loads, without importing json (and re) when warm
        if cached["version"] == _VERSION and cached["fingerprint"] == stamp:
            entries = cached["groups"].get(group)
            if entries is not None:
                return [
                    EntryPoint(name, value, Distribution(*dist) if dist else None)
                    for name, value, dist in entries
                ]
        else:
            cached = {"version": _VERSION, "fingerprint": stamp, "groups": {}}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        cached = {"version": _VERSION, "fingerprint": stamp, "groups": {}}
    found = _scan(group)
    cached["groups"][group] = [
        [ep.name, ep.value, [ep.dist.name, ep.dist.version] if ep.dist else None] for ep in found
    ]
    import json  # a rescan's

    with contextlib.suppress(OSError):  # a read-only home: discovery still works, uncached
        write_own_file(path, json.dumps(cached))
    return found
