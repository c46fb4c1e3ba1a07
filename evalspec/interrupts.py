"""How the ``evalspec`` command ends when it is interrupted or its output goes away.

The rules (README, "Limits and untrusted input"):

- **Ctrl-C (SIGINT)** at any moment after the interpreter has started,
  start-up included, ends the run with exit code 130 and the one line
  ``evalspec: interrupted``, never a traceback. Temp files are removed on
  the way out (the exception unwinds ``finally`` blocks); a second Ctrl-C
  during that clean-up exits 130 at once.
- **SIGTERM and SIGHUP** unwind the same way (so ``manifest fetch`` removes
  its temp file) and exit silently with 128 + the signal number (143, 129).
  Worker processes of ``--jobs`` take the default action: they end at once,
  silently.
- **A closed output pipe** (``evalspec validate big.jsonl | head -1``) does
  not stop the run and is never blamed on an input file: the rest of the
  output is discarded and the run finishes, so the exit code still says
  whether problems were found (1) or an input could not be read (2). A run
  that found nothing wrong but could not deliver all of its output exits
  141, as a program killed by SIGPIPE does.
- **Output that cannot be written** for any other reason (a full disk,
  ``> /dev/full``, an I/O error, a standard output closed with ``>&-``) ends
  the run at once with exit code 2 and one line
  ``evalspec: error: cannot write to standard output: REASON``
  (on standard error, if that still works), never a traceback, and never
  blamed on an input file: a verdict that cannot be delivered is not a verdict.

This module is the command's entry point (``evalspec = evalspec.interrupts:run``)
so the handlers are in place before the rest of evalspec is imported.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys

from evalspec.exitcodes import EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED, EXIT_USAGE

# Annotations only: importing typing costs every run milliseconds. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType
    from typing import Any, TextIO

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


def _harden() -> None:
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
    _harden()
    raise KeyboardInterrupt


def _on_terminate(signum: int, frame: FrameType | None) -> None:
    if _in_a_fork():
        os._exit(128 + signum)
    _harden()
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
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _on_sigint)
    for signum in _TERMINATING:
        if signal.getsignal(signum) is not signal.SIG_IGN:
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
        if handler is not signal.SIG_IGN:
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


class _OutputGuard:
    """A text stream that turns a closed pipe into "discard the rest" instead of an error."""

    def __init__(self, stream: TextIO, fd: int, name: str) -> None:
        self._stream = stream
        self._fd = fd
        self._name = name
        self.closed_early = False

    def _closed(self) -> None:
        self.closed_early = True
        # Send what is still buffered, and all later output, to /dev/null: the
        # buffered bytes would otherwise fail again at every flush.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._fd)
            finally:
                os.close(devnull)
        except OSError:
            pass

    def _guarded(self, call: Callable[[], Any], default: Any) -> Any:
        if self.closed_early:
            try:
                return call()
            except OSError:
                return default
        try:
            return call()
        except OSError as exc:
            self._closed()
            if exc.errno in (errno.EPIPE, errno.EINVAL) or isinstance(exc, BrokenPipeError):
                return default
            raise OutputFailed(self._name, exc.strerror or str(exc)) from None

    def write(self, text: str) -> int:
        result: int = self._guarded(lambda: self._stream.write(text), len(text))
        return result

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._guarded(self._stream.flush, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ClosedOutput(io.TextIOBase):
    """Standard output when the command was started without one (``evalspec ... >&-``).

    Python then sets ``sys.stdout`` to ``None``, and ``print`` silently drops every
    line: a clean run would exit 0 with its verdict never seen, and the commands that
    write to ``sys.stdout`` directly would end with a traceback. The first write is an
    :class:`OutputFailed`, as on a full disk; a run that writes nothing ends as usual.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    def write(self, text: str) -> int:
        raise OutputFailed(self._name, "it is closed")


def guard_output() -> tuple[_OutputGuard | None, _OutputGuard | None]:
    """Wrap ``sys.stdout`` and ``sys.stderr`` (when they are real files) in guards;
    a standard output that is closed becomes a :class:`_ClosedOutput`."""
    if sys.stdout is None:
        sys.stdout = _ClosedOutput("standard output")
    guards: list[_OutputGuard | None] = []
    for name, shown in (("stdout", "standard output"), ("stderr", "standard error")):
        stream = getattr(sys, name)
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            guards.append(None)
            continue
        guard = _OutputGuard(stream, fd, shown)
        setattr(sys, name, guard)
        guards.append(guard)
    return guards[0], guards[1]


def final_code(code: int, stdout: _OutputGuard | None) -> int:
    """The exit code once the output is flushed (see the module's rules)."""
    if stdout is not None:
        stdout.flush()
        if stdout.closed_early and code == 0:
            return EXIT_OUTPUT_CLOSED
    return code


def run() -> None:
    """The ``evalspec`` command: :func:`evalspec.cli.main` under the rules above."""
    install()
    code = EXIT_INTERRUPTED
    try:
        out, _err = guard_output()
        try:
            from evalspec.cli import main

            code = main()
        except BrokenPipeError:  # a write that bypassed the guard
            code = EXIT_OUTPUT_CLOSED
        code = final_code(code, out)
    except OutputFailed as exc:
        _harden()
        code = EXIT_USAGE
        with contextlib.suppress(OSError, OutputFailed):
            print(f"evalspec: error: cannot write to {exc.stream}: {exc.reason}", file=sys.stderr)
            sys.stderr.flush()
    except KeyboardInterrupt:
        _harden()
        code = EXIT_INTERRUPTED
        with contextlib.suppress(OSError, OutputFailed):
            print("evalspec: interrupted", file=sys.stderr)
    except Terminated as exc:
        _harden()
        code = 128 + exc.signum
    # From here on a signal exits at once with its code: no traceback from shutdown.
    _harden()
    sys.exit(code)
