"""A control group per run, where the machine lets the harness make one (root).

RLIMIT_NPROC binds nothing for root and RLIMIT_AS bounds one process, not a
run; the cgroup ``pids`` and ``memory`` controllers bound the whole run: every
process and thread it starts, and every byte it keeps resident (its tmpfs
pages included). Used where writable: cgroup v1 hierarchies of ``pids`` and
``memory``, or cgroup v2 with those controllers delegated to the harness's
own cgroup (``cgroup.subtree_control``). Elsewhere runs go without, and only
the rlimits and the per-run uid bound them (docs/sandbox.md says so).

Each run's group is ``evalspec-sandbox/<harness pid>-<n>`` under the
harness's own cgroup in each hierarchy, so concurrent harness processes never
share one; groups a killed harness left behind are emptied and removed by the
next harness that starts a run.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import time

import attrs

_PARENT = "evalspec-sandbox"
_counter = itertools.count()
_OVERHEAD_TASKS = 4  # the launcher, jail and supervisor around the program


@attrs.frozen
class _Hierarchy:
    """Where one controller lives: ``directory`` is the harness's own cgroup in it."""

    controller: str
    directory: str
    version: int


@attrs.define
class RunGroup:
    """The cgroups (one per controller) of one run."""

    directories: list[str]
    memory_file: str | None

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
        return all([_empty_and_remove(directory) for directory in self.directories])


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
        _sweep_stale(parent)
        usable.append(attrs.evolve(hierarchy, directory=parent))
    return tuple(usable)


def _sweep_stale(parent: str) -> None:
    """Remove groups of harness processes that no longer exist."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            owner = entry.name.split("-", 1)[0]
            dead = owner.isdigit() and not os.path.exists(f"/proc/{owner}")
            if dead and entry.is_dir(follow_symlinks=False):
                _empty_and_remove(entry.path)


def _write(directory: str, name: str, value: int) -> bool:
    try:
        with open(os.path.join(directory, name), "w", encoding="ascii") as fh:
            fh.write(str(value))
    except OSError:
        return False
    return True


def make(processes: int, memory_bytes: int) -> RunGroup | None:
    """A new group for one run with these budgets, or None where cgroups are not had."""
    directories: list[str] = []
    memory_file = None
    name = f"{os.getpid()}-{next(_counter)}"
    for hierarchy in hierarchies():
        directory = os.path.join(hierarchy.directory, name)
        try:
            os.mkdir(directory)
        except OSError:
            continue
        directories.append(directory)
        tasks = processes + _OVERHEAD_TASKS
        if hierarchy.controller in ("pids", "unified"):
            _write(directory, "pids.max", tasks)
        if hierarchy.controller == "memory":
            _write(directory, "memory.limit_in_bytes", memory_bytes)
            memory_file = os.path.join(directory, "memory.oom_control")
        if hierarchy.controller == "unified":
            _write(directory, "memory.max", memory_bytes)
            _write(directory, "memory.swap.max", 0)
            memory_file = os.path.join(directory, "memory.events")
    if not directories:
        return None
    return RunGroup(directories, memory_file)
