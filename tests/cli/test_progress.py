"""The progress line appears only on a terminal, only for big files, and erases itself."""

from __future__ import annotations

import io

from evalspec.cli.progress import MIN_BYTES, Progress
from evalspec.validation.engine import Tally


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_and_clears() -> None:
    stream = _Terminal()
    progress = Progress.for_stream(stream, "big.jsonl")
    progress.update(Tally(total=1234, bytes_done=MIN_BYTES, size=2 * MIN_BYTES))
    drawn = stream.getvalue()
    assert drawn == "\rbig.jsonl: 50% (1234 tasks)"
    progress.clear()
    assert stream.getvalue() == drawn + "\r" + " " * (len(drawn) - 1) + "\r"


def test_progress_is_silent_off_a_terminal_and_for_small_files() -> None:
    pipe = io.StringIO()
    Progress.for_stream(pipe, "x").update(Tally(total=1, bytes_done=1, size=10 * MIN_BYTES))
    assert pipe.getvalue() == ""
    term = _Terminal()
    small = Progress.for_stream(term, "x")
    small.update(Tally(total=1, bytes_done=1, size=MIN_BYTES - 1))
    small.clear()
    assert term.getvalue() == ""
