"""The ``--jobs`` worker pool: results in the order of the items, a lost worker an error."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import children_of

from evalspec.validation.pool import AHEAD, PoolFailed, WorkerLost, ordered_results

_state: dict[str, int] = {}


def _setup(offset: int) -> None:
    _state["offset"] = offset


def _square_plus_offset(n: int) -> int:
    return n * n + _state["offset"]


def _die_on_seven(n: int) -> int:
    if n == 7:
        os._exit(9)  # as the OOM killer would end it: no exception, no result
    return n


def test_results_come_in_the_order_of_the_items_however_many_are_ahead() -> None:
    items = list(range(3 * AHEAD * 2 + 5))  # more items than are ever submitted ahead
    got = ordered_results(
        _square_plus_offset, items, workers=2, initializer=_setup, initargs=(1,), path="f"
    )
    assert list(got) == [n * n + 1 for n in items]


def test_a_worker_that_dies_is_worker_lost_naming_the_file() -> None:
    got = ordered_results(
        _die_on_seven, list(range(20)), workers=2, initializer=_setup, initargs=(0,), path="f"
    )
    with pytest.raises(WorkerLost, match="ended before its chunk was checked") as caught:
        list(got)
    assert caught.value.filename == "f"


def _raise_on_three(n: int) -> int:
    if n == 3:
        raise PermissionError(13, "not allowed", f"chunk-{n}")
    return n


def test_an_exception_in_work_reaches_the_parent_as_raised() -> None:
    got = ordered_results(
        _raise_on_three, list(range(8)), workers=2, initializer=_setup, initargs=(0,), path="f"
    )
    assert next(got) == 0
    with pytest.raises(PermissionError) as caught:
        list(got)
    assert (caught.value.errno, caught.value.filename) == (13, "chunk-3")


def _helped(work: Callable[[int], Any], items: list[int], here: Callable[[int], Any]) -> Any:
    """One worker, and ``here`` doing items in this process while it waits."""
    return ordered_results(
        work, items, workers=1, initializer=_setup, initargs=(0,), path="f", here=here
    )


def _slow_with_pid(n: int) -> tuple[int, int]:
    time.sleep(0.2 if n == 0 else 0.01)
    return n, os.getpid()


def test_the_caller_does_items_itself_while_it_waits_in_order_and_at_most_ahead() -> None:
    """``here`` takes the next item not handed out while the result due is not ready:
    every result still comes in item order, the workers do some and the caller some,
    and no more than AHEAD of the caller's results wait for their turn at once."""
    items = list(range(40))
    yielded: list[int] = []
    waiting_at_calls: list[int] = []
    done_here: list[int] = []

    def here(n: int) -> tuple[int, int]:
        waiting_at_calls.append(sum(1 for m in done_here if m >= len(yielded)))
        done_here.append(n)
        return n, os.getpid()

    got = _helped(_slow_with_pid, items, here)
    pids = []
    for n, pid in got:
        yielded.append(n)
        pids.append(pid)
    assert yielded == items
    assert os.getpid() in pids  # the caller did some (item 0 takes the worker 0.2 s)
    assert {pid for pid in pids if pid != os.getpid()}  # and the worker some
    assert [n for n, pid in zip(items, pids, strict=True) if pid == os.getpid()] == sorted(
        done_here
    )
    assert max(waiting_at_calls) < AHEAD


def test_at_the_end_the_caller_takes_back_an_item_no_worker_has_started() -> None:
    """With nothing left to hand out, the caller does the last item still waiting for a
    worker (its future cancelled), instead of waiting while the worker's queue drains:
    the results stay in order, each item done once."""
    calls: list[int] = []

    def here(n: int) -> tuple[int, int]:
        calls.append(n)
        return n, os.getpid()

    # Item 0 keeps the worker 0.2 s; items 1 (and maybe 2) wait in the executor's call
    # queue by then, item 3 still in its pending items: it can be cancelled.
    got = list(_helped(_slow_with_pid, list(range(6)), here))
    assert [n for n, _ in got] == list(range(6))
    by = dict(got)
    assert by[0] != os.getpid()  # the worker's
    assert by[3] == os.getpid()  # handed to the pool, taken back
    assert sorted(calls) == sorted(set(calls))  # nothing done twice here
    assert {n for n, pid in got if pid == os.getpid()} == set(calls)


def _always_refused(n: int) -> int:
    raise PermissionError(13, "not allowed", f"chunk-{n}")


def test_an_exception_raised_here_is_raised_at_its_turn() -> None:
    got = _helped(_slow_with_pid, list(range(20)), _always_refused)
    before: list[int] = []
    with pytest.raises(PermissionError) as caught:
        for n, _ in got:
            before.append(n)
    # The first item done here (after those handed to the worker at once) raised, and
    # only when every earlier result had been yielded.
    assert before == list(range(AHEAD))
    assert caught.value.filename == f"chunk-{AHEAD}"


def _die_at_once(n: int) -> int:
    os._exit(9)


def test_a_worker_lost_while_the_caller_helps_is_worker_lost_not_done_here() -> None:
    """A lost worker's item is never done again here: the run ends as WorkerLost."""
    got = _helped(_die_at_once, list(range(20)), lambda n: n)
    with pytest.raises(WorkerLost):
        list(got)


