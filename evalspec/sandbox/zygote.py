"""A worker slot's pre-initialised interpreter: forks one fresh run at a time.

Started by :mod:`evalspec.sandbox.slots` as ``python -I -B -c BOOT`` with an
environment built from scratch and a ``SOCK_SEQPACKET`` control socket (its
descriptor number is the one argument); ``BOOT`` reads this file's text, the driver's and the jail's
from stdin (never from a file a program could rewrite) and runs this one.
Self-contained (stdlib only), like the driver and the jail, and read as text
by the harness, never imported for its behaviour.

Why: a run used to start two or three interpreters (``unshare``, the jail's
Python, the driver's Python): about 200 ms of interpreter start-up and
imports per program. This process pays that once per worker slot. It holds no
secret: it never reads a job (the nonce, the tests and the program text go
from the harness to the run's own stdin, read only by the run's supervisor
after the fork), it never runs a line of a program, and what it keeps between
runs is only its own code and the standard library it imported at start-up.
Every run is a ``fork()`` of it taken before anything of that run exists, so
nothing of a previous run (which lived only in its own, now dead, processes)
can be in the next one's memory.

Protocol, one JSON message per datagram:

- harness -> zygote: ``{"cwd", "env", "argv", "cgroups", "ids", "jail"}`` with
  four descriptors attached (the run's stdin, stdout, stderr and status
  pipe ends). ``argv`` is the driver's argv (its status descriptor is 3),
  ``ids`` the (uid, gid) to become (``uid-drop``), ``jail`` the jail's spec
  (``namespace``: new mount, pid, network, IPC and UTS namespaces, the
  private root, pid 1 the supervisor).
- zygote -> harness: ``["started", pid]`` (the run's leader, which leads its
  own session and process group), then ``["exited", pid, status]`` (the
  exit status as ``subprocess`` reports it: negative for a signal); or
  ``["error", why]`` when no run could be forked.

End of file on the control socket (the harness exited or closed the slot)
kills the run in flight and ends this process.

The process the harness starts is not a slot's zygote itself but their
**mother** (:func:`mother`): one per interpreter and environment, it never
forks a run. Each slot's zygote is a fork of it, taken on request before it
has done anything but load its code, so a zygote costs a fork, not an
interpreter's start-up and imports (about 110 ms of CPU each); a fork of a
process that holds no secret holds none either. Its protocol:

- harness -> mother: ``{"spawn": true}`` with one descriptor attached (the
  new zygote's end of its control socket, which it alone holds);
- mother -> harness: ``["spawned", pid]`` with a pidfd of the new zygote
  attached (the harness is not its parent: the pidfd is how it sees it end,
  and kills it, without a pid that could be reused), or ``["error", why]``.
  The zygote then says ``["ready", pid]`` on its own socket and serves runs.

The mother reaps its zygotes; at end of file it waits until every one of
them has ended (each ends at end of file on its own socket) and exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import select
import signal
import socket
import sys
import types
from typing import Any

STATUS_FD = 3  # in the run: the driver's and the jail's status descriptor
SETUP_FAILED = 125
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
MAX_REQUEST = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _module(name: str, source: str) -> types.ModuleType:
    """The driver's or the jail's text as a module of this interpreter (loaded once)."""
    module = types.ModuleType(name)
    module.__file__ = f"<evalspec sandbox {name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def _send(control: socket.socket, message: list[Any]) -> None:
    control.send(json.dumps(message).encode("ascii"))


def _place(fds: list[int]) -> None:
    """The run's pipes as 0, 1, 2 and 3; every other descriptor closed."""
    high = [os.dup(fd) for fd in fds]  # above 3: dup2 below never overwrites one
    for target, fd in enumerate(high):
        os.dup2(fd, target, inheritable=True)
    os.closerange(4, 1 << 20)


