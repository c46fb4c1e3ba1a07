"""The harness side of the verdict protocol (the in-sandbox side is :mod:`.driver`).

The job (nonce, test program, comparison policy) reaches the driver on its
stdin, which only the supervisor reads, after the program process was forked
without it: the program never holds the tests, the expected values or the
nonce, and has no descriptor on which a status line could be written. What
the driver's processes report on the status descriptor is read back by
:class:`StatusLines`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from typing import IO

import attrs

#: ``RunResult.custom_types`` for the default policy: a test that compares,
#: truth-tests, hashes or iterates a value of a program-defined type fails.
REFUSED = "refused"
#: ``RunResult.custom_types`` under ``trust_custom_types=True``: such
#: operations are delegated to the program, which then decides their outcome.
TRUSTED = "trusted"

#: The driver waits for this line before it starts anything.
START = b"start\n"

#: Bytes of status lines parsed per run; past them a flood is ignored (the run
#: cannot pass: its "P <nonce>" line is never seen).
STATUS_CAP = 64 * 1024

# Below a pipe's smallest buffer a write never blocks; above it a thread
# writes, so a driver that never reads cannot stall the harness.
_INLINE_BYTES = 4096


def job(nonce: str, test: str, program: str, *, trust_custom_types: bool) -> bytes:
    """The driver's stdin: what only the supervisor and the test process see.

    ``program`` is there for the names it imports (the tests get their own
    pristine objects for those); it is no secret, the program process has it.
    """
    document = {
        "nonce": nonce,
        "test": test,
        "program": program,
        "trust_custom_types": trust_custom_types,
    }
    # ensure_ascii: lone surrogates in a test reach the driver (and fail to
    # compile there, as the test's own error) instead of failing here. The
    # first line lets the driver start (and fork the program) before it reads
    # the rest, so nothing runs before the harness writes stdin.
    return START + json.dumps(document, ensure_ascii=True).encode("ascii")


def custom_types(trusted: bool) -> str:
    """The policy name every result carries."""
    return TRUSTED if trusted else REFUSED


def feed(stdin: IO[bytes], data: bytes) -> None:
    """Write ``data`` to the driver's stdin and close it, never blocking the caller."""

    def write() -> None:
        with contextlib.suppress(OSError, ValueError):
            stdin.write(data)
        with contextlib.suppress(OSError, ValueError):
            stdin.close()

    if len(data) <= _INLINE_BYTES:
        write()
    else:
        threading.Thread(target=write, name="evalspec-sandbox-job", daemon=True).start()


@functools.cache
def guard_harness() -> None:
    """Make this (harness) process non-dumpable, once.

    Where the program runs under the harness's own uid (rlimits-only), a
    dumpable harness would let it read the harness's memory and reopen its
    pipes through /proc (nonces, other runs' tests). Non-dumpable, only
    CAP_SYS_PTRACE can, and the driver drops every capability of the program.
    """
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE


@attrs.define
class StatusLines:
    """Parses the status lines of the driver's supervisor and test process (their
    grammar is in :mod:`evalspec.sandbox.driver`).

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
        if self.seen > STATUS_CAP:
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
