"""Remove what a sandboxed program left behind, whatever it left.

A program controls its working directory completely: trees thousands of
levels deep (deeper than PATH_MAX), directories without permissions,
immutable or append-only files (``chattr +i``, possible for a program running
as root at the lowest tier), sockets, FIFOs, device nodes, symlink loops,
names that are not UTF-8, and, as root, mounts. :func:`remove_tree` walks it
iteratively with directory descriptors (no recursion, no long paths, one open
descriptor per level at most while going down, none kept while going up),
never follows a symlink, never opens anything but regular files and
directories, never crosses into another mount, and never raises: it returns
what it could not remove so the run is still reported.

Called only after every process that could change the tree is dead.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct

import attrs

# ioctl numbers of <linux/fs.h> (the same on every Linux architecture).
_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_IMMUTABLE_FL = 0x00000010
_FS_APPEND_FL = 0x00000020
_MNT_DETACH = 2

_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@attrs.frozen
class Leftovers:
    """What :func:`remove_tree` could not remove (empty when it removed everything)."""

    count: int = 0
    example: str = ""

    def __bool__(self) -> bool:
        return self.count > 0

    def describe(self) -> str:
        """One line for a result's detail."""
        return f"{self.count} entries could not be removed (e.g. {self.example})"


def _clear_flags(fd: int) -> None:
    """Clear the immutable and append-only attributes (needs CAP_LINUX_IMMUTABLE)."""
    with contextlib.suppress(OSError):
        raw = fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0" * 8)
        flags = struct.unpack("l", raw)[0]
        if flags & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
            cleared = flags & ~(_FS_IMMUTABLE_FL | _FS_APPEND_FL)
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("l", cleared))


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    if "\\" not in field:
        return field  # nearly every line (a run's removal reads them all)
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(path: str) -> list[str]:
    """Mount points at or below ``path`` in this mount namespace, deepest first."""
    prefix = path.rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                fields = line.split(" ")
                if len(fields) > 4:
                    point = _unescape(fields[4])
                    if point == path or point.startswith(prefix):
                        found.append(point)
    except OSError:
        return []
    return sorted(found, key=len, reverse=True)


def _detach_mounts(path: str) -> set[str]:
    """Detach mounts a root program made at or inside ``path``; return those that stay.

    ``path`` itself is never a mount point of ours (the harness made it with
    mkdtemp), so a mount there is the program's too: walking it would delete
    whatever it shows.
    """
    stuck: set[str] = set()
    points = mounts_under(path)
    if not points:
        return stuck
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for point in points:
        for _ in range(8):  # stacked mounts: one detach per layer
            if point not in mounts_under(point):
                break
            if libc.umount2(os.fsencode(point), _MNT_DETACH) != 0:
                stuck.add(point)
                break
        else:
            stuck.add(point)
    return stuck


@attrs.define
class _Level:
    """One directory on the way down: its name in the parent and what failed in it."""

    name: str
    failed: set[str] = attrs.Factory(set)


class _Walker:
    def __init__(self, top: str, device: int, stuck: set[str]) -> None:
        self.device = device
        self.stuck = stuck
        self.left = 0
        self.example = ""
        self.path = [top]  # only for matching mount points and examples

    def fail(self, name: str) -> None:
        self.left += 1
        if not self.example:
            self.example = os.path.join(*self.path, name)

    def unlink(self, dirfd: int, name: str, st: os.stat_result) -> bool:
        """Remove one non-directory; True when it is gone."""
        for attempt in range(2):
            try:
                os.unlink(name, dir_fd=dirfd)
                return True
            except FileNotFoundError:
                return True
            except PermissionError:
                if attempt or not stat.S_ISREG(st.st_mode):
                    return False
                # Immutable or append-only: clear the flags through a descriptor.
                try:
                    fd = os.open(name, _OPEN_FILE, dir_fd=dirfd)
                except OSError:
                    return False
                try:
                    _clear_flags(fd)
                finally:
                    os.close(fd)
            except OSError:
                return False
        return False

    def enter(self, dirfd: int, name: str) -> int | None:
        """Open subdirectory ``name`` for removal of its contents, or None."""
        if self.stuck and os.path.join(*self.path, name) in self.stuck:
            return None
        for attempt in range(2):
            try:
                fd = os.open(name, _OPEN_DIR, dir_fd=dirfd)
            except PermissionError:
                if attempt:
                    return None
                # chmod 000: we own or are root, so give it back its bits.
                with contextlib.suppress(OSError):
                    os.chmod(name, stat.S_IRWXU, dir_fd=dirfd, follow_symlinks=False)
                continue
            except OSError:
                return None
            if os.fstat(fd).st_dev != self.device:
                os.close(fd)  # another file system (a mount): never go into it
                return None
            _clear_flags(fd)
            with contextlib.suppress(OSError):
                os.fchmod(fd, stat.S_IRWXU)
            return fd
        return None


