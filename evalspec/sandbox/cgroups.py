"""A control group per run, where the machine lets the harness make one (root).

RLIMIT_NPROC binds nothing for root and RLIMIT_AS bounds one process, not a
run; the cgroup ``pids`` and ``memory`` controllers bound the whole run: every
process and thread it starts, and every byte it keeps resident (its tmpfs
pages included). Used where writable: cgroup v1 hierarchies of ``pids`` and
``memory``, or cgroup v2 with those controllers delegated to the harness's
own cgroup (``cgroup.subtree_control``). Elsewhere runs go without, and only
the rlimits and the per-run uid bound them (docs/sandbox.md says so).

Each run's group is ``evalspec-sandbox/run-<harness pid>-<random>`` under the
harness's own cgroup in each hierarchy, so concurrent harness processes never
share one, in whatever pid namespace each runs (the random part tells apart
two harnesses whose pids are the same number in different namespaces).

Which groups are stale is judged by a lock, not by the pid in the name: the
harness holds an exclusive ``flock`` on each of its groups' directories from
just after making it until it has removed it. A lock belongs to an open file,
so the kernel drops it when the harness dies, however it dies, and every
process that sees the cgroup file system sees the same lock, whatever its pid
or mount namespace (a pid says nothing across pid namespaces: a live harness
in another one looks dead by ``/proc``). Before each run the harness tries that
lock on the others' groups: one it gets belongs to no live harness, and is
emptied and removed; one it cannot get (held, or an error) is left alone, so a
live harness's group is never swept. A running harness so also removes what a
harness killed beside it left behind. Groups of the older ``<pid>-<n>`` naming
hold no lock, so their liveness cannot be told: they are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import secrets
import signal
import time

import attrs

_PARENT = "evalspec-sandbox"
_PREFIX = "run-"
"""Names of groups held under the lock protocol (the module docstring)."""
_OVERHEAD_TASKS = 4  # the launcher, jail and supervisor around the program
_given_up: set[str] = set()
"""Stale groups this process could not remove: not tried again on every run."""


@attrs.frozen
class _Hierarchy:
    """Where one controller lives: ``directory`` is the harness's own cgroup in it."""

    controller: str
    directory: str
    version: int


@attrs.define
class RunGroup:
    """The cgroups (one per controller) of one run; ``locks`` holds the locked
    descriptor of each directory (the harness is alive: do not sweep)."""

    directories: list[str]
    memory_file: str | None
    locks: list[int] = attrs.field(factory=list)

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process is moved into (one per hierarchy)."""
        return [os.path.join(d, "cgroup.procs") for d in self.directories]

    def add(self, pid: int) -> None:
        """Move ``pid`` (and so everything it starts later) into the run's groups."""
        for path in self.procs_files():
            with contextlib.suppress(OSError), open(path, "w", encoding="ascii") as fh:
                fh.write(str(pid))

    def out_of_memory(self) -> bool:
        """Whether the memory controller killed (or refused) something of the run."""
        if self.memory_file is None:
            return False
        try:
            with open(self.memory_file, encoding="ascii") as fh:
                text = fh.read()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key in ("oom_kill", "oom") and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill(self) -> None:
        """SIGKILL every process now in the groups (they stay, for :meth:`remove`)."""
        for directory in self.directories:
            for pid in _pids_in(directory):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Kill whatever is still in the groups, then remove them.

        True when every group is gone, so no process of the run is left
        anywhere: each one was started inside the groups, and leaving a group
        takes writing a root-owned ``cgroup.procs``, which no run's uid may.
        """
        kept: list[tuple[str, int]] = []
        for directory, lock in zip(self.directories, self.locks, strict=True):
            if _empty_and_remove(directory):
                os.close(lock)
            else:
                # Stays locked while this process lives (nobody empties it under
                # a live harness); the next harness after this one tries again.
                kept.append((directory, lock))
        self.directories = [directory for directory, _ in kept]
        self.locks = [lock for _, lock in kept]
        return not kept


def _pids_in(directory: str) -> list[int]:
    try:
        with open(os.path.join(directory, "cgroup.procs"), encoding="ascii") as fh:
            return [int(line) for line in fh if line.strip().isdigit()]
    except OSError:
        return []


def _empty_and_remove(directory: str) -> bool:
    """Empty and remove one group; False if it could not be removed."""
    for _ in range(200):
        pids = _pids_in(directory)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.rmdir(directory)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.005)  # the killed are not reaped yet
    return False


def _mounts() -> dict[str, tuple[str, str, int]]:
    """controller -> (mount point, mount root, cgroup version), from mountinfo."""
    found: dict[str, tuple[str, str, int]] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.readlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, point, fstype, options = fields[3], fields[4], tail[0], tail[2].split(",")
        if fstype == "cgroup":
            for controller in ("pids", "memory"):
                if controller in options:
                    found.setdefault(controller, (point, root, 1))
        elif fstype == "cgroup2":
            found.setdefault("unified", (point, root, 2))
    return found


def _own_paths() -> dict[str, str]:
    """controller (or ``unified``) -> this process's cgroup path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "":
                    paths["unified"] = path
                for controller in controllers.split(","):
                    paths[controller] = path
    except (OSError, ValueError):
        pass
    return paths


