"""The worker pool of ``--jobs N``: items handed to worker processes, results taken in order.

The block engine (:mod:`evalspec.validation.engine`) decides what a worker does
with a chunk; this module decides how the workers run: which start method, how
far ahead of the result being reported chunks are submitted (so finished results
never pile up in memory when the output is slower than the workers), how a lost
worker is reported (:class:`WorkerLost`, never a wait for ever), how results
travel (each in a file of a private directory, the executor's pipe carrying only
its name), and how the parent stays responsive to signals while it waits.
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import pickle
import stat
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


class PoolFailed(OSError):
    """The ``--jobs`` workers could not check the file, through no fault of the
    file: it was not fully validated."""


class WorkerLost(PoolFailed):
    """A ``--jobs`` worker process ended before its chunk was checked (killed by a
    signal, the OOM killer, ...)."""


def ordered_results(
    work: Callable[[Item], Result],
    items: Sequence[Item],
    *,
    workers: int,
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
    path: str,
    here: Callable[[Item], Result] | None = None,
) -> Generator[Result, None, None]:
    """``work(item)`` for each of ``items``, run in ``workers`` processes (each set up
    by ``initializer(*initargs)``), yielded in the order of ``items``.

    ``here`` (optional) does what ``work`` does, in this process: while the result
    due next is not ready, the caller's process takes the next item not yet handed
    out and does it itself, instead of waiting (at most :data:`AHEAD` such results
    wait for their turn). ``--jobs N`` so runs N - 1 workers and the parent: N
    processes on N cores, not N + 1 (the parent's own work, between results, took
    cores from the workers). An exception ``here`` raises is raised at its item's
    turn, as a worker's is.

    :raises WorkerLost: a worker ended before its item was done (``path`` names the
        file being read in the error).
    :raises PoolFailed: the results had nowhere to go (no private directory, or a
        worker could not write its result there).
    """
    import shutil
    import tempfile
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Results do not travel through the executor's result pipe: a worker killed
    # half-way through writing a large one there leaves a partial message that the
    # executor's thread then waits to complete for ever (CPython reads it with a
    # blocking recv before it looks at which workers died: the run hung). A worker
    # writes its result to a file of this directory (mode 0700, so no other user
    # reads or plants one), and sends the file's name: a message of a few dozen
    # bytes, which a pipe takes whole or not at all (POSIX: up to PIPE_BUF).
    _sweep_left_behind(tempfile.gettempdir())
    try:
        # The pid in the name tells a later run whether this one is still alive.
        directory = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
    except OSError as exc:
        raise PoolFailed(
            exc.errno or 0, f"no directory for the workers' results ({exc.strerror or exc})", path
        ) from None
    deposit = functools.partial(_deposit, work, directory)
    try:
        # A signal ends the command with os._exit: no finally runs, so it cleans up.
        with children_end_with_the_command(
            clean_up=functools.partial(shutil.rmtree, directory, ignore_errors=True)
        ):
            # Not multiprocessing.Pool: when a worker dies (the OOM killer, a stray
            # kill) a Pool starts another and waits for the lost chunk for ever; the
            # executor fails the chunk's future instead (BrokenProcessPool).
            executor = ProcessPoolExecutor(
                workers, mp_context=_context(), initializer=initializer, initargs=initargs
            )
            try:
                # Each item's future, or the outcome of one done here, in item order.
                due: collections.deque[Future[str] | _Done] = collections.deque()
                item_of: dict[Future[str], Item] = {}  # of the futures in `due`
                queued = 0  # futures in `due`
                kept = 0  # outcomes done here in `due`
                rest = iter(items)
                for item in itertools.islice(rest, AHEAD * workers):
                    future = executor.submit(deposit, item)
                    due.append(future)
                    item_of[future] = item
                    queued += 1
                while due:
                    head = due.popleft()
                    if isinstance(head, _Done):
                        kept -= 1
                        result = head.result()
                    else:
                        del item_of[head]
                        # While the result due is not ready, do the next items here;
                        # once none is left to hand out, take back the last one still
                        # waiting for a worker (at the end of a file, the workers'
                        # queues would otherwise be finished while this process waits).
                        while here is not None and not head.done() and kept < AHEAD:
                            item = next(rest, _NONE)
                            if item is not _NONE:
                                due.append(_Done.of(here, item))
                            elif not _take_back(due, item_of, here):
                                break
                            else:
                                queued -= 1
                            kept += 1
                        queued -= 1
                        result = _collect(directory, head, path)
                    # Keep every worker AHEAD items ahead (those done here aside).
                    while queued < AHEAD * workers:
                        item = next(rest, _NONE)
                        if item is _NONE:
                            break
                        future = executor.submit(deposit, item)
                        due.append(future)
                        item_of[future] = item
                        queued += 1
                    yield result
            except BrokenProcessPool:  # from an item's result, or from submit() after it
                raise WorkerLost(
                    0, "a worker process ended before its chunk was checked (killed?)", path
                ) from None
            finally:
                executor.shutdown(wait=True, cancel_futures=True)
    finally:
        # After the executor's shutdown: no worker writes here any more.
        shutil.rmtree(directory, ignore_errors=True)


_NONE: Any = object()
"""No item left."""

_PREFIX = "evalspec-jobs-"
"""Of a run's result directory: ``evalspec-jobs-PID-RANDOM``."""

