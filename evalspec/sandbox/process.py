"""Launch one sandboxed program and turn what happened into a :class:`RunResult`.

The harness side of the protocol documented in :mod:`evalspec.sandbox.driver`.
Nothing here forks the harness: every program is a freshly exec'd interpreter
started by :class:`subprocess.Popen` (safe from worker threads), with the
limits applied inside that interpreter before the untrusted code runs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from evalspec.sandbox import verdict as protocol
from evalspec.sandbox.limits import Limits
from evalspec.sandbox.results import RunResult, Status

_DRIVER_SOURCE = (Path(__file__).parent / "driver.py").read_bytes()
_SETUP_FAILED = 125
_STATUS_CAP = 64 * 1024
_KILL_GRACE_SECONDS = 5.0
_STOP_GRACE_SECONDS = 2.0

#: The environment every program gets; nothing of the parent's is inherited.
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


@attrs.frozen
class LaunchPlan:
    """How to start the driver for one isolation tier.

    ``prefix`` is the command put before the interpreter (``unshare ...``),
    ``mode`` the driver's mode (``ns``: it is pid 1 of a new pid namespace),
    ``run_as`` the (uid, gid) Popen drops to, ``owner`` who must own the
    program's temporary directory, ``shared_uid`` whether RLIMIT_NPROC counts
    tasks the driver cannot see (so the harness counts them), and
    ``python_version`` the version the probe saw the interpreter report.
    """

    tier: str
    python: str
    prefix: tuple[str, ...] = ()
    mode: str = "plain"
    run_as: tuple[int, int] | None = None
    owner: tuple[int, int] | None = None
    shared_uid: bool = False
    python_version: str = ""


@attrs.define
class _Stream:
    cap: int
    data: bytearray = attrs.Factory(bytearray)
    dropped: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))


@attrs.define
class _Status:
    """Parses the status lines of the driver's supervisor and test process.

    The program under test has no descriptor to this channel (see
    :mod:`evalspec.sandbox.driver`); the nonce guards against a line reaching
    it some other way.
    """

    nonce: str
    ready: bool = False
    setup_error: str | None = None
    finished: bool = False
    memory_error: bool = False
    failure: str | None = None
    test_code: int | None = None
    program_code: int | None = None
    program_first: bool = False
    test_cpu: float = 0.0
    program_cpu: float = 0.0
    seen: int = 0
    partial: bytes = b""

    @property
    def exit_code(self) -> int | None:
        """The program's exit status when it ended before the tests, else the tests'."""
        if self.program_first and self.program_code is not None:
            return self.program_code
        return self.test_code

    @property
    def cpu(self) -> float | None:
        """CPU seconds of the program and the test process together."""
        return None if self.test_code is None else self.test_cpu + self.program_cpu

    def feed(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        if self.seen > _STATUS_CAP:
            return  # a flood on the status fd: stop parsing, the run cannot pass
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()[:256]
        for line in lines:
            self._line(line.decode("ascii", "replace"))

    def _line(self, line: str) -> None:
        if line == "R":
            self.ready = True
        elif line.startswith("S ") and not self.ready:
            self.setup_error = line[2:]
        elif line == "M" and self.ready:
            self.memory_error = True
        elif line.startswith("F ") and self.ready and self.failure is None:
            self.failure = line[2:]
        elif line == "P " + self.nonce and self.ready:
            self.finished = True
        elif line == "G" and self.ready:
            self.program_first = True
        elif line.startswith("W "):
            # The supervisor writes W last, after every process of the run is dead.
            parts = line.split()
            try:
                self.test_code = int(parts[1])
                self.program_code = None if parts[2] == "alive" else int(parts[2])
                self.test_cpu, self.program_cpu = float(parts[3]), float(parts[4])
            except (IndexError, ValueError):
                self.test_code = self.program_code = None


def _make_workdir(plan: LaunchPlan, base: str, source: str) -> str:
    """The run's cwd inside ``base``, with ``program.py`` and the driver.

    ``base`` stays the harness's (mode 0711: enterable, not listable) and holds
    the driver, so a program running as the same sandbox uid in a parallel run
    can neither find this run's directory in a listing nor swap its files.
    """
    os.chmod(base, stat.S_IRWXU | stat.S_IXGRP | stat.S_IXOTH)
    driver = os.path.join(base, "driver.py")
    with open(driver, "wb") as fh:
        fh.write(_DRIVER_SOURCE)
    os.chmod(driver, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    workdir = tempfile.mkdtemp(dir=base)
    os.chmod(workdir, stat.S_IRWXU)
    program = os.path.join(workdir, "program.py")
    # surrogatepass: text that is not valid UTF-8 reaches the program, where
    # compiling it fails as the program's own error, not the harness's.
    with open(program, "w", encoding="utf-8", errors="surrogatepass") as fh:
        fh.write(source)
    if plan.owner is not None:
        os.chown(program, *plan.owner)
        os.chown(workdir, *plan.owner)
    return workdir


def _remove_workdir(path: str) -> None:
    def retry(func: object, failed: str, _exc: object) -> None:
        # A program may chmod its own files to 000; we own the tree, so undo it.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed) or failed, stat.S_IRWXU)
            os.chmod(failed, stat.S_IRWXU)
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(failed) and not os.path.islink(failed):
                shutil.rmtree(failed)
            else:
                os.unlink(failed)

    shutil.rmtree(path, onerror=retry)


def tasks_of(uid: int) -> int:
    """Threads now owned by real ``uid`` on this machine (what RLIMIT_NPROC counts)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(fields.get("Uid", "-1").split()[0]) == uid:
                total += int(fields.get("Threads", "1").strip())
        except (OSError, ValueError):
            continue
    return total


