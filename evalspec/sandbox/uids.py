"""One unprivileged uid per run, leased from a fixed range (harness running as root).

RLIMIT_NPROC counts every task of a real uid, and signals reach every process
of a uid; so when parallel runs share a uid (``nobody``), one run's fork bomb
starves its neighbours and ``kill(-1)`` ends them. Each run therefore gets a
uid (and the gid of the same number) of its own from :data:`UID_RANGE`, held
with an exclusive ``flock`` on a lock file in a root-only directory: another
harness process on the machine (a parallel ``evalspec score``, a test suite)
leases from the same files, so no two runs anywhere share a uid, and the lock
dies with its holder if that is killed.

The range lies in the block systemd leaves unallocated (0x70000000 and up,
below its "foreign" range), where no account, container or subuid mapping of a
normal system lives. A uid is scrubbed before it is handed out and after the
run: every process it still has is killed, and (below the namespace tier,
where the program wrote the host's world-writable directories) what it owns in
/tmp, /var/tmp and /dev/shm and its System V IPC objects are removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import random
import signal
import stat
import time

import attrs

from evalspec.sandbox.errors import SandboxError
from evalspec.sandbox.removal import Leftovers, remove_tree

#: Uids (and gids) runs are leased from: 0x78000000 .. 0x7800FFFF.
UID_RANGE = range(0x7800_0000, 0x7801_0000)

#: World-writable places a program below the namespace tier can leave files in.
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")

# Fixed, machine-wide paths (never $TMPDIR): every harness process, whatever
# its environment, must lease from the same locks.
_LOCK_DIRS = (
    "/run/evalspec-sandbox-uids",
    "/var/lib/evalspec-sandbox-uids",
    "/tmp/evalspec-sandbox-uids",
)
_KILL_ROUNDS = 200


class UidLeaseError(SandboxError):
    """No uid of :data:`UID_RANGE` could be leased (or the lock directory is unsafe)."""


@attrs.define
class Lease:
    """A uid held by this process until :meth:`release`."""

    uid: int
    fd: int

    @property
    def gid(self) -> int:
        return self.uid

    def release(self) -> None:
        """Scrub the uid and let the next run have it."""
        if self.fd < 0:
            return
        try:
            kill_uid(self.uid)
        finally:
            os.close(self.fd)
            self.fd = -1


def _lock_dir() -> str:
    """A directory only root can write, for the lock files (made on first use)."""
    candidates = _LOCK_DIRS
    problems = []
    for path in candidates:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror}")
            continue
        try:
            st = os.lstat(path)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror}")
            continue
        # Someone else's directory (made in /tmp before us) must never be trusted.
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            problems.append(f"{path}: not a directory owned by root and writable only by it")
            continue
        return path
    raise UidLeaseError("no safe directory for uid leases: " + "; ".join(problems))


def lease() -> Lease:
    """Lease a uid no other run on this machine holds; scrubbed before it is returned."""
    directory = _lock_dir()
    # Start anywhere in the lowest few hundred: few lock files, rarely contended.
    span = 512
    start = random.randrange(span)  # spreading, not secrecy
    order = itertools.chain((UID_RANGE[(start + i) % span] for i in range(span)), UID_RANGE[span:])
    for uid in order:
        path = os.path.join(directory, str(uid))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise UidLeaseError(f"cannot open the uid lock {path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except OSError as exc:
            os.close(fd)
            raise UidLeaseError(f"cannot lock {path}: {exc.strerror}") from exc
        held = Lease(uid, fd)
        try:
            # A holder killed mid-run leaves its processes and files behind.
            kill_uid(uid)
            remove_owned_files(uid)
        except BaseException:
            held.release()
            raise
        return held
    raise UidLeaseError(f"every uid of {UID_RANGE.start}..{UID_RANGE.stop - 1} is in use")


def processes_of(uid: int) -> list[int]:
    """Pids of processes with ``uid`` as real, effective, saved or file-system uid."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if str(uid) in line.split()[1:]:
                            found.append(int(name))
                        break
        except OSError:
            continue
    return found


def kill_uid(uid: int) -> bool:
    """SIGKILL every process of ``uid`` until none is left; False if some would not die."""
    if uid not in UID_RANGE:  # never a real account, whatever the caller passed
        return True
    for _ in range(_KILL_ROUNDS):
        pids = processes_of(uid)
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
    return not processes_of(uid)


def remove_owned_files(uid: int) -> Leftovers:
    """Remove what ``uid`` created in the host's shared writable places; return what stayed.

    Looks at the entries of each of :data:`SHARED_WRITABLE` and of the sticky
    world-writable directories directly in them (such as /tmp/.X11-unix):
    the places a uid without a home usually can create entries in.
    """
    if uid not in UID_RANGE:
        return Leftovers()
    left, example = 0, ""
    todo = list(dict.fromkeys(os.path.realpath(d) for d in SHARED_WRITABLE))
    first_level = len(todo)
    seen = 0
    while todo:
        directory = todo.pop(0)
        seen += 1
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == uid:
                stayed = remove_tree(entry.path)
                if stayed:
                    left += stayed.count
                    example = example or stayed.example
            elif seen <= first_level and stat.S_ISDIR(st.st_mode) and st.st_mode & 0o1002 == 0o1002:
                todo.append(entry.path)
    _remove_ipc(uid)
    return Leftovers(left, example)


def _remove_ipc(uid: int) -> None:
    """Remove System V shared memory, semaphores and message queues owned by ``uid``."""
    import ctypes

    ipc_rmid = 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    for kind, id_name in (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid")):
        control = getattr(libc, f"{kind}ctl")
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii", errors="replace") as fh:
                header = fh.readline().split()
                rows = [line.split() for line in fh]
        except OSError:
            continue
        try:
            id_col, uid_col = header.index(id_name), header.index("uid")
        except ValueError:
            continue
        for row in rows:
            with contextlib.suppress(IndexError, ValueError):
                if int(row[uid_col]) == uid:
                    ident = int(row[id_col])
                    control(*((ident, 0, ipc_rmid) if kind == "sem" else (ident, ipc_rmid, None)))
