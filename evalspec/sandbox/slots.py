"""Worker slots: a pre-started zygote interpreter (and, as root, a leased uid) per slot.

A run used to start two or three interpreters of its own (``unshare``, the
jail's Python, the driver's Python); that start-up was about three quarters of
a run's cost. Each slot instead keeps one ``python -I -B`` started from
scratch (:mod:`evalspec.sandbox.zygote`: its code comes over a pipe, its
environment is :data:`evalspec.sandbox.process.BASE_ENV`, it is not dumpable)
that forks each run in turn, before anything of the run exists. A slot is used
by one run at a time; :func:`slot` hands an idle one to the calling thread, or
starts one, so there are as many as runs were ever in flight at once.

Only the first slot of an interpreter and environment pays for starting one:
the process started is the slots' **mother**, which never runs anything, and
each slot's zygote is a fork of it taken on request (a fork, not about 110 ms
of interpreter start-up and imports). The harness is not a zygote's parent
then: it holds a pidfd of each (:class:`Zygote`), through which it sees the
zygote end and kills it.

As root, a slot also keeps its uid lease (:mod:`evalspec.sandbox.uids`)
across its runs: the uid is scrubbed after every run as before (its processes
killed, its files in the shared places removed), and a slot whose scrub left
anything behind is closed (its uid released and scrubbed again on the next
lease) instead of being reused. Slots end when the harness exits: the zygote
sees end of file on its control socket, kills a run in flight and exits.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import attrs

import evalspec.sandbox.uids as uids
from evalspec.sandbox.errors import SandboxError

_BOOT = (
    "import json, sys\n"
    "sources = json.loads(sys.stdin.buffer.read())\n"
    "zygote = {'__name__': 'evalspec_zygote'}\n"
    "exec(compile(sources['zygote'], '<evalspec sandbox zygote>', 'exec'), zygote)\n"
    "zygote['main'](sources, int(sys.argv[1]))\n"
)
#: The run's status descriptor (the driver's and the jail's) in a forked run.
STATUS_FD = 3
_START_SECONDS = 60.0  # a loaded machine can take long to start an interpreter
_REPLY_SECONDS = 30.0
_MAX_REPLY = 1 << 16


class SlotError(SandboxError):
    """A worker slot's zygote could not be started or stopped answering."""


class SlotLost(SlotError):
    """A slot's zygote was gone before it forked the run (nothing of the run started)."""


class Zygote:
    """A slot's zygote, forked by its mother: the part of :class:`subprocess.Popen`
    the slots use, through a pidfd (the mother, its parent, reaps it).

    ``returncode`` is None while it lives; once it has ended, -9 if the harness
    killed it, else 0 (its exit status is known only to its parent).
    """

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._killed = False
        self._lock = threading.Lock()  # the pidfd is closed once, and never signalled after

    def poll(self) -> int | None:
        if self.returncode is None and _readable(self._pidfd, 0):
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not _readable(self._pidfd, timeout):
                raise subprocess.TimeoutExpired("slot zygote", timeout or 0.0)
            self._ended()
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        with self._lock:
            if self.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                self._killed = True

    def _ended(self) -> None:
        with self._lock:
            if self.returncode is None:
                self.returncode = -9 if self._killed else 0
                os.close(self._pidfd)


@attrs.define(eq=False)
class Slot:
    """One zygote process and its control socket, used by one run at a time."""

    key: tuple[Any, ...]
    process: Zygote
    control: socket.socket
    lease: uids.Lease | None = None
    broken: bool = False

    def launch(
        self, request: dict[str, Any], fds: tuple[int, int, int, int], ends: tuple[int, int, int]
    ) -> ZygoteRun:
        """Fork one run with ``fds`` (its stdin, stdout, stderr and status ends).

        ``ends`` are the harness's ends of stdin, stdout and stderr, which the
        returned run owns (closed with it). Raises :class:`SlotError` if the
        zygote does not fork it (:class:`SlotLost` when it is gone).
        """
        try:
            socket.send_fds(
                self.control, [json.dumps(request).encode("utf-8", "surrogatepass")], list(fds)
            )
            reply = self.receive(_REPLY_SECONDS)
        except (OSError, ValueError, SlotError) as exc:
            self.broken = True
            raise SlotLost(f"the worker slot's interpreter did not fork the run: {exc}") from None
        if reply[0] != "started" or len(reply) != 2 or type(reply[1]) is not int:
            self.broken = reply[0] != "error"
            raise SlotError(f"the worker slot's interpreter did not fork the run: {reply}")
        stdin, stdout, stderr = ends
        return ZygoteRun(
            self,
            reply[1],
            os.fdopen(stdin, "wb"),
            os.fdopen(stdout, "rb"),
            os.fdopen(stderr, "rb"),
        )

    def receive(self, timeout: float | None) -> list[Any]:
        """The zygote's next message; :class:`SlotError` at end of file or ``timeout``."""
        message, _ = _receive(self.control, timeout, 0)
        if message is None:
            self.broken = True
            raise SlotError("the interpreter exited")
        return message

    def close(self) -> None:
        """End the zygote (and so a run in flight) and give the uid back."""
        _end(self.control, self.process)
        if self.lease is not None:
            self.lease.release()
            self.lease = None