def _pipe_holders(inodes: set[str]) -> list[int]:
    """Processes (not this one) holding an end of this run's pipes."""
    me = os.getpid()
    holders = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
            for fd in fds:
                if os.readlink(f"/proc/{name}/fd/{fd}") in inodes:
                    holders.append(int(name))
                    break
        except OSError:
            continue  # gone, or not ours to look at
    return holders


def _sweep(inodes: set[str]) -> None:
    """Kill escaped descendants still holding the run's pipes (lower tiers only).

    In the namespace tier the kernel already killed everything with the
    namespace; below it, a program whose supervisor was killed on timeout can
    leave a setsid()'d grandchild behind, which still holds inherited pipes.
    """
    for _ in range(50):
        holders = _pipe_holders(inodes)
        if not holders:
            return
        for pid in holders:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def execute(
    plan: LaunchPlan,
    source: str,
    limits: Limits,
    test: str = "",
    *,
    trust_custom_types: bool = False,
) -> RunResult:
    """Run the program ``source`` against the test program ``test`` under ``plan``.

    The test runs in its own process and reaches the program's names only
    through the driver's proxies (see :mod:`evalspec.sandbox.driver`); an
    empty ``test`` passes when the program runs to its end.
    """
    started = time.monotonic()
    nonce = secrets.token_hex(16)
    job = protocol.job(nonce, test, source, trust_custom_types=trust_custom_types)
    if plan.run_as is None and plan.owner is None:
        protocol.guard_harness()
    try:
        base = tempfile.mkdtemp(prefix="evalspec-sandbox-")
    except OSError as exc:
        return _error(plan, started, f"cannot make a temporary directory: {exc}")
    try:
        try:
            workdir = _make_workdir(plan, base, source)
        except OSError as exc:
            return _error(plan, started, f"cannot prepare the temporary directory: {exc}")
        result = _launch(plan, limits, base, workdir, job, nonce, started)
        return attrs.evolve(result, custom_types=protocol.custom_types(trust_custom_types))
    finally:
        _remove_workdir(base)


def _launch(
    plan: LaunchPlan,
    limits: Limits,
    base: str,
    workdir: str,
    job: bytes,
    nonce: str,
    started: float,
) -> RunResult:
    status_r, status_w = os.pipe()
    env = {**BASE_ENV, "HOME": workdir, "TMPDIR": workdir}
    argv = [
        *plan.prefix,
        plan.python,
        "-I",
        "-B",
        os.path.join(base, "driver.py"),
        str(status_w),
        plan.mode,
        str(limits.cpu_seconds),
        str(limits.memory_bytes),
        str(limits.file_size_bytes),
        str(limits.open_files),
        str(limits.processes),
        str(tasks_of(plan.owner[0]) if plan.shared_uid and plan.owner else 0),
    ]
    user: dict[str, object] = {}
    if plan.run_as is not None:
        user = {"user": plan.run_as[0], "group": plan.run_as[1], "extra_groups": []}
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_w,),
            cwd=workdir,
            env=env,
            start_new_session=True,
            **user,  # type: ignore[call-overload]
        )
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        os.close(status_r)
        os.close(status_w)
        return _error(plan, started, f"cannot start the sandbox: {exc}")
    os.close(status_w)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    inodes = {f"pipe:[{os.fstat(f).st_ino}]" for f in (proc.stdout.fileno(), proc.stderr.fileno())}
    inodes.add(f"pipe:[{os.fstat(status_r).st_ino}]")
    protocol.feed(proc.stdin, job)

    out, err = _Stream(limits.output_bytes), _Stream(limits.output_bytes)
    status = _Status(nonce)
    sinks: dict[int, Callable[[bytes], None]] = {
        proc.stdout.fileno(): out.feed,
        proc.stderr.fileno(): err.feed,
        status_r: status.feed,
    }
    timed_out = _pump(proc, sinks, started + limits.wall_seconds, stop_first=plan.mode != "ns")
    os.close(status_r)
    proc.stdout.close()
    proc.stderr.close()
    if plan.mode != "ns":
        _sweep(inodes)
    duration = time.monotonic() - started
    verdict, detail = _classify(proc.returncode, status, timed_out, limits)
    return RunResult(
        status=verdict,
        returncode=status.exit_code if status.exit_code is not None else proc.returncode,
        stdout=out.data.decode("utf-8", "replace"),
        stderr=err.data.decode("utf-8", "replace"),
        truncated=bool(out.dropped or err.dropped),
        duration_seconds=duration,
        tier=plan.tier,
        detail=detail,
        cpu_seconds=status.cpu,
        python=plan.python_version or plan.python,
    )


