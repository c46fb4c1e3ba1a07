"""The harness side of the verdict protocol (the in-sandbox side is :mod:`.driver`).

The job (nonce, test program, comparison policy) reaches the driver on its
stdin, which only the supervisor reads, after the program process was forked
without it: the program never holds the tests, the expected values or the
nonce, and has no descriptor on which a status line could be written.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from typing import IO

#: ``RunResult.custom_types`` for the default policy: a test that compares,
#: truth-tests, hashes or iterates a value of a program-defined type fails.
REFUSED = "refused"
#: ``RunResult.custom_types`` under ``trust_custom_types=True``: such
#: operations are delegated to the program, which then decides their outcome.
TRUSTED = "trusted"

#: The driver waits for this line before it starts anything.
START = b"start\n"

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
