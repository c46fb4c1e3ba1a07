"""Build the namespace tier's private root, then become the run's uid and exec the driver.

Run as ``python -I -B JAIL.py SPEC_JSON DRIVER_ARGV...`` by util-linux
``unshare --mount --pid --fork --net --ipc --uts`` (plus ``--user
--map-root-user`` when the harness is not root), so it starts as pid 1 of a
new pid namespace, as root of (or mapped to root in) a new, private mount
namespace. Self-contained (stdlib only), like the driver, and read as text by
:mod:`evalspec.sandbox.process`, never imported for its behaviour.

What the program will see, built on a tmpfs and then made read-only:

- read-only bind mounts of what the interpreter needs (``/usr``, ``/etc``,
  the ``/bin``, ``/lib*`` and ``/sbin`` links or directories, the
  interpreter's prefixes); nothing else of the host: no ``/run``, ``/var``,
  ``/home``, ``/root``, host ``/tmp`` or ``/dev/shm``, so no pathname Unix
  socket of the host is reachable (abstract ones belong to the network
  namespace, which is new and empty);
- ``/tmp``, ``/dev/shm`` and the working directory on ONE tmpfs of
  ``disk`` bytes: the run's whole writable space, gone with the namespace;
- a fresh ``/proc`` of the new pid namespace, and ``/dev`` with only null,
  zero, full, random and urandom.

The process then ``chroot``s into it. Inside a chroot the kernel refuses to
create user namespaces (``unshare(2)``: EPERM when the caller's root is not
its mount namespace's root), so the program cannot nest one to regain
capabilities. Privileges are dropped last: as real root to the run's own uid
and gid (no supplementary groups); in a user namespace (uid 0 mapped to the
caller) every capability is dropped from the bounding set and the securebits
that would give them back on exec are locked.

Exit status 125 with an ``S <why>`` line on the status descriptor (the
spec's ``status_fd``) means the jail could not be built.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import shutil
import sys
from typing import Any

SETUP_FAILED = 125
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
# SECBIT_NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, NO_CAP_AMBIENT_RAISE and their locks.
SECUREBITS_LOCKED_DOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
DEVICES = ("null", "zero", "full", "random", "urandom")

_libc = ctypes.CDLL(None, use_errno=True)


def warm() -> None:
    """In a slot's zygote: look up the C functions every run's leader calls
    (a first lookup builds an object; a fork then inherits it)."""
    for name in ("mount", "umount2", "prctl", "syscall"):
        getattr(_libc, name)


def join_cgroups(procs_files: list[str]) -> None:
    """Move this process into each group of ``procs_files`` (their ``cgroup.procs``).

    By descriptor, not a text-mode file object: a process's first one costs it
    about 280 page faults, and every run's leader does this."""
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            if os.write(fd, b"0") != 1:
                raise OSError(f"a short write to {path}")
        finally:
            os.close(fd)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


# keyctl(2) has no libc wrapper (it is libkeyutils'), so it is called by number.
_KEYCTL_SYSCALL = {"x86_64": 250, "amd64": 250, "aarch64": 219, "arm64": 219}
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_CLEAR = 7
KEY_SPEC_USER_KEYRING = -4
KEY_SPEC_USER_SESSION_KEYRING = -5


