"""The in-sandbox driver, run as ``python -I -B DRIVER.py ARGS`` (the run's nonce on stdin).

It must stay self-contained (stdlib only, no evalspec import) because it runs
in an interpreter that may not see evalspec at all (a dropped uid may not be
able to read the harness's site-packages). It is never imported by the harness
for its behaviour, only read as text by :mod:`evalspec.sandbox.process`.

Layout of one run::

    supervisor (this script, trusted; pid 1 of the pid namespace in "ns" mode)
      reads the run's nonce from stdin, forks:
      └── program process: applies rlimits and no_new_privs, announces "R",
          runs program.py (the extracted code + one test program), and only
          when it ran to its end writes "P <nonce>" on the status fd.
      after the program exits, the supervisor kills and reaps every remaining
      descendant, writes "W <exit code> <cpu seconds>" and exits.

argv: STATUS_FD MODE CPU AS FSIZE NOFILE NPROC NPROC_BASE, MODE in {"ns", "plain"};
NPROC_BASE is the harness's count of the uid's tasks where /proc here cannot
see them all (a pid namespace without its own user namespace).
Status lines are ASCII on STATUS_FD; anything else there is ignored by the
harness. Exit status 125 with an "S <why>" line means the sandbox could not
set itself up (never a test failure).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SETUP_FAILED = 125
PROGRAM = "program.py"


def _emit(fd: int, line: str) -> None:
    # A line that cannot be written reads as "did not happen" to the harness.
    with contextlib.suppress(OSError):
        os.write(fd, line.encode("ascii", "replace") + b"\n")


def _prctl(option: int, value: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")


def _tasks_of(uid: int) -> int:
    """Threads (tasks) now owned by real ``uid``: RLIMIT_NPROC counts them all."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1 0").split()[0]) == uid:
            total += int(fields.get("Threads", "1").strip())
    return total


def _set_limits(cpu: int, address: int, fsize: int, nofile: int, nproc: int, base: int) -> None:
    import resource

    wanted = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, fsize),
        (resource.RLIMIT_NOFILE, nofile),
        (resource.RLIMIT_AS, address),
        # RLIMIT_NPROC counts every task of the real uid, so budget on top of
        # what that uid already runs instead of an absolute number.
        (resource.RLIMIT_NPROC, max(base, _tasks_of(os.getuid())) + nproc),
    ]
    for which, soft in wanted:
        _, hard = resource.getrlimit(which)
        # Never ask above the inherited hard limit (that raises); clamp down.
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        # CPU: the soft limit sends SIGXCPU, the hard one SIGKILL a second later.
        new_hard = soft + 1 if which == resource.RLIMIT_CPU else soft
        if hard != resource.RLIM_INFINITY:
            new_hard = min(new_hard, hard)
        resource.setrlimit(which, (soft, new_hard))


def _run_program(fd: int, nonce: str, limits: list[int]) -> None:
    """Body of the forked program process; ends the process, never returns."""
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        path = os.path.join(os.getcwd(), PROGRAM)
        with open(path, "rb") as fh:
            source = fh.read()
        import builtins
        import traceback

        _set_limits(*limits)
    except BaseException as exc:  # anything here is the sandbox's fault
        _emit(fd, f"S program setup failed: {type(exc).__name__}: {exc}")
        os._exit(SETUP_FAILED)
    _emit(fd, "R")
    sys.argv = [path]
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    try:
        # Compiling is part of the program: a syntax error is a failed test.
        exec(compile(source, path, "exec"), namespace)
    except SystemExit:
        raise  # the program chose its exit status; no nonce, so never a pass
    except BaseException as exc:
        if isinstance(exc, MemoryError):
            _emit(fd, "M")
        # Start the traceback at the program, not at this driver's frame.
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb else None)
        raise SystemExit(1) from None
    sys.stdout.flush()
    sys.stderr.flush()
    _emit(fd, "P " + nonce)
    raise SystemExit(0)


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
        if stat[stat.rfind(")") + 2 :].split()[1] == me:
            found.append(int(name))
    return found


def _reap_all() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _kill_descendants(mode: str) -> None:
    if mode == "ns":
        # pid 1 of the namespace: kill(-1) reaches every other process in it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        _reap_all()
        return
    # Child subreaper: orphans of the program were re-parented to us, so
    # killing our children until none is left removes every descendant,
    # including ones that called setsid().
    for _ in range(10_000):
        children = _children()
        if not children:
            return
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap_all()


_program: list[int] = []
_stop: list[bool] = []


def _on_stop(_signum: int, _frame: object) -> None:
    """SIGUSR1 from the harness at the wall clock: kill the program, then clean up.

    Letting the supervisor do it (instead of the harness killing the whole
    group at once) keeps the subreaper alive to kill escaped descendants.
    """
    _stop.append(True)
    for pid in _program:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def main(argv: list[str]) -> None:
    fd = int(argv[1])
    mode = argv[2]
    limits = [int(x) for x in argv[3:9]]
    try:
        nonce = sys.stdin.readline().strip()
        if len(nonce) < 16:
            raise ValueError("no nonce on stdin")
        # Not dumpable: other processes of the same uid (parallel runs) can
        # neither ptrace us nor read our memory, fds or cwd through /proc.
        _prctl(PR_SET_DUMPABLE, 0)
        if mode == "ns":
            if os.getpid() != 1:
                raise RuntimeError(f"expected pid 1 in a new pid namespace, got {os.getpid()}")
        else:
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
            signal.signal(signal.SIGUSR1, _on_stop)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except BaseException as exc:
        _emit(fd, f"S supervisor setup failed: {type(exc).__name__}: {exc}")
        os._exit(SETUP_FAILED)
    if pid == 0:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        _run_program(fd, nonce, limits)
    _program.append(pid)
    if _stop:
        _on_stop(signal.SIGUSR1, None)
    while True:
        try:
            done, status, usage = os.wait4(-1, 0)
        except InterruptedError:
            continue
        if done == pid:
            break
    code = os.waitstatus_to_exitcode(status)
    _kill_descendants(mode)
    _emit(fd, f"W {code} {usage.ru_utime + usage.ru_stime:.3f}")
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main(sys.argv)