LEFT_BEHIND_SECONDS = 3600
"""A result directory untouched this long, whose run's process is gone, was left by a
run killed with SIGKILL (nothing in it could remove it): the next run removes it."""


def _sweep_left_behind(temp: str) -> None:
    """Remove the result directories of this user's runs that were killed with SIGKILL
    (the one signal no clean-up follows). A directory is removed only when it is this
    user's, not a symlink, its process (the pid in its name) is gone, and nothing in
    it has changed for :data:`LEFT_BEHIND_SECONDS`: a live run deposits and collects
    results every few milliseconds, and a pid seen from another pid namespace (a
    container sharing the temporary directory) is still not taken for a dead run
    unless the directory is idle too. Errors are ignored: this is housekeeping."""
    import shutil
    import time

    from evalspec.io.privatedir import euid

    uid = euid()  # the owner of the directories this process makes
    try:
        with os.scandir(temp) as entries:
            candidates = [e for e in entries if e.name.startswith(_PREFIX)]
    except OSError:
        return
    now = time.time()
    for entry in candidates:
        pid = entry.name[len(_PREFIX) :].partition("-")[0]
        if not (pid.isascii() and pid.isdigit()) or int(pid) == os.getpid():
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
            continue
        if now - st.st_mtime < LEFT_BEHIND_SECONDS or _alive(int(pid)):
            continue
        # rmtree does not follow symlinks inside it (and resists a swap on Linux).
        shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts as alive)."""
    if os.name == "nt":
        return True  # os.kill there terminates the process: never asked
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


class _Done:
    """The outcome of an item done in the caller's process, kept until its turn."""

    __slots__ = ("_error", "_value")

    def __init__(self, value: Any, error: Exception | None) -> None:
        self._value = value
        self._error = error

    @classmethod
    def of(cls, here: Callable[[Item], Result], item: Item) -> _Done:
        try:
            return cls(here(item), None)
        except Exception as exc:  # raised at its turn, as a worker's would be
            return cls(None, exc)

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


def _take_back(
    due: collections.deque[Future[str] | _Done],
    item_of: dict[Future[str], Item],
    here: Callable[[Item], Result],
) -> bool:
    """Do here the last item of ``due`` that no worker has started (its future is
    cancelled: the executor never hands it out); False when there is none."""
    for i in range(len(due) - 1, -1, -1):
        future = due[i]
        if isinstance(future, _Done):
            continue
        if not future.cancel():  # already with a worker: so are all before it
            return False
        due[i] = _Done.of(here, item_of.pop(future))
        return True
    return False


def _deposit(work: Callable[[Item], Result], directory: str, item: Item) -> str:
    """In a worker: ``work(item)``, its result (or the exception it raised) pickled
    into a new file of ``directory``; returns the file's name."""
    import tempfile

    try:
        outcome: tuple[bool, object] = (True, work(item))
    except Exception as exc:  # re-raised in the parent, as the executor would
        outcome = (False, exc)
    fd, name = tempfile.mkstemp(dir=directory)
    with open(fd, "wb") as f:
        pickle.dump(outcome, f, protocol=pickle.HIGHEST_PROTOCOL)
    return os.path.basename(name)


def _collect(directory: str, future: Future[str], path: str) -> Any:
    """In the parent: the result a worker deposited for ``future``, its file removed.

    :raises PoolFailed: the worker could not write its result, or it is gone.
    :raises Exception: the exception ``work`` raised in the worker.
    """
    try:
        # An OSError here is _deposit's (work's own are in the file).
        name = os.path.join(directory, os.path.basename(_result(future)))
        with open(name, "rb") as f:
            ok, value = pickle.loads(f.read())
        os.unlink(name)
    except OSError as exc:
        raise PoolFailed(
            exc.errno or 0, f"a worker could not pass on its result ({exc.strerror or exc})", path
        ) from None
    if not ok:
        raise value
    return value


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


__all__ = ["AHEAD", "WAKE_SECONDS", "PoolFailed", "WorkerLost", "ordered_results"]