def _run(request: dict[str, Any], fds: list[int], driver: Any, jail: Any) -> None:
    """The run's leader (a fresh fork of this process); never returns."""
    try:
        spec = request.get("jail")
        if spec is not None:
            # pid 1 of the run's pid namespace (_fork_run): dies with the zygote.
            _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        os.setsid()
        _place(fds)
        # First: everything this becomes and starts is counted in the run's groups.
        jail.join_cgroups([str(procs) for procs in request["cgroups"]])
        os.chdir(str(request["cwd"]))
        # Exactly the run's environment; only what differs from this process's
        # is changed (usually HOME and TMPDIR: every other change costs the fork).
        env = {str(k): str(v) for k, v in request["env"].items()}
        for key in [k for k in os.environ if k not in env]:
            del os.environ[key]
        for key, value in env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        argv = [str(a) for a in request["argv"]]
        if spec is not None:
            # This leader is pid 1 of a new pid namespace (_fork_run): it makes
            # the other namespaces, builds the private root, then is the
            # driver's supervisor. (Its parent is outside the namespace:
            # getppid() says 0.)
            try:
                if os.getpid() != 1:
                    raise RuntimeError(f"expected pid 1 of a new pid namespace, got {os.getpid()}")
                _check(_libc.unshare(NAMESPACES & ~CLONE_NEWPID), "unshare")
                jail._build({**spec, "cgroups": [], "status_fd": STATUS_FD})
                _check_reachable()
            except BaseException as exc:  # anything here is the sandbox's fault
                _fail(f"jail setup failed: {type(exc).__name__}: {exc}")
            driver.main(argv)
            os._exit(1)  # not reached: the driver ends with os._exit
        ids = request.get("ids")
        if ids is not None:
            uid, gid = int(ids[0]), int(ids[1])
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            _check_reachable()
        # Not the zygote's session keyring (every run of the slot would share it).
        jail.isolate_keyrings(clear_user=ids is not None)
        driver.main(argv)
    except BaseException as exc:  # anything here is the sandbox's fault
        _fail(f"run setup failed: {type(exc).__name__}: {exc}")
    os._exit(1)


def _check_reachable() -> None:
    """The run's uid must be able to run this interpreter and read its library.

    A fresh interpreter exec'd as that uid needed it; a fork still does, for
    every module it imports later (a Python under a 0700 home is not usable).
    """
    library = os.path.dirname(os.__file__)
    if not os.access(sys.executable, os.X_OK) or not os.access(library, os.R_OK | os.X_OK):
        raise PermissionError(f"the run's uid {os.getuid()} cannot run {sys.executable}")


def _fail(why: str) -> None:
    try:
        os.write(STATUS_FD, f"S {why}\n"[:500].encode("ascii", "replace"))
    finally:
        os._exit(SETUP_FAILED)


def _fork_run(jailed: bool, own_pid_namespace: int) -> int:
    """Fork a run's leader; for a jailed run, as pid 1 of a new pid namespace.

    ``unshare(CLONE_NEWPID)`` puts only the next child in a new namespace, so
    the leader is that namespace's pid 1 with no process in between (a leader
    that only forked pid 1 and waited cost a whole fork a run); ``setns`` then
    puts this process's later children back in its own namespace.
    """
    if not jailed:
        return os.fork()
    _check(_libc.unshare(CLONE_NEWPID), "unshare a pid namespace")
    try:
        pid = os.fork()
    except OSError:
        _restore_pid_namespace(own_pid_namespace)
        raise
    if pid != 0:  # never in the child: its own children are the namespace's
        _restore_pid_namespace(own_pid_namespace)
    return pid


def _restore_pid_namespace(own_pid_namespace: int) -> None:
    if _libc.setns(own_pid_namespace, CLONE_NEWPID) != 0:
        # Every later run would go into a dead namespace: end this slot (the
        # harness replaces it); a run just forked dies with it (pdeathsig).
        os._exit(SETUP_FAILED)


def _receive(control: socket.socket, most: int) -> tuple[bytes | None, list[int]]:
    """One datagram and the descriptors attached to it (at most ``most``);
    None at end of file (the harness closed the socket, or exited)."""
    data, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, most)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return data, fds


def serve(control: socket.socket, driver: Any, jail: Any) -> None:
    """Fork one run per request, report its end; return at end of file."""
    own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)  # closed in runs by _place
    while True:
        data, fds = _receive(control, 4)
        if data is None:
            return
        try:
            request = json.loads(data)
            if len(fds) != 4 or type(request) is not dict:
                raise ValueError("a request needs four descriptors and an object")
        except ValueError as exc:
            for fd in fds:
                os.close(fd)
            _send(control, ["error", f"bad request: {exc}"])
            continue
        try:
            pid = _fork_run(request.get("jail") is not None, own_pid_namespace)
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            _send(control, ["error", f"cannot fork a run: {exc}"])
            continue
        if pid == 0:
            control.detach()  # closed by _place; the object must not close a reused number
            _run(request, fds, driver, jail)
        for fd in fds:
            os.close(fd)
        _send(control, ["started", pid])
        _send(control, ["exited", pid, _follow(control, pid)])


