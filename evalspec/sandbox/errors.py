"""Exceptions of the code_exec sandbox."""

from __future__ import annotations

from evalspec.errors import EvalspecError


class SandboxError(EvalspecError):
    """Base class of the sandbox's own exceptions."""


class SandboxUnavailable(SandboxError):
    """The sandbox cannot be set up at the isolation tier that was asked for."""


class UnknownTierError(SandboxError, ValueError):
    """An isolation tier name that does not exist."""


class NoTestsError(SandboxError, ValueError):
    """``run_tests`` got no test programs: an empty suite must never count as a pass."""


class WeakIsolationWarning(RuntimeWarning):
    """The sandbox runs at a tier that leaves the machine exposed (root, rlimits only)."""


class CodeExecNotAllowed(EvalspecError):
    """Running model output was not opted into."""

    def __init__(self) -> None:
        super().__init__(
            "code_exec runs model output, which is untrusted code, on this machine; "
            "it is off unless you opt in: pass --allow-code-exec on the command line "
            "or allow_code_exec=True in the Python API"
        )


def require_opt_in(allowed: bool) -> None:
    """Raise :class:`CodeExecNotAllowed` unless the caller opted into running code."""
    if allowed is not True:
        raise CodeExecNotAllowed()