@attrs.define(eq=False)
class Mother:
    """The started interpreter whose forks are the slots' zygotes (one per key)."""

    key: tuple[Any, ...]
    process: subprocess.Popen[bytes]
    control: socket.socket
    broken: bool = False

    def spawn(self) -> Slot:
        """A new slot: a fork of this interpreter, ready to fork runs.

        :class:`SlotLost` when the mother is gone, :class:`SlotError` when it
        could not fork one or the new zygote did not say it was ready.
        """
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            try:
                socket.send_fds(self.control, [b'{"spawn": true}'], [theirs.fileno()])
                message, fds = _receive(self.control, _REPLY_SECONDS, 1)
            except (OSError, SlotError) as exc:
                self.broken = True
                raise SlotLost(f"the slots' interpreter did not fork a slot: {exc}") from None
            finally:
                theirs.close()
            if message is None:
                self.broken = True
                raise SlotLost(f"the slots' interpreter exited (status {self.process.poll()})")
            if message[0] != "spawned" or len(message) != 2 or type(message[1]) is not int:
                for fd in fds:
                    os.close(fd)
                self.broken = message[0] != "error"
                raise SlotError(f"the slots' interpreter did not fork a slot: {message}")
            if len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                self.broken = True
                raise SlotError("the slots' interpreter sent no pidfd of the slot")
        except BaseException:
            mine.close()
            raise
        held = Slot(self.key, Zygote(message[1], fds[0]), mine)
        try:
            hello = held.receive(_START_SECONDS)
            if hello != ["ready", message[1]]:
                raise SlotError(f"an unexpected greeting {hello!r}")
        except (SlotError, OSError, ValueError) as exc:
            held.close()
            raise SlotError(f"a forked slot did not start: {exc}") from None
        return held

    def close(self) -> None:
        """End the mother (it exits once every zygote it forked has ended)."""
        _end(self.control, self.process)


def _receive(
    control: socket.socket, timeout: float | None, most: int
) -> tuple[list[Any] | None, list[int]]:
    """The next message on ``control`` (None at end of file) and up to ``most``
    descriptors attached to it; :class:`SlotError` at ``timeout``."""
    if not _readable(control.fileno(), timeout):
        raise SlotError(f"no answer within {timeout:g} s")
    data, fds, _, _ = socket.recv_fds(control, _MAX_REPLY, most, socket.MSG_CMSG_CLOEXEC)
    # CPython's recv_fds drops its flags argument (MSG_CMSG_CLOEXEC included):
    # close-on-exec here, so no program the harness later starts inherits a pidfd.
    for fd in fds:
        os.set_inheritable(fd, False)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    try:
        message = json.loads(data)
    except ValueError:
        message = None
    if type(message) is not list or not message:
        for fd in fds:
            os.close(fd)
        raise SlotError(f"an unreadable answer: {data[:80]!r}")
    return message, fds


