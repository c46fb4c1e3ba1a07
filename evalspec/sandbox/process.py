"""Launch one sandboxed program and turn what happened into a :class:`RunResult`.

The harness side of the protocol documented in :mod:`evalspec.sandbox.driver`
(its status lines are read by :class:`evalspec.sandbox.verdict.StatusLines`).
Nothing here forks the harness: every run is a fork of a worker slot's
zygote (:mod:`evalspec.sandbox.slots`), an interpreter started from scratch
by :class:`subprocess.Popen` that never holds a job, or (for the namespace
tier of a harness that is not root) a freshly exec'd interpreter of its own;
the limits are applied inside the run before the untrusted code runs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import selectors
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs

import evalspec.sandbox.cgroups as cgroups
import evalspec.sandbox.interrupt as interrupt
import evalspec.sandbox.slots as slots
import evalspec.sandbox.uids as uids
import evalspec.sandbox.verdict as protocol
from evalspec.sandbox.driver import tasks_of
from evalspec.sandbox.limits import Limits
from evalspec.sandbox.removal import Leftovers, remove_tree
from evalspec.sandbox.results import RunResult, Status
from evalspec.sandbox.turns import Turns


@functools.cache
def _script(name: str) -> bytes:
    """The text of a script the sandbox runs (``driver.py``, ``jail.py``), read once."""
    return (Path(__file__).parent / name).read_bytes()


_SETUP_FAILED = 125
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
    ``per_run_uid`` leases each run a uid of its own (root only; see
    :mod:`evalspec.sandbox.uids`), which then is both ``run_as`` and
    ``owner``; ``jail`` starts the driver through :mod:`evalspec.sandbox.jail`
    (a private root inside the namespaces), with ``userns`` when that runs in
    a user namespace of its own (harness not root); ``binds`` are the host
    paths the jail shows read-only.
    """

    tier: str
    python: str
    prefix: tuple[str, ...] = ()
    mode: str = "plain"
    run_as: tuple[int, int] | None = None
    owner: tuple[int, int] | None = None
    shared_uid: bool = False
    python_version: str = ""
    per_run_uid: bool = False
    jail: bool = False
    userns: bool = False
    binds: tuple[str, ...] = ()
    slots: bool = True


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


def _uses_slot(plan: LaunchPlan) -> bool:
    """Whether runs of ``plan`` are forked by a worker slot's zygote.

    All but the namespace tier of a harness that is not root: that one needs
    ``unshare --user --map-root-user``'s uid map, which a fork of the
    harness's uid cannot write for itself after the fact here, so its runs
    start their interpreters afresh as before.
    """
    return plan.slots and not plan.userns


def _sources() -> dict[str, str]:
    """What a slot's zygote runs: its own text, the driver's and the jail's."""
    return {name: _script(f"{name}.py").decode("utf-8") for name in ("zygote", "driver", "jail")}


def _make_workdir(plan: LaunchPlan, base: str, source: str) -> str:
    """The run's cwd inside ``base``, with ``program.py`` and the driver.

    ``base`` stays the harness's (mode 0711: enterable, not listable) and holds
    the driver, so a program running as the same sandbox uid in a parallel run
    can neither find this run's directory in a listing nor swap its files.
    With a jail, ``base`` also holds the jail script and the (empty) mount
    point of the private root.
    """
    os.chmod(base, stat.S_IRWXU | stat.S_IXGRP | stat.S_IXOTH)
    # A slot's zygote already holds the driver and the jail: no script on disk.
    scripts = [] if _uses_slot(plan) else ["driver.py"]
    if plan.jail:
        scripts += [] if _uses_slot(plan) else ["jail.py"]
        os.mkdir(os.path.join(base, "root"), stat.S_IRWXU)
    for name in scripts:
        path = os.path.join(base, name)
        with open(path, "wb") as fh:
            fh.write(_script(name))
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
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


