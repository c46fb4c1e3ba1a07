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
    from collections.abc import Callable, Iterator
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


_HANDLED = [0]
"""How many times the unwinding handlers have run (read by the kicker thread)."""


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _in_a_fork():
        return  # Ctrl-C is the parent's to handle
    _HANDLED[0] += 1
    harden()
    raise KeyboardInterrupt


def _on_terminate(signum: int, frame: FrameType | None) -> None:
    if _in_a_fork():
        os._exit(128 + signum)
    _HANDLED[0] += 1
    harden()
    raise Terminated(signum)


# A Python signal handler runs in the main thread between two bytecodes. A signal
# that lands after the last check and before a blocking system call (a read of a
# pipe or FIFO whose writer stays open and silent), or that the kernel delivers to
# another thread, interrupts nothing: the main thread sleeps in the call, and the
# handler waits with it, for ever (measured: 1 run in 60-100 of a Ctrl-C right after
# `validate FIFO` opened its input). So the handlers' C side also writes each
# signal's number to a wake-up pipe (signal.set_wakeup_fd). A thread reads it and,
# while the handler has not run, interrupts the main thread with _KICK, whose own
# handler does nothing: the call fails with EINTR and Python runs the waiting handler
# before it would retry (PEP 475).
_KICK = getattr(signal, "SIGURG", None)  # ignored by default, sent by nothing else here
_KICK_EVERY = 0.02
_KICK_FOR = 2.0


def _no_op(signum: int, frame: FrameType | None) -> None:
    pass


def _kicker(wake: int, main: int, kick: int, routed: frozenset[int]) -> None:
    while True:
        before = _HANDLED[0]
        try:
            data = os.read(wake, 64)
        except OSError:
            return
        if not data:
            return
        if routed.isdisjoint(data):
            continue  # a kick's own byte, or a signal nothing here unwinds for
        import time

        for _ in range(int(_KICK_FOR / _KICK_EVERY)):
            time.sleep(_KICK_EVERY)
            if _HANDLED[0] != before:
                break
            try:
                signal.pthread_kill(main, kick)
            except OSError:  # the main thread is gone: the process is ending
                return


def _arm_kicker() -> None:
    kick = _KICK
    if kick is None or not hasattr(signal, "pthread_kill"):
        return  # not POSIX: no blocking read is interrupted by a signal there anyway
    import _thread

    wake, poke = os.pipe()
    os.set_blocking(poke, False)
    try:
        previous = signal.set_wakeup_fd(poke, warn_on_full_buffer=False)
    except ValueError:  # not the main thread: no handler of ours runs here either
        os.close(wake)
        os.close(poke)
        return
    if previous != -1:  # the embedding program owns the wake-up pipe: leave it
        signal.set_wakeup_fd(previous)
        os.close(wake)
        os.close(poke)
        return
    signal.signal(kick, _no_op)
    routed = frozenset(int(s) for s in (signal.SIGINT, *_TERMINATING))
    _thread.start_new_thread(_kicker, (wake, _thread.get_ident(), int(kick), routed))


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
    _arm_kicker()


@contextlib.contextmanager
def children_end_with_the_command(clean_up: Callable[[], object] | None = None) -> Iterator[None]:
    """While worker processes run, a signal kills them and ends the command at once
    (after ``clean_up()``, if given, once the workers are gone).

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

        children = multiprocessing.active_children()
        for child in children:
            with contextlib.suppress(Exception):
                child.kill()
        if clean_up is not None:
            # Only once no worker can still write where clean_up removes.
            for child in children:
                with contextlib.suppress(Exception):
                    child.join(1)
            with contextlib.suppress(Exception):
                clean_up()
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
    # The parent's wake-up pipe is the parent's: a worker's signals must not kick it.
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
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