def _follow(control: socket.socket, pid: int) -> int:
    """Wait for the run's leader; end it if the harness goes away meanwhile."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([pidfd, control.fileno()], [], [])
            # A message during a run is not in the protocol (read and dropped);
            # end of file is: the harness is gone, nobody would follow this run.
            if control.fileno() in ready and not control.recv(MAX_REQUEST):
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                sys.exit(0)
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                return os.waitstatus_to_exitcode(status)
    finally:
        os.close(pidfd)


def mother(control: socket.socket, driver: Any, jail: Any) -> None:
    """Fork one slot's zygote per request and reap them; return once, after
    end of file, every one of them has ended."""
    children: dict[int, int] = {}  # pidfd -> pid of each live zygote
    poller = select.poll()  # not select: no limit on how many zygotes there are
    poller.register(control.fileno(), select.POLLIN)
    while True:
        ready = {fd for fd, _ in poller.poll()}
        for pidfd in ready & children.keys():
            poller.unregister(pidfd)
            os.waitpid(children.pop(pidfd), 0)
            os.close(pidfd)
        if control.fileno() not in ready:
            continue
        data, fds = _receive(control, 1)
        if data is None:
            break
        try:
            if len(fds) != 1 or json.loads(data) != {"spawn": True}:
                raise ValueError("a spawn request is {'spawn': true} and one descriptor")
            pid = os.fork()
        except (ValueError, OSError) as exc:
            for fd in fds:
                os.close(fd)
            _send(control, ["error", f"cannot start a slot: {exc}"])
            continue
        if pid == 0:
            _zygote(fds[0], control, list(children), driver, jail)
        os.close(fds[0])
        pidfd = os.pidfd_open(pid)
        children[pidfd] = pid
        poller.register(pidfd, select.POLLIN)
        try:
            socket.send_fds(control, [json.dumps(["spawned", pid]).encode("ascii")], [pidfd])
        except OSError:
            break  # the harness is gone: its new zygote sees end of file too
    control.close()
    for pidfd, pid in children.items():
        os.waitpid(pid, 0)
        os.close(pidfd)


def _zygote(
    fd: int, mother_control: socket.socket, siblings: list[int], driver: Any, jail: Any
) -> None:
    """A fresh fork of the mother becomes one slot's zygote on ``fd``; never returns."""
    try:
        os.close(mother_control.detach())  # the mother's socket is the mother's
        for pidfd in siblings:
            os.close(pidfd)
        os.setsid()  # a session of its own, as the mother's was started
        control = socket.socket(fileno=fd)
        _send(control, ["ready", os.getpid()])
        serve(control, driver, jail)
    except BaseException:  # a zygote that cannot serve ends; the harness sees end of file
        os._exit(1)
    os._exit(0)


def main(sources: dict[str, str], control_fd: int) -> None:
    """Load the driver and the jail, say ready on ``control_fd``, then fork
    slots' zygotes on request (:func:`mother`)."""
    # Not dumpable: a program of the same uid (rlimits-only) can neither ptrace
    # this process nor read or write its memory to change the next run.
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")
    control = socket.socket(fileno=control_fd)
    driver = _module("driver", sources["driver"])
    jail = _module("jail", sources["jail"])
    # What every run's supervisor, program and test process import anyway,
    # loaded once here (imports the run makes later still read the disk).
    # Never threading: its after-fork hook would run in every fork of this
    # process (about 130 page faults each, three forks a run).
    for name in ("ast", "io", "linecache", "resource", "traceback", *driver.PRELOAD):
        with contextlib.suppress(ImportError):
            __import__(name)
    driver.warm()
    jail.warm()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # What is loaded now is never collected: a run's collections then leave
    # these pages shared with this process instead of copying them (faster forks).
    gc.freeze()
    _send(control, ["ready", os.getpid()])
    mother(control, driver, jail)