def _remove_workdir(path: str) -> Leftovers:
    """Remove the run's directory whatever the program left in it (never raises)."""
    return remove_tree(path)


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
    (With a uid of its own per run, every process of that uid is killed too.)
    """
    for _ in range(50):
        holders = _pipe_holders(inodes)
        if not holders:
            return
        for pid in holders:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


#: A run's launcher: a process of its own, or a fork of a slot's zygote.
Launched = subprocess.Popen[bytes] | slots.ZygoteRun


def _kill_group(proc: Launched) -> None:
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
    turns: Turns | None = None,
) -> RunResult:
    """Run the program ``source`` against the test program ``test`` under ``plan``.

    The test runs in its own process and reaches the program's names only
    through the driver's proxies (see :mod:`evalspec.sandbox.driver`); an
    empty ``test`` passes when the program runs to its end. Never raises for
    anything the program did; what it left behind is removed (and what could
    not be is named in the result's detail). With ``turns``, the run is
    prepared at once but its job is written (and its wall clock started) only
    once it has a turn, which it holds until its launcher ends.
    """
    started = time.monotonic()
    if interrupt.stopping():
        return _error(plan, started, "not started: the harness is stopping (SIGINT/SIGTERM)")
    nonce = secrets.token_hex(16)
    job = protocol.job(nonce, test, source, trust_custom_types=trust_custom_types)
    if plan.run_as is None and plan.owner is None and not plan.per_run_uid:
        protocol.guard_harness()
    if plan.prefix and not os.access(plan.prefix[0], os.X_OK):
        # The tier stays tied to the tool that defines it (and that Sandbox(unshare=...)
        # names), though a slot makes the namespaces itself with unshare(2).
        return _error(plan, started, f"cannot start the sandbox: no executable {plan.prefix[0]}")
    if not _uses_slot(plan):
        return _execute(plan, source, limits, job, nonce, started, trust_custom_types, None, turns)
    key = (plan.tier, plan.python, plan.per_run_uid, plan.jail)
    for attempt in range(2):
        try:
            with slots.slot(
                key, plan.python, dict(BASE_ENV), _sources, per_run_uid=plan.per_run_uid
            ) as held:
                return _execute(
                    plan, source, limits, job, nonce, started, trust_custom_types, held, turns
                )
        except uids.UidLeaseError as exc:
            return _error(plan, started, f"cannot lease a sandbox uid: {exc}")
        except (slots.SlotError, OSError) as exc:
            # A slot whose zygote died while idle (killed, or at rlimits-only by a
            # program of the same uid) forked nothing: once, a fresh slot does.
            if attempt == 0 and isinstance(exc, slots.SlotLost):
                continue
            return _error(plan, started, f"cannot start the sandbox: {exc}")
    raise AssertionError("not reached")


def _execute(
    plan: LaunchPlan,
    source: str,
    limits: Limits,
    job: bytes,
    nonce: str,
    started: float,
    trust_custom_types: bool,
    held: slots.Slot | None,
    turns: Turns | None = None,
) -> RunResult:
    """:func:`execute` with the run's slot (None: the run starts its own interpreters)."""
    lease: uids.Lease | None = held.lease if held is not None else None
    base: str | None = None
    group: cgroups.RunGroup | None = None
    result: RunResult | None = None
    try:
        # Each resource is recorded for cleanup before a stop may interrupt.
        with interrupt.shielded():
            if plan.per_run_uid:
                if lease is None:
                    try:
                        lease = uids.lease()
                    except (uids.UidLeaseError, OSError) as exc:
                        return _error(plan, started, f"cannot lease a sandbox uid: {exc}")
                ids = (lease.uid, lease.gid)
                plan = attrs.evolve(plan, owner=ids, run_as=None if plan.jail else ids)
            group = cgroups.make(limits.processes, limits.memory_bytes + limits.disk_bytes)
            try:
                base = _make_base(plan)
            except OSError as exc:
                return _error(plan, started, f"cannot make a temporary directory: {exc}")
        try:
            workdir = _make_workdir(plan, base, source)
        except OSError as exc:
            return _error(plan, started, f"cannot prepare the temporary directory: {exc}")
        result = _launch(
            plan, limits, base, workdir, job, nonce, started, lease, group, held, turns
        )
        result = attrs.evolve(result, custom_types=protocol.custom_types(trust_custom_types))
    finally:
        with interrupt.shielded():
            left = _clean_up(plan, base, lease, group, keep_lease=held is not None)
            if held is not None and (left or result is None or result.status == "sandbox_error"):
                # Not reused: closing it releases (and scrubs) its uid, and a
                # fault of the machine is not carried into the next run.
                held.broken = True
    if left:
        result = attrs.evolve(result, detail=f"{result.detail}; cleanup: {left.describe()}")
    return result


def _make_base(plan: LaunchPlan) -> str:
    """The run's own directory (0700, the harness's) in the temporary directory."""
    root = _temp_root(plan) or tempfile.gettempdir()
    for _ in range(100):
        path = os.path.join(root, f"evalspec-sandbox-{secrets.token_hex(6)}")
        try:
            os.mkdir(path, stat.S_IRWXU)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free name for a run's directory in {root}")


def _reachable_by_others(path: str) -> bool:
    """Whether a uid that is neither owner nor group can walk down to ``path``."""
    path = os.path.realpath(path)
    while True:
        try:
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def _temp_root(plan: LaunchPlan) -> str | None:
    """Where the run's directory goes: the temporary directory, if the run's uid can reach it.

    A dropped uid runs in the host's tree (no jail), so a private temporary
    directory (a 0700 ``$TMPDIR``) would make every run fail to start; /tmp
    is used then.
    """
    here = tempfile.gettempdir()
    if plan.run_as is None or plan.jail or _reachable_by_others(here):
        return None
    return "/tmp" if _reachable_by_others("/tmp") else None


def _clean_up(
    plan: LaunchPlan,
    base: str | None,
    lease: uids.Lease | None,
    group: cgroups.RunGroup | None,
    *,
    keep_lease: bool = False,
) -> Leftovers:
    """After the run: no process of it or its uid, none of its files, its uid free again
    (or, with ``keep_lease``, scrubbed and kept for the slot's next run).

    Never raises: a step that fails is named in what is returned, and the
    steps after it still run.
    """
    found: list[Leftovers] = []

    def step(action: Callable[[], Leftovers | object], what: str) -> object:
        try:
            outcome = action()
        except (OSError, ValueError) as exc:
            found.append(Leftovers(1, f"{what} failed ({exc})"))
            return None
        if isinstance(outcome, Leftovers) and outcome:
            found.append(outcome)
        return outcome

    # Every process of the run: when its groups are gone, none is left
    # anywhere, and the uid's /proc scan below is not needed.
    emptied = group is not None and step(group.remove, "removing the run's cgroups") is True
    if lease is not None:
        if not emptied:
            # First: nothing of the uid may change the tree while it is removed.
            step(lambda: uids.kill_uid(lease.uid), "killing the run's uid")
        if not plan.jail:  # in the jail it could write only its own tmpfs
            step(lambda: uids.remove_owned_files(lease.uid), "removing the uid's files")
    if base is not None:
        step(lambda: _remove_workdir(base), "removing the run's directory")
    if lease is not None and not keep_lease:
        step(lease.release, "releasing the run's uid")
    if not found:
        return Leftovers()
    return Leftovers(sum(f.count for f in found), found[0].example)


def _jail_spec(
    plan: LaunchPlan,
    limits: Limits,
    paths: tuple[str, str],
    status_fd: int,
    group: cgroups.RunGroup | None,
) -> dict[str, object]:
    """What :mod:`evalspec.sandbox.jail` builds: ``paths`` are the run's base and
    working directories; ``group`` the cgroups the jail enters (it may have been
    forked before the harness moved the launcher into them)."""
    base, workdir = paths
    uid, gid = plan.owner if plan.owner is not None and not plan.userns else (0, 0)
    return {
        "root": os.path.join(base, "root"),
        "base": base,
        "workdir": workdir,
        "binds": list(plan.binds),
        "disk": limits.disk_bytes,
        "uid": uid,
        "gid": gid,
        "userns": plan.userns,
        "status_fd": status_fd,
        "cgroups": group.procs_files() if group is not None else [],
    }


def _driver_args(plan: LaunchPlan, limits: Limits, status_fd: int) -> list[str]:
    """The driver's arguments after its script name (see :mod:`evalspec.sandbox.driver`)."""
    return [
        str(status_fd),
        plan.mode,
        str(limits.cpu_seconds),
        str(limits.memory_bytes),
        str(limits.file_size_bytes),
        str(limits.open_files),
        str(limits.processes),
        str(tasks_of(plan.owner[0]) if plan.shared_uid and plan.owner else 0),
    ]


def _launch(
    plan: LaunchPlan,
    limits: Limits,
    base: str,
    workdir: str,
    job: bytes,
    nonce: str,
    started: float,
    lease: uids.Lease | None = None,
    group: cgroups.RunGroup | None = None,
    held: slots.Slot | None = None,
    turns: Turns | None = None,
) -> RunResult:
    status_r, status_w = os.pipe()
    env = {**BASE_ENV, "HOME": workdir, "TMPDIR": workdir}
    paths = (base, workdir)
    proc: Launched
    # Shielded: a stop between starting the launcher and registering it
    # would leave a run nobody knows of (register() kills it if one came).
    with interrupt.shielded():
        try:
            if held is not None:
                proc = _fork_run(plan, limits, paths, env, (status_r, status_w), group, held)
            else:
                proc = _popen_run(plan, limits, paths, env, status_w, group)
        except (OSError, subprocess.SubprocessError, ValueError, slots.SlotError) as exc:
            os.close(status_r)
            os.close(status_w)
            if isinstance(exc, slots.SlotLost):
                raise  # nothing was forked: execute() tries a fresh slot
            return _error(plan, started, f"cannot start the sandbox: {exc}")
        os.close(status_w)
        interrupt.register(proc, lease.uid if lease is not None else None, group)
    try:
        return _follow(plan, limits, proc, status_r, job, nonce, started, group, turns)
    except BaseException:
        _kill_group(proc)  # an exception (Interrupted included) must not leave it running
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        raise
    finally:
        interrupt.unregister(proc)
        os.close(status_r)


def _popen_run(
    plan: LaunchPlan,
    limits: Limits,
    paths: tuple[str, str],
    env: dict[str, str],
    status_w: int,
    group: cgroups.RunGroup | None,
) -> subprocess.Popen[bytes]:
    """Start the run's own interpreters: ``PREFIX [PYTHON JAIL SPEC] PYTHON DRIVER ARGS``."""
    base, workdir = paths
    jail = []
    if plan.jail:
        spec = json.dumps(_jail_spec(plan, limits, paths, status_w, group))
        jail = [plan.python, "-I", "-B", os.path.join(base, "jail.py"), spec]
    driver = [plan.python, "-I", "-B", os.path.join(base, "driver.py")]
    argv = [*plan.prefix, *jail, *driver, *_driver_args(plan, limits, status_w)]
    user: dict[str, object] = {}
    if plan.run_as is not None:
        user = {"user": plan.run_as[0], "group": plan.run_as[1], "extra_groups": []}
    proc: subprocess.Popen[bytes] = subprocess.Popen(
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
    if group is not None:
        # Before the nonce is written: the driver starts nothing until it reads it.
        group.add(proc.pid)
    return proc


def _fork_run(
    plan: LaunchPlan,
    limits: Limits,
    paths: tuple[str, str],
    env: dict[str, str],
    status: tuple[int, int],
    group: cgroups.RunGroup | None,
    held: slots.Slot,
) -> slots.ZygoteRun:
    """Have the slot's zygote fork the run (it joins its cgroups before anything else)."""
    fd = slots.STATUS_FD
    request = {
        "cwd": paths[1],
        "env": env,
        "argv": ["driver", *_driver_args(plan, limits, fd)],
        "cgroups": group.procs_files() if group is not None else [],
        "ids": list(plan.run_as) if plan.run_as is not None else None,
        "jail": _jail_spec(plan, limits, paths, fd, None) if plan.jail else None,
    }
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    theirs = (stdin_r, stdout_w, stderr_w, status[1])
    try:
        return held.launch(request, theirs, (stdin_w, stdout_r, stderr_r))
    except BaseException:
        for end in (stdin_w, stdout_r, stderr_r):
            os.close(end)
        raise
    finally:
        for end in theirs[:3]:
            os.close(end)


def _follow(
    plan: LaunchPlan,
    limits: Limits,
    proc: Launched,
    status_r: int,
    job: bytes,
    nonce: str,
    started: float,
    group: cgroups.RunGroup | None = None,
    turns: Turns | None = None,
) -> RunResult:
    """Feed the job, read every stream until the run ends, and say what happened."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    inodes = {f"pipe:[{os.fstat(f).st_ino}]" for f in (proc.stdout.fileno(), proc.stderr.fileno())}
    inodes.add(f"pipe:[{os.fstat(status_r).st_ino}]")
    out, err = _Stream(limits.output_bytes), _Stream(limits.output_bytes)
    status = protocol.StatusLines(nonce)
    sinks: dict[int, Callable[[bytes], None]] = {
        proc.stdout.fileno(): out.feed,
        proc.stderr.fileno(): err.feed,
        status_r: status.feed,
    }
    # The supervisor starts nothing of the program before it reads the job. No
    # turn means the harness is stopping: the job is never written, and _pump
    # ends the run (a sandbox_error, below).
    turn = turns.take() if turns is not None else False
    try:
        if turns is None or turn:
            started = time.monotonic() if turn else started  # the run's wall clock
            protocol.feed(proc.stdin, job)
        else:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        deadline = started + limits.wall_seconds
        timed_out = _pump(proc, sinks, deadline, stop_first=plan.mode != "ns")
    finally:
        if turn:
            assert turns is not None
            turns.give()
    proc.stdout.close()
    proc.stderr.close()
    if plan.mode != "ns" and group is None:
        # (With a cgroup, its removal after the run kills every one of them.)
        _sweep(inodes)
    duration = time.monotonic() - started
    verdict, detail = _classify(proc.returncode, status, timed_out, limits)
    if verdict == "killed" and group is not None and group.out_of_memory():
        budget = limits.memory_bytes + limits.disk_bytes
        verdict = "oom"
        detail = f"the run's {budget} bytes of memory (its tmpfs included) ran out"
    if interrupt.stopping():
        verdict, detail = "sandbox_error", "ended early: the harness is stopping (SIGINT/SIGTERM)"
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
    proc: Launched,
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
    proc: Launched,
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
        if isinstance(proc, slots.ZygoteRun):
            # Its end is a message from the zygote (poll() reads it): wake for it.
            sel.register(proc.exit_fd, selectors.EVENT_READ)
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if interrupt.stopping():
                _kill_group(proc)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=_KILL_GRACE_SECONDS)
                break
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
    if fd not in feeders:
        return False  # a slot's exit notice: the caller's poll() reads it
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
    launcher_rc: int | None, status: protocol.StatusLines, timed_out: bool, limits: Limits
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