def remove_tree(path: str) -> Leftovers:
    """Remove ``path`` and everything under it; never raises, returns what stayed."""
    try:
        top_stat = os.lstat(path)
    except FileNotFoundError:
        return Leftovers()
    except OSError as exc:
        return Leftovers(1, f"{path} ({exc.strerror})")
    if not stat.S_ISDIR(top_stat.st_mode):
        try:
            os.unlink(path)
        except OSError as exc:
            return Leftovers(1, f"{path} ({exc.strerror})")
        return Leftovers()
    stuck = _detach_mounts(path)
    if path in stuck:
        return Leftovers(1, f"{path} (a mount that cannot be detached; not entered)")
    try:
        top_stat = os.lstat(path)  # what was under the mount, if there was one
    except FileNotFoundError:
        return Leftovers()
    except OSError as exc:
        return Leftovers(1, f"{path} ({exc.strerror})")
    walker = _Walker(path, top_stat.st_dev, stuck)
    try:
        fd: int | None = os.open(path, _OPEN_DIR)
    except PermissionError:
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IRWXU)
        try:
            fd = os.open(path, _OPEN_DIR)
        except OSError as exc:
            return Leftovers(1, f"{path} ({exc.strerror})")
    except OSError as exc:
        return Leftovers(1, f"{path} ({exc.strerror})")
    assert fd is not None
    _clear_flags(fd)
    _walk(walker, fd)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if not walker.left:
            walker.left, walker.example = 1, f"{path} ({exc.strerror})"
    return Leftovers(walker.left, walker.example)


def _walk(walker: _Walker, fd: int) -> None:
    """Empty the directory open as ``fd`` (closes it), going down and up by descriptor."""
    levels = [_Level("")]
    while True:
        child = _next_subdir(walker, fd, levels[-1])
        if child is not None:
            name, child_fd = child
            os.close(fd)
            fd = child_fd
            levels.append(_Level(name))
            walker.path.append(name)
            continue
        if len(levels) == 1:
            os.close(fd)
            return
        # This level is as empty as it gets: go up through ".." and remove it.
        done = levels.pop()
        walker.path.pop()
        try:
            parent = os.open("..", _OPEN_DIR, dir_fd=fd)
        except OSError:
            os.close(fd)
            walker.fail(done.name)
            return
        os.close(fd)
        fd = parent
        try:
            os.rmdir(done.name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError:
            levels[-1].failed.add(done.name)
            if not done.failed:  # count it once, unless its contents were counted
                walker.fail(done.name)


def _next_subdir(walker: _Walker, fd: int, level: _Level) -> tuple[str, int] | None:
    """Unlink every non-directory here; return the first subdirectory to go into."""
    try:
        entries = list(os.scandir(fd))
    except OSError:
        return None
    for entry in entries:
        name = entry.name
        if name in level.failed:
            continue
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError:
            level.failed.add(name)
            walker.fail(name)
            continue
        if stat.S_ISDIR(st.st_mode):
            child = walker.enter(fd, name)
            if child is not None:
                return name, child
            # Unenterable (another mount, or no rights): try removing it empty.
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError as exc:
                level.failed.add(name)
                if exc.errno != errno.ENOENT:
                    walker.fail(name)
            continue
        if not walker.unlink(fd, name, st):
            level.failed.add(name)
            walker.fail(name)
    return None
