"""The code_exec sandbox: run untrusted model code with limits and verdicts.

Isolation model (read before trusting it)
-----------------------------------------
Every program (a task's extracted code followed by one test program) runs in a
fresh fork of its worker slot's zygote (:mod:`evalspec.sandbox.slots`: an
interpreter exec'd from scratch as ``python -I -B`` that never holds a job or
runs a program; never a fork of the harness), with: a fresh temporary
directory (mode 0700) as working directory and HOME, removed afterwards; an
environment built from scratch (minimal PATH, C.UTF-8, BLAS/OpenMP thread
counts 1; nothing of the parent's); RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE,
RLIMIT_NOFILE, RLIMIT_NPROC and RLIMIT_CORE=0 set inside that
interpreter before the code runs; ``no_new_privs``; not dumpable (another
process of the same uid can neither ptrace it nor read it through /proc); its
own session and process group (no controlling terminal, so no TIOCSTI); a
wall clock in the harness that kills the whole group; and a cap on the
captured stdout and stderr, read without ever blocking on a pipe. Each run's
directory sits in a harness-owned, non-listable (0711) directory, so parallel
runs under one uid cannot find each other's files.

On top of that, the tier in force (strongest first; :func:`probe_isolation`
finds it by running a trivial program under each, once per process):

``namespace``
    util-linux ``unshare`` makes new mount, pid, network, IPC and UTS
    namespaces (and a user namespace when the harness is not root), and
    :mod:`evalspec.sandbox.jail` builds a private root there: read-only
    binds of the system directories and the interpreter, one tmpfs of
    ``Limits.disk_bytes`` for the working directory, /tmp and /dev/shm, a
    fresh /proc and a minimal /dev, entered by ``chroot`` (which also makes
    the kernel refuse nested user namespaces). No network (127.0.0.1
    included), no host Unix socket, nothing written survives the run. As
    root the program runs as a uid of its own (:mod:`evalspec.sandbox.uids`);
    otherwise as uid 0 of its user namespace with no capabilities. The
    driver is pid 1 of the pid namespace: everything the program started
    dies with it, setsid() or not.
``uid-drop``
    (harness running as root) the program runs as a uid of its own, leased
    for the run from a range no account uses, so RLIMIT_NPROC and signals
    are the run's own (parallel runs cannot starve or kill each other) and
    files outside world-writable places are out of reach. The network is
    reachable. The supervisor is a child subreaper; after the run every
    process of the uid is killed and what it left in /tmp, /var/tmp,
    /dev/shm and System V IPC is removed.
``rlimits-only``
    the limits, supervisor and process-group handling above, nothing else.
    Run by a non-root user, RLIMIT_NPROC binds (budgeted on top of what that
    user already runs). As root it binds nothing (the kernel exempts uid 0),
    so a fork bomb runs until the wall clock, the program can write anywhere
    root can, and the network is reachable; a :class:`WeakIsolationWarning`
    says so when such a sandbox is made, and a root harness uses it only when
    asked for by name (``minimum_tier="rlimits-only"``): by default it refuses.

The interpreter is the harness's own (``sys.executable``) where the sandbox
uid can run it; where it cannot (a Python under a 0700 home such as pyenv's in
/root), a same ``major.minor`` system interpreter is used. The probe checks
the version, and every result names the interpreter and the version it saw.

This is a resource governor and damage limiter for model output that is
buggy, greedy or sloppy; it is not a security boundary against a determined
attacker unless the namespace tier is in force, and even then it is not a
container or VM: the program still reads what its uid may read, can write
to world-writable directories below the namespace tier (bounded by
RLIMIT_FSIZE per file, removed afterwards), and talks to the host kernel
directly. The tier is reported on every result; docs/sandbox.md is the
threat model, with the test that shows each claim.

Verdicts are decided outside the program's process (see
:mod:`evalspec.sandbox.driver` and docs/sandbox.md ("Verdicts")): the program runs
in one process that never holds the tests, the expected values or the
nonce, and has no descriptor to the harness; the test statements run in a
second, trusted process with pristine builtins, calling the program's names
through proxies whose arguments and results cross as plain data, so every
comparison is decided there with built-in semantics. A value of a
program-defined type in a comparison or truth test fails the run unless the
sandbox was made with ``trust_custom_types=True``.

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