def isolate_keyrings(*, clear_user: bool) -> None:
    """Give the run a kernel keyring session of its own before any program code.

    Keys outlive processes: a run would otherwise share the session keyring of
    the process that started it (a slot's zygote, so every later run of that
    slot, or the harness's own), and a program could leave a key there for the
    next run, or read the harness's. ``clear_user`` (a leased sandbox uid, as
    root) also empties that uid's user keyrings, which the previous run of the
    same uid may have filled; never for a uid the harness shares (rlimits-only)
    or maps (a user namespace, on kernels that key user keyrings by the real
    uid), whose keyrings are a person's.

    :raises OSError: the keyrings exist and cannot be isolated (fail closed).
    """
    number = _KEYCTL_SYSCALL.get(platform.machine().lower())
    if number is None:
        raise OSError(errno.ENOSYS, f"cannot isolate kernel keyrings on {platform.machine()}")
    keyctl = _libc.syscall
    keyctl.restype = ctypes.c_long
    if keyctl(ctypes.c_long(number), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) < 0:
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EOPNOTSUPP):
            return  # a kernel without keyrings: nothing to share
        raise OSError(err, f"keyctl join session keyring: {os.strerror(err)}")
    if clear_user:
        for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
            if keyctl(ctypes.c_long(number), ctypes.c_long(KEYCTL_CLEAR), ctypes.c_long(ring)) < 0:
                err = ctypes.get_errno()
                raise OSError(err, f"keyctl clear user keyring: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _bind(source: str, target: str, *, writable: bool = False, device: bool = False) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID
    flags |= 0 if writable else MS_RDONLY
    flags |= 0 if device else MS_NODEV  # a device node opens only without nodev
    _mount(None, target, None, flags)


def _mirror(root: str, host: str, *, device: bool = False) -> None:
    """Make ``host`` visible read-only at the same path under ``root``."""
    inside = root + host
    if os.path.lexists(inside):
        return  # already visible through a parent bind, or made before
    os.makedirs(os.path.dirname(inside), mode=0o755, exist_ok=True)
    if os.path.islink(host):
        os.symlink(os.readlink(host), inside)
        return
    if os.path.isdir(host):
        os.mkdir(inside, 0o755)
    else:
        with open(inside, "wb"):
            pass
    _bind(host, inside, device=device)


def _files_in(directory: str) -> list[str]:
    """Names of the regular files directly in ``directory`` (not links, not directories)."""
    return [e.name for e in os.scandir(directory) if e.is_file(follow_symlinks=False)]


def _build(spec: dict[str, Any]) -> None:
    root, base, workdir = str(spec["root"]), str(spec["base"]), str(spec["workdir"])
    uid, gid, disk = int(spec["uid"]), int(spec["gid"]), int(spec["disk"])
    # The run's cgroups (the harness may have moved our parent only after it
    # forked us): everything this becomes and starts is counted there.
    join_cgroups([str(procs) for procs in spec.get("cgroups", ())])
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    # One tmpfs for every writable place, so ``disk`` bounds them together.
    scratch = f"{root}/.scratch"
    os.mkdir(scratch, 0o700)
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk},mode=0755")
    for name, mode in (("tmp", 0o1777), ("shm", 0o1777), ("work", 0o700)):
        os.mkdir(f"{scratch}/{name}")
        os.chmod(f"{scratch}/{name}", mode)
    os.chown(f"{scratch}/work", uid, gid)
    # Every file the harness put in the working directory (program.py, and
    # whatever else a driver needs there), owned by the run as on the host.
    for name in _files_in(workdir):
        shutil.copyfile(os.path.join(workdir, name), f"{scratch}/work/{name}")
        os.chown(f"{scratch}/work/{name}", uid, gid)
    os.makedirs(f"{root}/tmp", mode=0o755, exist_ok=True)
    os.makedirs(f"{root}/dev/shm", mode=0o755, exist_ok=True)
    _bind(f"{scratch}/tmp", f"{root}/tmp", writable=True)
    _bind(f"{scratch}/shm", f"{root}/dev/shm", writable=True)
    for host in sorted((str(b) for b in spec["binds"]), key=len):
        if os.path.lexists(host):
            _mirror(root, host)
    for name in DEVICES:
        _mirror(root, f"/dev/{name}", device=True)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{root}/dev/{name}")
    os.symlink("/proc/self/fd", f"{root}/dev/fd")
    os.mkdir(f"{root}/proc", 0o555)
    _mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # The driver and the working directory keep their host paths, so the
    # driver's argv, cwd, HOME and TMPDIR mean the same inside.
    os.makedirs(root + workdir, mode=0o700, exist_ok=True)
    os.chmod(root + base, 0o711)  # enterable, not listable, as on the host
    _bind(f"{scratch}/work", root + workdir, writable=True)
    for name in _files_in(base):  # the driver (and any script beside it), root's
        shutil.copyfile(os.path.join(base, name), root + os.path.join(base, name))
    _check(_libc.umount2(scratch.encode(), MNT_DETACH), "umount scratch")
    os.rmdir(scratch)
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chroot(root)
    os.chdir(workdir)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if spec.get("userns"):
        _drop_capabilities()
        isolate_keyrings(clear_user=False)
    else:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        isolate_keyrings(clear_user=True)


def _drop_capabilities() -> None:
    """uid 0 of a user namespace: empty the bounding set and lock root's exec privileges."""
    _check(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, 0, 0, 0), "securebits")
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows


def main(argv: list[str]) -> None:
    spec = json.loads(argv[1])
    driver_argv = argv[2:]
    status_fd = int(spec["status_fd"])
    try:
        if os.getpid() != 1:
            raise RuntimeError(f"expected pid 1 of a new pid namespace, got {os.getpid()}")
        _build(spec)
    except BaseException as exc:  # anything here is the sandbox's fault
        message = f"S jail setup failed: {type(exc).__name__}: {exc}\n"
        try:
            os.write(status_fd, message.encode("ascii", "replace"))
        finally:
            os._exit(SETUP_FAILED)
    os.execv(driver_argv[0], driver_argv)


if __name__ == "__main__":
    main(sys.argv)
