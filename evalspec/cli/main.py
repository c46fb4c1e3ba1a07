"""How the ``evalspec`` command ends when it is interrupted or its output goes away.

The rules (docs/limits.md, "Signals and pipes"):

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

This module is the command's entry point (``evalspec = evalspec.cli.main:run``)
so the handlers are in place before the rest of evalspec is imported.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import io
import os
import sys

from evalspec.io.exitcodes import EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED, EXIT_USAGE
from evalspec.io.signals import (
    OutputFailed,
    Terminated,
    harden,
    install,
)

# Annotations only: importing typing costs every run milliseconds. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO


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
            return self._failed(exc, default)

    def _failed(self, exc: OSError, default: Any) -> Any:
        self._closed()
        if exc.errno in (errno.EPIPE, errno.EINVAL) or isinstance(exc, BrokenPipeError):
            return default
        raise OutputFailed(self._name, exc.strerror or str(exc)) from None

    def write(self, text: str) -> int:
        # _guarded's rules, written out: a million-error run calls this once an error.
        result: int
        if self.closed_early:
            result = self._guarded(lambda: self._stream.write(text), len(text))
            return result
        try:
            result = self._stream.write(text)
        except OSError as exc:
            result = self._failed(exc, len(text))
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
    """The ``evalspec`` command: :func:`evalspec.cli.dispatch.main` under the rules above."""
    install()
    code = EXIT_INTERRUPTED
    try:
        out, _err = guard_output()
        try:
            from evalspec.cli.dispatch import main

            code = main()
        except BrokenPipeError:  # a write that bypassed the guard
            code = EXIT_OUTPUT_CLOSED
        code = final_code(code, out)
    except OutputFailed as exc:
        harden()
        code = EXIT_USAGE
        with contextlib.suppress(OSError, OutputFailed):
            print(f"evalspec: error: cannot write to {exc.stream}: {exc.reason}", file=sys.stderr)
            sys.stderr.flush()
    except KeyboardInterrupt:
        harden()
        code = EXIT_INTERRUPTED
        with contextlib.suppress(OSError, OutputFailed):
            print("evalspec: interrupted", file=sys.stderr)
    except Terminated as exc:
        harden()
        code = 128 + exc.signum
    # From here on a signal exits at once with its code: no traceback from shutdown.
    harden()
    _forget_handled_interrupt()
    # The interpreter's shutdown ends with a full pass of the cyclic collector over
    # every object the run made (the modules' functions and classes above all):
    # ~2 ms of a warm `evalspec validate` (issue 25). Frozen objects are left out of
    # it; they are freed with the process, as they would have been. (The output is
    # flushed, the run's files are closed by their `with` blocks, and atexit
    # handlers still run.)
    gc.freeze()
    sys.exit(code)


def _forget_handled_interrupt() -> None:
    """Stop CPython from re-killing the process with SIGINT after we handled Ctrl-C.

    CPython records "a KeyboardInterrupt left this code" whenever one escapes an
    ``exec``/``eval`` of a *string* (dataclasses and namedtuple build their methods
    so, at import time), even when an outer ``except`` then handles it. Under
    ``python -m evalspec`` the interpreter checks that record at exit and kills
    itself with SIGINT, so the caller sees "killed by SIGINT" instead of our 130
    (the one line was printed; only the status was wrong). Every evaluation of a
    string clears the record first, and ``pass`` cannot set it again.
    """
    exec("pass")