def _readable(fd: int, timeout: float | None) -> bool:
    """Whether ``fd`` is readable within ``timeout`` seconds (None: wait).

    poll, not select: a harness with many files open may hold descriptor
    numbers past select's 1024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else max(0, math.ceil(timeout * 1000))))


def _end(control: socket.socket, process: Zygote | subprocess.Popen[bytes]) -> None:
    """Close ``control`` (end of file: the process ends) and wait for it, killing it after 5 s."""
    with contextlib.suppress(OSError):
        control.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()


class ZygoteRun:
    """A run forked by a slot: the part of :class:`subprocess.Popen` the harness uses.

    ``pid`` leads the run's session and process group (killed with
    ``os.killpg`` as a Popen'd launcher is); its exit status comes from the
    zygote, which is its parent. ``exit_fd`` becomes readable when it does.
    """

    def __init__(
        self, slot: Slot, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]
    ) -> None:
        self.slot = slot
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None

    @property
    def exit_fd(self) -> int:
        return self.slot.control.fileno()

    def _take(self, timeout: float | None) -> None:
        try:
            message = self.slot.receive(timeout)
        except SlotError:
            if self.slot.broken:  # the zygote is gone: so is the run's parent
                self.returncode = -9
            return
        except (OSError, ValueError):
            self.slot.broken = True
            self.returncode = -9
            return
        if message[0] == "exited" and len(message) == 3 and message[1] == self.pid:
            self.returncode = int(message[2])
        else:
            self.slot.broken = True
            self.returncode = -9

    def poll(self) -> int | None:
        if self.returncode is None:
            self._take(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        until = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if until is None else until - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("sandbox run", timeout or 0.0)
            self._take(left)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, 9)


_lock = threading.Lock()
_idle: dict[tuple[Any, ...], list[Slot]] = {}
_open: list[Slot] = []
_spawning = threading.Lock()  # held while a slot is forked (and its mother started)
_mothers: dict[tuple[Any, ...], Mother] = {}


def _start(
    key: tuple[Any, ...], python: str, env: dict[str, str], sources: dict[str, str]
) -> Mother:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        process = subprocess.Popen(
            [python, "-I", "-B", "-c", _BOOT, str(theirs.fileno())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(theirs.fileno(),),
            cwd="/",
            env=env,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        mine.close()
        raise SlotError(str(exc)) from None
    finally:
        theirs.close()
    started = Mother(key, process, mine)
    assert process.stdin is not None and process.stderr is not None
    try:
        with contextlib.suppress(OSError):
            process.stdin.write(json.dumps(sources).encode("ascii"))
        with contextlib.suppress(OSError):
            process.stdin.close()
        hello, _ = _receive(mine, _START_SECONDS, 0)
        if hello is None:
            raise SlotError(f"the interpreter exited (status {process.poll()})")
        if hello[0] != "ready":
            raise SlotError(f"an unexpected greeting {hello!r}")
    except (SlotError, OSError, ValueError) as exc:
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()
        tail = process.stderr.read().decode("utf-8", "replace").strip().splitlines()[-1:]
        process.stderr.close()
        mine.close()
        raise SlotError(f"{exc}{': ' + tail[0] if tail else ''}") from None
    # Nothing more is read from it; a zygote that writes there gets EPIPE.
    process.stderr.close()
    return started


def _new_slot(
    key: tuple[Any, ...], python: str, env: dict[str, str], sources: Callable[[], dict[str, str]]
) -> Slot:
    """A slot forked by ``key``'s mother, started first if there is none or it is gone."""
    with _spawning:
        try:
            return _mother(key, python, env, sources).spawn()
        except SlotLost:  # it died since it was last used: once more, from a fresh one
            return _mother(key, python, env, sources).spawn()


def _mother(
    key: tuple[Any, ...], python: str, env: dict[str, str], sources: Callable[[], dict[str, str]]
) -> Mother:
    """``key``'s live mother, replacing one that is gone (caller holds ``_spawning``)."""
    mother = _mothers.get(key)
    if mother is not None and not mother.broken and mother.process.poll() is None:
        return mother
    if mother is not None:
        del _mothers[key]
        mother.close()
    mother = _mothers[key] = _start(key, python, env, sources())
    return mother


@contextlib.contextmanager
def slot(
    key: tuple[Any, ...],
    python: str,
    env: dict[str, str],
    sources: Callable[[], dict[str, str]],
    *,
    per_run_uid: bool = False,
) -> Iterator[Slot]:
    """An idle slot for ``key`` (one zygote of ``python``), started if none is idle.

    Raises :class:`SlotError` (or :class:`evalspec.sandbox.uids.UidLeaseError`)
    when none can be had. Back in the pool afterwards unless it broke.
    """
    with _lock:
        idle = _idle.setdefault(key, [])
        held = idle.pop() if idle else None
    if held is None or held.process.poll() is not None:
        if held is not None:
            _discard(held)
        held = _new_slot(key, python, env, sources)
        with _lock:
            _open.append(held)
        if per_run_uid:
            try:
                held.lease = uids.lease()
            except BaseException:
                _discard(held)
                raise
    try:
        yield held
    finally:
        if held.broken or held.process.poll() is not None:
            _discard(held)
        else:
            with _lock:
                _idle.setdefault(key, []).append(held)


def _discard(held: Slot) -> None:
    with _lock:
        if held in _open:
            _open.remove(held)
        for idle in _idle.values():
            if held in idle:
                idle.remove(held)
    held.close()


def idle_slots() -> list[Slot]:
    """The slots no run is using now (for inspection: their zygotes' pids, leases)."""
    with _lock:
        return [held for idle in _idle.values() for held in idle]


def mothers() -> list[Mother]:
    """The slots' mothers (for inspection: their pids)."""
    with _spawning:
        return list(_mothers.values())


def _forget_after_fork() -> None:
    """In a forked child of the harness: the parent's slots are the parent's.

    Their sockets are shared with it, so using one here would interleave two
    processes' runs on one zygote; the child starts slots of its own.
    """
    global _lock, _spawning
    _lock = threading.Lock()
    _spawning = threading.Lock()
    _idle.clear()
    _open.clear()
    _mothers.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


@atexit.register
def close_all() -> None:
    """End every slot (their zygotes, and the uids they hold)."""
    with _lock:
        slots = list(_open)
    for held in slots:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            _discard(held)
    # Last: a mother exits once the zygotes it forked have.
    for mother in list(_mothers.values()):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            mother.close()
    _mothers.clear()
