"""The worker pool of ``--jobs N``: items handed to worker processes, results taken in order.

The block engine (:mod:`evalspec.validation.engine`) decides what a worker does
with a chunk; this module decides how the workers run: which start method, how
far ahead of the result being reported chunks are submitted (so finished results
never pile up in memory when the output is slower than the workers), how a lost
worker is reported (:class:`WorkerLost`, never a wait for ever), and how the
parent stays responsive to signals while it waits.
"""

from __future__ import annotations

import collections
import itertools
import sys
from collections.abc import Callable, Generator, Sequence

from evalspec.io.signals import children_end_with_the_command

# Not `from typing import ...`: typing costs milliseconds at start-up, and these
# names are only annotations. Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from concurrent.futures import Future
    from typing import Any, TypeVar

    Item = TypeVar("Item")
    Result = TypeVar("Result")

AHEAD = 4
"""Items submitted per worker ahead of the result being reported."""

WAKE_SECONDS = 0.2
"""How often the parent wakes while it waits for a result (to run signal handlers)."""


class WorkerLost(OSError):
    """A ``--jobs`` worker process ended before its chunk was checked (killed by a
    signal, the OOM killer, ...): the file was not fully validated."""


def ordered_results(
    work: Callable[[Item], Result],
    items: Sequence[Item],
    *,
    workers: int,
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
    path: str,
) -> Generator[Result, None, None]:
    """``work(item)`` for each of ``items``, run in ``workers`` processes (each set up
    by ``initializer(*initargs)``), yielded in the order of ``items``.

    :raises WorkerLost: a worker ended before its item was done (``path`` names the
        file being read in the error).
    """
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with children_end_with_the_command():
        # Not multiprocessing.Pool: when a worker dies (the OOM killer, a stray
        # kill) a Pool starts another and waits for the lost chunk for ever; the
        # executor fails the chunk's future instead (BrokenProcessPool).
        executor = ProcessPoolExecutor(
            workers, mp_context=_context(), initializer=initializer, initargs=initargs
        )
        try:
            pending = collections.deque(
                executor.submit(work, item) for item in items[: AHEAD * workers]
            )
            ahead = iter(items[AHEAD * workers :])
            while pending:
                result = _result(pending.popleft())
                for item in itertools.islice(ahead, 1):
                    pending.append(executor.submit(work, item))
                yield result
        except BrokenProcessPool:  # from an item's result, or from submit() after it
            raise WorkerLost(
                0, "a worker process ended before its chunk was checked (killed?)", path
            ) from None
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


def _context() -> Any:
    import multiprocessing  # only when workers are needed: it is slow to import

    # fork shares the already-built registry and starts fastest; elsewhere spawn.
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


def _result(future: Future[Result]) -> Result:
    from concurrent.futures import TimeoutError as Waited

    while True:
        try:
            # A wait without a timeout would keep the main thread in a lock for as
            # long as it lasts: a SIGTERM delivered to one of the executor's threads
            # would then never run the command's handler (Python runs handlers in the
            # main thread only), and the command would never end.
            return future.result(timeout=WAKE_SECONDS)
        except Waited:
            continue


__all__ = ["AHEAD", "WAKE_SECONDS", "WorkerLost", "ordered_results"]
