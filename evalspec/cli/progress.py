"""A one-line progress indicator on a terminal's stderr, for long files."""

from __future__ import annotations

import time

from evalspec.io.wording import one_line

# Annotations only: typing costs the warm `evalspec validate` milliseconds.
# Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Protocol

    class _Counts(Protocol):
        total: int
        bytes_done: int
        size: int


MIN_BYTES = 32 << 20
"""Files smaller than this validate too fast to need a progress line."""

_EVERY = 0.2  # seconds between redraws


class Progress:
    """Redraws ``PATH: 42% (123456 tasks)`` in place; silent when not on a terminal."""

    def __init__(self, stream: IO[str] | None, label: str) -> None:
        self._stream = stream
        # A file name may hold a line break or an escape sequence: shown escaped.
        self._label = one_line(label)
        self._width = 0
        self._last = 0.0

    @classmethod
    def for_stream(cls, stream: IO[str], label: str) -> Progress:
        """A progress line on ``stream`` only if it is a terminal."""
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):  # a closed or odd stream
            tty = False
        return cls(stream if tty else None, label)

    def update(self, counts: _Counts) -> None:
        """Redraw (at most every 0.2 s) from the running counts."""
        if self._stream is None or counts.size < MIN_BYTES:
            return
        now = time.monotonic()
        if now - self._last < _EVERY:
            return
        self._last = now
        pct = 100 * counts.bytes_done // max(counts.size, 1)
        text = f"{self._label}: {pct}% ({counts.total} tasks)"
        pad = " " * max(0, self._width - len(text))
        self._stream.write(f"\r{text}{pad}")
        self._stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        """Erase the progress line (before other output or at the end)."""
        if self._stream is not None and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