def _run(
    work: Callable[[int], int], items: list[int], workers: int = 2
) -> Generator[int, None, None]:
    return ordered_results(
        work, items, workers=workers, initializer=_setup, initargs=(0,), path="f"
    )


def _pool_directories(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("evalspec-jobs-*")}


def test_no_result_file_outlives_the_run_whole_or_stopped_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # not another test's runs
    before = _pool_directories(tmp_path)
    assert list(_run(_square_plus_offset, list(range(30)))) == [n * n for n in range(30)]
    got = _run(_square_plus_offset, list(range(30)))
    next(got)
    assert _pool_directories(tmp_path) - before  # the run's own directory, while it runs
    got.close()
    assert _pool_directories(tmp_path) == before


def test_no_directory_for_the_results_is_pool_failed_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    got = _run(_square_plus_offset, [1, 2])
    with pytest.raises(PoolFailed, match="no directory for the workers' results") as caught:
        next(got)
    assert caught.value.filename == "f"
    assert not isinstance(caught.value, WorkerLost)


def _remove_the_result_directory_on_two(n: int) -> int:
    if n == 2:
        for directory in Path(tempfile.gettempdir()).glob("evalspec-jobs-*"):
            # ignore_errors: the parent may unlink a result file it has read while
            # this walks the directory (a FileNotFoundError here would be work's own
            # exception, re-raised as such, not the failure this test is after).
            shutil.rmtree(directory, ignore_errors=True)
            assert not directory.exists()
    return n


def test_a_result_that_cannot_be_written_is_pool_failed_not_the_files_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the workers fork with it
    got = _run(_remove_the_result_directory_on_two, list(range(6)), workers=1)
    with pytest.raises(PoolFailed, match="could not pass on its result"):
        list(got)


# A parent whose results are 4 MiB each: far more than a pipe holds (64 KiB).
_BIG_RESULTS = """
import sys
from evalspec.validation.pool import WorkerLost, ordered_results

def big(n):
    return bytes(4 << 20)

def nothing():
    pass

if __name__ == "__main__":
    try:
        for _ in ordered_results(big, list(range(64)), workers=2, initializer=nothing,
                                 initargs=(), path="f"):
            pass
    except WorkerLost:
        sys.exit(3)
"""


def _blocked(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "SD"


def _all_stay_blocked(pids: list[int]) -> bool:
    # Blocked at two looks 0.2 s apart: not a passing wait for the disk.
    if not all(map(_blocked, pids)):
        return False
    time.sleep(0.2)
    return all(map(_blocked, pids))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_a_worker_killed_while_its_result_is_on_the_way_is_worker_lost_not_a_hang(
    tmp_path: Path,
) -> None:
    # The parent is stopped, so nothing reads what the workers send: each worker
    # blocks, sending a result or waiting for work. The one blocked writing (if any)
    # is killed half-way through its message. The executor's pipe carried whole
    # results once, and a partial one kept its reading thread waiting for ever.
    script = tmp_path / "big.py"
    script.write_text(_BIG_RESULTS)
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(workers := children_of(proc.pid)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGSTOP)
        # Blocked at two looks 0.2 s apart: not a passing wait for the disk.
        while not (
            all(map(_blocked, workers)) and (time.sleep(0.2) or all(map(_blocked, workers)))
        ):
            assert time.monotonic() < deadline, "a worker never blocked"
            time.sleep(0.05)
        writing = [w for w in workers if "pipe_write" in Path(f"/proc/{w}/wchan").read_text()]
        os.kill((writing or workers)[0], signal.SIGKILL)
        os.kill(proc.pid, signal.SIGCONT)
        _out, err = proc.communicate(timeout=30)
    finally:
        for w in workers:  # before the parent: once it is gone they are nobody's children
            with contextlib.suppress(ProcessLookupError):
                os.kill(w, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
    assert proc.returncode == 3, err


def test_a_run_removes_the_result_directories_of_runs_killed_with_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing can clean up after a SIGKILL: the next run removes what such a run left,
    and only that (its process gone and its directory idle for an hour)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(done.stdout)  # a process that has ended
    old = 1_000_000_000
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("")

    def plant(name: str, *, idle: bool = True, link: bool = False) -> Path:
        path = tmp_path / name
        if link:
            path.symlink_to(elsewhere)
            os.utime(path, (old, old), follow_symlinks=False)
            return path
        path.mkdir()
        (path / "tmpresult").write_bytes(b"pickled")
        if idle:
            os.utime(path, (old, old))
        return path

    left = plant(f"evalspec-jobs-{dead}-abcd1234")
    busy = plant(f"evalspec-jobs-{dead}-busy0000", idle=False)  # changed just now
    alive = plant(f"evalspec-jobs-{os.getppid()}-alive000")  # its process runs
    link = plant(f"evalspec-jobs-{dead}-link0000", link=True)
    unnamed = plant("evalspec-jobs-nopid000")  # not a name this code writes
    assert list(_run(_square_plus_offset, list(range(4)))) == [0, 1, 4, 9]
    assert not left.exists()
    assert busy.is_dir() and alive.is_dir() and unnamed.is_dir()
    assert link.is_symlink() and (elsewhere / "keep").exists()
    assert _pool_directories(tmp_path) == {p.name for p in (busy, alive, link, unnamed)}
