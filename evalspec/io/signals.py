"""How the process ends on a signal: the unwinding exceptions, the handlers that
raise them, and the rules for worker processes.

Used by the ``evalspec`` command (:mod:`evalspec.cli.main` installs the handlers
first thing) and by the validation engine's worker pool, which must end with the
command however it is stopped. Outside the command (library use) nothing here is
installed, and :func:`children_end_with_the_command` does nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys

from evalspec.io.exitcodes import EXIT_INTERRUPTED

# Annotations only: importing typing costs every run milliseconds. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Iterator
    from types import FrameType
    from typing import Any
else:
    # The signal module's functions without its enums: `signal` imports enum (~2 ms
    # of every command's start). Its handlers come back as plain ints, so they are
    # compared with ==, never `is`.
    import _signal as signal

_TERMINATING = tuple(
    s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None
)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived; unwinds like KeyboardInterrupt (``finally`` blocks run).

    A BaseException, like KeyboardInterrupt, so ``except Exception`` does not swallow it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class OutputFailed(BaseException):
    """Standard output or standard error could not be written (other than a closed
    pipe); unwinds to :func:`run`, which exits 2.

    A BaseException, like :class:`Terminated`: the ``except OSError`` around an
    input's reads must not take it for a failure to read that input.
    """

    def __init__(self, stream: str, reason: str) -> None:
        super().__init__(stream, reason)
        self.stream = stream
        self.reason = reason


def _exit_now(signum: int, frame: FrameType | None) -> None:
    # A second signal while unwinding: no more Python, no traceback.
    os._exit(EXIT_INTERRUPTED if signum == signal.SIGINT else 128 + signum)


def harden() -> None:
    """From now on a signal ends the process at once with its code: no more Python."""
    for signum in (signal.SIGINT, *_TERMINATING):
        signal.signal(signum, _exit_now)


_OWNER: list[int] = []
"""The pid that installed the handlers: a forked worker inherits them before it can
reset them (:func:`in_worker`), and must not unwind the parent's way."""


def _in_a_fork() -> bool:
    return bool(_OWNER) and os.getpid() != _OWNER[0]


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _in_a_fork():
        return  # Ctrl-C is the parent's to handle
    harden()
    raise KeyboardInterrupt


def _on_terminate(signum: int, frame: FrameType | None) -> None:
    if _in_a_fork():
        os._exit(128 + signum)
    harden()
    raise Terminated(signum)


def _unraisable(info: Any) -> None:
    # The exception of a signal can land where Python cannot raise it (a weakref
    # callback of the import system, a __del__): it would be printed as "Exception
    # ignored" and lost, and the run would go on. End the run as the signal asks.
    if isinstance(info.exc_value, KeyboardInterrupt):
        with contextlib.suppress(OSError):
            os.write(2, b"evalspec: interrupted\n")
        os._exit(EXIT_INTERRUPTED)
    if isinstance(info.exc_value, Terminated):
        os._exit(128 + info.exc_value.signum)
    sys.__unraisablehook__(info)


def install() -> None:
    """Route SIGINT, SIGTERM and SIGHUP through the unwinding exceptions above.

    A signal the parent process set to be ignored (``nohup``) stays ignored.
    """
    _OWNER[:] = [os.getpid()]
    sys.unraisablehook = _unraisable
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        signal.signal(signal.SIGINT, _on_sigint)
    for signum in _TERMINATING:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, _on_terminate)


@contextlib.contextmanager
def children_end_with_the_command() -> Iterator[None]:
    """While worker processes run, a signal kills them and ends the command at once.

    Unwinding through a multiprocessing pool is not safe here: a SIGTERM sent to
    the whole process group (as CI runners send it) can kill a worker while it
    holds the result queue's lock, and the pool's clean-up then waits on that
    lock for ever. The workers hold nothing to clean up, so the command kills
    them and exits with the signal's code (130 for Ctrl-C, with its one line).
    Outside the command (library use, another thread) this does nothing.
    """
    import threading

    if (
        not _OWNER
        or os.getpid() != _OWNER[0]
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def end(signum: int, frame: FrameType | None) -> None:
        import multiprocessing

        for child in multiprocessing.active_children():
            with contextlib.suppress(Exception):
                child.kill()
        with contextlib.suppress(Exception, OutputFailed):
            sys.stdout.flush()
        if signum == signal.SIGINT:
            with contextlib.suppress(OSError):
                os.write(2, b"evalspec: interrupted\n")
            os._exit(EXIT_INTERRUPTED)
        os._exit(128 + signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, *_TERMINATING)}
    for signum, handler in previous.items():
        if handler != signal.SIG_IGN:
            signal.signal(signum, end)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def in_worker() -> None:
    """For worker processes: Ctrl-C is the parent's to handle; SIGTERM and SIGHUP
    end the worker at once, silently (a forked worker inherits the parent's handlers);
    on Linux the worker is killed when the parent dies, however it dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in _TERMINATING:
        signal.signal(signum, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        _die_with_parent()


def _die_with_parent() -> None:
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    # The parent may have died before the call above: then it never fires.
    if _OWNER and os.getppid() != _OWNER[0]:
        os._exit(128 + int(signal.SIGTERM))
