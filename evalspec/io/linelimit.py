"""The longest line evalspec reads from a JSONL file, so memory stays bounded.

A line longer than :func:`max_line_bytes` (64 MiB by default;
``EVALSPEC_MAX_LINE_BYTES`` changes it) is reported as ``invalid_json`` and
ends the reading of that file: a file without line breaks (``/dev/zero``,
a corrupted upload) would otherwise be read into memory whole, or forever.
At most the limit plus one read buffer is held at a time.
"""

from __future__ import annotations

import os

# Not `from typing import ...` up front: it costs the warm `evalspec validate`
# milliseconds, and these names are annotations. Type checkers treat any name
# TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import IO

MAX_LINE_ENV = "EVALSPEC_MAX_LINE_BYTES"
DEFAULT_MAX_LINE_BYTES = 64 << 20
"""64 MiB: far above any real task line, well below the memory of a CI runner."""

_SHOWN_BYTES = 80


def max_line_bytes() -> int:
    """The limit in force: ``EVALSPEC_MAX_LINE_BYTES`` when it is a positive integer."""
    raw = os.environ.get(MAX_LINE_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return DEFAULT_MAX_LINE_BYTES


class OverlongLine(bytes):
    """Stands for a line over the limit: its first bytes only (the rest was never kept)."""


def bounded_lines(stream: IO[bytes], limit: int | None = None) -> Iterator[bytes]:
    """The ``\\n``-terminated lines of ``stream``; an :class:`OverlongLine` ends them."""
    limit = max_line_bytes() if limit is None else limit
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith(b"\n"):
            yield OverlongLine(raw[:_SHOWN_BYTES])
            return
        yield raw


def overlong_message(limit: int | None = None) -> str:
    limit = max_line_bytes() if limit is None else limit
    return (
        f"the line is longer than the maximum of {limit} bytes (set {MAX_LINE_ENV} to "
        "raise it); the rest of the file is not read"
    )