def _inside(point: str, root: str, path: str) -> str | None:
    """The directory of cgroup ``path`` in a hierarchy mounted at ``point`` from ``root``."""
    if root != "/" and not (path == root or path.startswith(root.rstrip("/") + "/")):
        return None  # our cgroup is not visible in this mount
    relative = path[len(root) :] if root != "/" else path
    return os.path.join(point, relative.lstrip("/"))


@functools.cache
def hierarchies() -> tuple[_Hierarchy, ...]:
    """The writable hierarchies for ``pids`` and ``memory`` (probed once per process)."""
    if os.geteuid() != 0:
        return ()
    mounts, own = _mounts(), _own_paths()
    found: list[_Hierarchy] = []
    for controller in ("pids", "memory"):
        if controller in mounts and controller in own:
            point, root, version = mounts[controller]
            directory = _inside(point, root, own[controller])
            if directory is not None:
                found.append(_Hierarchy(controller, directory, version))
    if not found and "unified" in mounts and "unified" in own:
        point, root, version = mounts["unified"]
        directory = _inside(point, root, own["unified"])
        if directory is not None:
            try:
                with open(os.path.join(directory, "cgroup.subtree_control"), encoding="ascii") as f:
                    delegated = f.read().split()
            except OSError:
                delegated = []
            if "pids" in delegated and "memory" in delegated:
                found.append(_Hierarchy("unified", directory, 2))
    usable = []
    for hierarchy in found:
        parent = os.path.join(hierarchy.directory, _PARENT)
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError:
            continue
        usable.append(attrs.evolve(hierarchy, directory=parent))
    return tuple(usable)


def _try_lock(directory: str) -> int | None:
    """An open descriptor of ``directory`` holding its exclusive lock, or None
    when another open file holds it (a live harness) or it cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)  # close-on-exec
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def sweep_stale(parent: str) -> None:
    """Empty and remove the groups in ``parent`` that no live harness holds."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(_PREFIX) or entry.path in _given_up:
            continue
        with contextlib.suppress(OSError):
            if not entry.is_dir(follow_symlinks=False):
                continue
        lock = _try_lock(entry.path)
        if lock is None:
            continue  # held by its live harness (or not ours to judge): fail closed
        try:
            if not _empty_and_remove(entry.path):
                _given_up.add(entry.path)
        finally:
            os.close(lock)


def _make_locked(parent: str, name: str) -> int | None:
    """Make group ``name`` in ``parent`` and lock it; the descriptor, or None.

    Between the ``mkdir`` and the lock another harness may find the group
    unlocked and sweep it: the lock is then taken on a removed directory (or
    not at all), which the check of the path's inode tells.
    """
    directory = os.path.join(parent, name)
    try:
        os.mkdir(directory)
    except OSError:
        return None
    lock = _try_lock(directory)
    if lock is None:
        return None
    try:
        same = os.path.samestat(os.stat(directory), os.fstat(lock))
    except OSError:
        same = False
    if not same:
        os.close(lock)
        return None
    return lock


def _write(directory: str, name: str, value: int) -> bool:
    try:
        with open(os.path.join(directory, name), "w", encoding="ascii") as fh:
            fh.write(str(value))
    except OSError:
        return False
    return True


def make(processes: int, memory_bytes: int) -> RunGroup | None:
    """A new group for one run with these budgets, or None where cgroups are not had.

    Each run first sweeps what dead harnesses left (:func:`sweep_stale`), so a
    long-running harness also cleans up after one killed beside it.
    """
    group = RunGroup([], None)
    for hierarchy in hierarchies():
        sweep_stale(hierarchy.directory)
        for _ in range(5):  # a sweeper racing the lock: another name
            name = f"{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
            lock = _make_locked(hierarchy.directory, name)
            if lock is not None:
                break
        else:
            continue
        directory = os.path.join(hierarchy.directory, name)
        group.directories.append(directory)
        group.locks.append(lock)
        tasks = processes + _OVERHEAD_TASKS
        if hierarchy.controller in ("pids", "unified"):
            _write(directory, "pids.max", tasks)
        if hierarchy.controller == "memory":
            _write(directory, "memory.limit_in_bytes", memory_bytes)
            group.memory_file = os.path.join(directory, "memory.oom_control")
        if hierarchy.controller == "unified":
            _write(directory, "memory.max", memory_bytes)
            _write(directory, "memory.swap.max", 0)
            group.memory_file = os.path.join(directory, "memory.events")
    if not group.directories:
        return None
    return group