def _stop(
    proc: subprocess.Popen[bytes],
    ask: bool,
    sel: selectors.BaseSelector,
    feeders: dict[int, Callable[[bytes], None]],
) -> None:
    """Below the namespace tier, ask the supervisor to stop the program first.

    It kills the program, then (as child subreaper) every descendant, even one
    that called setsid() and closed its descriptors, and exits; the harness
    kills the whole group afterwards whatever happened.
    """
    if not ask:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(proc.pid, signal.SIGUSR1)
    until = time.monotonic() + _STOP_GRACE_SECONDS
    while proc.poll() is None and time.monotonic() < until:
        for key, _ in sel.select(timeout=0.02):
            _read_some(key.fd, feeders, sel)


def _pump(
    proc: subprocess.Popen[bytes],
    sinks: dict[int, Callable[[bytes], None]],
    deadline: float,
    *,
    stop_first: bool = False,
) -> bool:
    """Read every stream until the launcher exits; kill it at ``deadline``.

    Returns whether the wall clock ran out. Never blocks on a pipe: once the
    launcher is gone, what is buffered is drained without waiting for writers
    (an escaped grandchild may hold the pipe open forever).
    """
    feeders = dict(sinks)
    for fd in feeders:
        os.set_blocking(fd, False)
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for fd in feeders:
            sel.register(fd, selectors.EVENT_READ)
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                _stop(proc, stop_first, sel, feeders)
                _kill_group(proc)
                # Unkillable (D state)? Give up waiting rather than hang.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=_KILL_GRACE_SECONDS)
                break
            for key, _ in sel.select(timeout=min(left, 0.05)):
                _read_some(key.fd, feeders, sel)
        # The launcher is gone: drain what is buffered, then stop.
        for fd in list(feeders):
            while fd in feeders and _read_some(fd, feeders, sel):
                pass
    if proc.returncode is not None and not timed_out:
        # Kill anything left in the group (a child that kept the group).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return timed_out


def _read_some(
    fd: int, feeders: dict[int, Callable[[bytes], None]], sel: selectors.BaseSelector
) -> bool:
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return False
    except OSError:
        chunk = b""
    if not chunk:
        sel.unregister(fd)
        del feeders[fd]
        return False
    feeders[fd](chunk)
    return True


def _classify(
    launcher_rc: int | None, status: _Status, timed_out: bool, limits: Limits
) -> tuple[Status, str]:
    if not status.ready:
        if status.setup_error:
            return "sandbox_error", status.setup_error
        if timed_out:
            return "sandbox_error", (
                f"the sandbox did not start within the {limits.wall_seconds:g} s wall limit"
            )
        return "sandbox_error", f"the sandbox failed to start (launcher exit status {launcher_rc})"
    if timed_out:
        return "timeout", f"wall-clock limit of {limits.wall_seconds:g} s exceeded"
    if status.test_code is None:
        return "killed", f"the sandbox supervisor died (exit status {launcher_rc})"
    if status.finished and status.test_code == 0 and launcher_rc == 0:
        return "pass", "every test statement ran and held"
    # A signal ends the run's story only for the process that ended first.
    ended = [("test process", status.test_code, status.test_cpu)]
    if status.program_first and status.program_code is not None:
        ended.insert(0, ("program", status.program_code, status.program_cpu))
    for who, code, cpu in ended:
        if code >= 0:
            continue
        sig = -code
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= limits.cpu_seconds):
            return "timeout", f"CPU limit of {limits.cpu_seconds} s exceeded"
        return "killed", f"the {who} was killed by signal {_signame(sig)}"
    if status.memory_error:
        return "oom", f"MemoryError at the {limits.memory_bytes} byte address-space limit"
    if status.failure:
        return "fail", status.failure
    return "fail", f"exit status {status.exit_code}"


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def _error(plan: LaunchPlan, started: float, detail: str) -> RunResult:
    return RunResult(
        status="sandbox_error",
        returncode=None,
        stdout="",
        stderr="",
        truncated=False,
        duration_seconds=time.monotonic() - started,
        tier=plan.tier,
        detail=detail,
        python=plan.python,
    )
