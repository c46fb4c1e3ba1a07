"""The code_exec sandbox: run untrusted model code with limits and verdicts.

Isolation model (read before trusting it)
-----------------------------------------
Every program (a task's extracted code followed by one test program) runs in a
freshly exec'd interpreter (``python -I -B``), never a fork of the harness,
with: a fresh temporary directory (mode 0700) as working directory and HOME,
removed afterwards; an environment built from scratch (minimal PATH, C.UTF-8,
BLAS/OpenMP thread counts 1; nothing of the parent's); RLIMIT_CPU, RLIMIT_AS,
RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC and RLIMIT_CORE=0 set inside that
interpreter before the code runs; ``no_new_privs``; its own session and
process group; a wall clock in the harness that kills the whole group; and a
cap on the captured stdout and stderr, read without ever blocking on a pipe.

On top of that, the tier in force (strongest first; :func:`probe_isolation`
finds it by running a trivial program under each, once per process):

``namespace``
    util-linux ``unshare`` puts the program in new user (when unprivileged),
    pid, network, mount, IPC and UTS namespaces, running as an unprivileged
    uid (``nobody`` when the harness is root). The network namespace has no
    usable interface, so every connection fails, including to 127.0.0.1. The
    driver is pid 1 of the pid namespace: when the program ends, everything
    it started dies with the namespace, setsid() or not. RLIMIT_NPROC binds
    (the uid is not root) and counts the namespace's tasks.
``uid-drop``
    (harness running as root) the program runs as ``nobody`` (65534), so
    RLIMIT_NPROC binds and files outside world-writable places are out of
    reach. The network is reachable. A supervisor process set as child
    subreaper kills descendants that escaped with setsid(); the harness also
    kills any process still holding the run's pipes. A program that both
    escapes and closes its inherited descriptors while killing its supervisor
    can survive. RLIMIT_NPROC counts every task of ``nobody`` on the machine,
    so parallel runs share that budget.
``rlimits-only``
    the limits and process-group handling above, nothing else. As root,
    RLIMIT_NPROC binds nothing (the kernel exempts uid 0), the program can
    write anywhere root can, and the network is reachable.

This is a resource governor and damage limiter for model output that is
buggy, greedy or sloppy; it is not a security boundary against a determined
attacker unless the namespace tier is in force, and even then it is not a
container or VM: the program still reads what ``nobody`` may read, can write
to world-writable directories such as /tmp (bounded by RLIMIT_FSIZE per file),
and talks to the host kernel directly. The tier is reported on every result.
The per-run nonce that makes a pass lives in the driver's memory, so it stops
``os._exit(0)``/``sys.exit(0)``/printing a fake marker, not a program that
deliberately digs through its own interpreter.

Running model output needs an explicit opt-in: see :func:`require_opt_in`.
"""

from __future__ import annotations

from evalspec.sandbox.errors import (
    CodeExecNotAllowed,
    NoTestsError,
    SandboxError,
    SandboxUnavailable,
    UnknownTierError,
    WeakIsolationWarning,
    require_opt_in,
)
from evalspec.sandbox.limits import Limits
from evalspec.sandbox.results import STATUSES, RunResult, Status, TaskResult
from evalspec.sandbox.runner import Sandbox
from evalspec.sandbox.tiers import TIERS, probe_isolation

__all__ = [
    "STATUSES",
    "TIERS",
    "CodeExecNotAllowed",
    "Limits",
    "NoTestsError",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "Status",
    "TaskResult",
    "UnknownTierError",
    "WeakIsolationWarning",
    "probe_isolation",
    "require_opt_in",
]
