"""Chunked and multi-process validation report exactly what iter_validate reports."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_helpers import signals_at_their_defaults
from hypothesis import given
from hypothesis import strategies as st

from evalspec.io.linelimit import MAX_LINE_ENV, OverlongLine, bounded_lines
from evalspec.registry.build import Registry
from evalspec.validation.engine import (
    FAST_PATH_MIN_BYTES,
    Tally,
    _blocks,
    _reused_blocks,
    chunk_bounds,
    default_jobs,
    iter_problems,
)
from evalspec.validation.fast import NO_CCORE_ENV, compiled_core
from evalspec.validation.validator import _iter_validate

VALID = {
    "task_id": "t",
    "category": "arithmetic",
    "prompt": "Compute: 1 + 1\nAnswer:",
    "targets": ["2"],
    "metric_name": "exact_match",
    "post_process": "none",
    "metadata": {"k": 1},
}


def _line(task_id: str, **changes: object) -> bytes:
    task = dict(VALID, task_id=task_id, **changes)
    return json.dumps(task).encode()


def _mixed_file(path: Path, n: int = 400) -> Path:
    """Valid lines, invalid lines and ids repeated far apart (across chunks)."""
    lines = [b"\xef\xbb\xbf" + _line("first")]
    for i in range(n):
        if i % 37 == 5:
            lines.append(_line(f"id{i // 3}"))  # repeats an id from much earlier
        elif i % 11 == 0:
            lines.append(_line(f"bad{i}", targets=[]))
        elif i % 13 == 0:
            lines.append(b'{"task_id": "x", "task_id": "y"}')
        elif i % 17 == 0:
            lines.append(b"")
        elif i % 19 == 0:
            lines.append(_line(f"crlf{i}") + b"\r")
        else:
            lines.append(_line(f"id{i}"))
    lines.append(_line("first"))  # duplicate of line 1
    path.write_bytes(b"\n".join(lines))  # no newline at the end
    return path


def _expected(path: Path, registry: Registry) -> list[object]:
    return [r for r in _iter_validate(path, registry.spec, fast=False) if r.errors]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("chunk_bytes", [64, 1000, 1 << 20])
def test_chunked_output_equals_iter_validate(
    tmp_path: Path, registry: Registry, jobs: int, chunk_bytes: int
) -> None:
    path = _mixed_file(tmp_path / "tasks.jsonl")
    tally = Tally()
    found = list(iter_problems(str(path), jobs=jobs, chunk_bytes=chunk_bytes, tally=tally))
    expected = _expected(path, registry)
    assert found == expected
    assert any(e.rule == "duplicate_task_id" for r in found for e in r.errors)
    total = sum(1 for _ in _iter_validate(path, registry.spec, fast=False))
    assert (tally.total, tally.invalid) == (total, len(expected))


def test_precise_only_chunks_equal_fast_chunks(tmp_path: Path) -> None:
    path = _mixed_file(tmp_path / "tasks.jsonl")
    fast = list(iter_problems(str(path), jobs=2, chunk_bytes=500))
    precise = list(iter_problems(str(path), jobs=1, chunk_bytes=700, fast=False))
    assert fast == precise


@given(
    lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=40),
    block=st.integers(1, 50),
    end=st.sampled_from([b"", b"\n"]),
)
def test_blocks_cut_only_at_line_ends(lines: list[bytes], block: int, end: bytes) -> None:
    import io

    data = b"\n".join(lines) + end if lines else b""
    blocks = list(_blocks(io.BytesIO(data), block))
    assert b"".join(b for _, b in blocks) == data
    for start, b in blocks:
        assert data[start : start + len(b)] == b
        assert start == 0 or data[start - 1 : start] == b"\n"


@given(
    lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=40),
    block=st.integers(1, 50),
    end=st.sampled_from([b"", b"\n"]),
    limit=st.integers(1, 60),
    off=st.none() | st.integers(-1500, 60),
)
def test_reused_blocks_hold_the_lines_bounded_lines_reads(
    lines: list[bytes], block: int, end: bytes, limit: int, off: int | None
) -> None:
    """One buffer read into again: each view, copied when it comes, holds the next whole
    lines at its offset, and a line over the limit ends them where the reference
    reader (bounded_lines) ends them. Its first bytes: those read when it was found
    over the limit, at most 80, as _blocks keeps them (the reference keeps at most
    limit + 1), never bytes past the data. The same whatever size the caller expects
    (``off`` from the true size: a file that grew or shrank after its stat)."""
    import io

    data = b"\n".join(lines) + end if lines else b""
    expected = None if off is None else max(0, len(data) + off)
    want = list(bounded_lines(io.BytesIO(data), limit))
    got: list[bytes] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(MAX_LINE_ENV, str(limit))
        for start, view in _reused_blocks(io.BytesIO(data), block, expected):
            if isinstance(view, OverlongLine):
                assert view == data[start : start + 80][: len(view)]
                assert min(80, limit + 1) <= len(view) <= 80
                got.append(OverlongLine(view[: limit + 1]))
                continue
            copy = bytes(view)  # the next block overwrites the buffer
            assert data[start : start + len(copy)] == copy
            assert start == 0 or data[start - 1 : start] == b"\n"
            got.extend(io.BytesIO(copy).readlines())
    assert [(type(x), x) for x in got] == [(type(x), x) for x in want]


def test_reused_blocks_grow_for_a_long_line_and_shrink_after(tmp_path: Path) -> None:
    """A line longer than the buffer is read whole (into a bigger buffer), and the lines
    after it come in blocks of the normal size again."""
    import io

    data = b"a\n" + b"x" * 1000 + b"\n" + b"b\n" * 200
    blocks = [(s, bytes(v)) for s, v in _reused_blocks(io.BytesIO(data), 64)]
    assert b"".join(b for _, b in blocks) == data
    assert any(s == 2 and b.startswith(b"x" * 1000 + b"\n") for s, b in blocks)
    assert max(len(b) for s, b in blocks if s > 1003) <= 64


def test_a_small_file_gets_a_buffer_of_its_size_and_a_longer_one_the_full_size() -> None:
    """``bytearray(n)`` writes all n bytes: a 1 KiB file must not pay for a 4 MiB
    buffer (issue 25's start-up). A stream longer than its stat said is still read
    whole, in blocks of the full size once the small buffer has filled."""
    import io

    data = b"".join(b"line %d\n" % i for i in range(3000))
    first = next(_reused_blocks(io.BytesIO(data[:1000]), 1 << 22, 1000))[1]
    assert isinstance(first, memoryview)
    assert len(first.obj) == 1001  # type: ignore[arg-type]
    blocks = [(s, bytes(v)) for s, v in _reused_blocks(io.BytesIO(data), 4096, 100)]
    assert b"".join(b for _, b in blocks) == data
    assert max(len(b) for _, b in blocks) > 4000  # back to the full size after the first


def test_a_serial_run_reports_duplicates_from_the_reused_buffer(
    tmp_path: Path, registry: Registry
) -> None:
    """The serial path reads into one buffer: a duplicate's text is read back from the
    block it is in, and later reads into the buffer change no record already made."""
    path = tmp_path / "tasks.jsonl"
    lines = [_line(f"id{i}") for i in range(3000)] + [_line("id5"), _line("id2999")]
    lines += [_line(f"late{i}", prompt="") for i in range(100)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert path.stat().st_size > 2 * FAST_PATH_MIN_BYTES
    reported = list(iter_problems(str(path), jobs=1, chunk_bytes=4096))
    duplicates = [r.line for r in reported if r.errors[0].rule == "duplicate_task_id"]
    assert duplicates == [3001, 3002]
    assert len(reported) == 102
    assert reported == _expected(path, registry)


@pytest.mark.skipif(compiled_core() is None, reason="the digest table is the compiled core's")
@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("bits", [2, 8])
def test_colliding_digests_leave_the_output_unchanged(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch, jobs: int, bits: int
) -> None:
    """The parent's digest table cut to 2 or 8 bits: nearly every id meets another's
    digest, and each is decided on the real ids (read again from the file), in this
    process and from the digests workers send."""
    from evalspec.validation import engine

    path = tmp_path / "tasks.jsonl"
    prompt = "Compute: 1 + 1, then say it again. " * 8 + "\nAnswer:"
    lines = [_line(f"id{i}", prompt=prompt) for i in range(2000)]
    lines += [_line(f"id{i}") for i in range(0, 2000, 97)] + [_line("x", prompt="")]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert path.stat().st_size > 2 * FAST_PATH_MIN_BYTES
    monkeypatch.setattr(engine, "DIGEST_BITS", bits)
    reported = list(iter_problems(str(path), jobs=jobs, chunk_bytes=64 << 10))
    assert sum(r.errors[0].rule == "duplicate_task_id" for r in reported) == 21
    assert reported == _expected(path, registry)


@pytest.mark.skipif(compiled_core() is None, reason="the digest table is the compiled core's")
@pytest.mark.parametrize("jobs", [1, 2])
def test_repeated_ids_on_lines_longer_than_the_read_window_are_found(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """The lines read again to decide a shared digest run past the parent's 64 KiB read
    window, and so do the 63 lines skipped to reach them: every repeat is still found
    on its real id, and no other id is taken for one."""
    from evalspec.validation import engine

    path = tmp_path / "tasks.jsonl"
    sizes = [10, 70_000, 200, 140_000, 65_535, 65_536, 3]
    lines = [
        _line(f"id{i}", prompt="Say it. " * sizes[i % len(sizes)] + "\nAnswer:") for i in range(300)
    ]
    lines += [_line(f"id{i}") for i in (0, 1, 3, 64, 65, 130, 299)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(engine, "DIGEST_BITS", 2)
    reported = list(iter_problems(str(path), jobs=jobs, chunk_bytes=1 << 20))
    assert sum(r.errors[0].rule == "duplicate_task_id" for r in reported) == 7
    assert reported == _expected(path, registry)


@given(lines=st.lists(st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")), max_size=30))
def test_chunk_bounds_are_line_starts(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]
) -> None:
    path = tmp_path_factory.mktemp("b") / "f"
    data = b"\n".join(lines)
    path.write_bytes(data)
    for tail in (0, 9, 10**6):
        bounds = chunk_bounds(path, len(data), 8, tail)
        assert bounds is not None
        assert bounds[0] == 0 and bounds[-1] == len(data)
        assert bounds == sorted(set(bounds))
        for a, b in itertools.pairwise(bounds):
            if b < len(data):
                assert data[b - 1 : b] == b"\n"
            # Each chunk holds its chunk size (8 bytes, 2 in the last `tail` bytes)
            # and the rest of the line it ends in, no more.
            size = 8 if len(data) - a > tail else 2
            assert b - a >= size or b == len(data)
            assert b"\n" not in data[a + size : b - 1]


def test_default_jobs_is_one_for_small_files() -> None:
    assert default_jobs(1000) == 1
    assert default_jobs(10**12) >= 1


# -- the CLI ------------------------------------------------------------------------


def _cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    result: subprocess.CompletedProcess[str] = subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", *args],
        capture_output=True,
        text=True,
        check=False,
        **kw,  # type: ignore[call-overload]
    )
    return result


def test_cli_jobs_output_is_identical(tmp_path: Path) -> None:
    path = _mixed_file(tmp_path / "tasks.jsonl", n=3000)
    one = _cli("--jobs", "1", str(path))
    two = _cli("--jobs", "2", str(path))
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout
    assert "duplicate_task_id" in one.stdout
    assert one.stderr == two.stderr == ""  # no progress line when stderr is not a terminal
    json_one = _cli("--jobs", "1", "--format", "json", str(path))
    json_two = _cli("--jobs", "2", "--format", "json", str(path))
    assert json_one.stdout == json_two.stdout
    report = json.loads(json_two.stdout)["files"][0]
    summary = one.stdout.splitlines()[-1]
    assert summary.endswith(
        f"{report['total']} tasks, {report['valid']} valid, {report['invalid']} invalid"
    )
    assert len(report["errors"]) == len(one.stdout.splitlines()) - 1


def test_cli_rejects_zero_jobs(tmp_path: Path) -> None:
    result = _cli("--jobs", "0", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2
    assert "--jobs" in result.stderr


def test_cli_reads_a_pipe(tmp_path: Path) -> None:
    path = _mixed_file(tmp_path / "tasks.jsonl")
    via_file = _cli(str(path))
    with path.open("rb") as f:
        via_pipe = _cli("/dev/stdin", stdin=f)
    assert via_pipe.stdout.replace("/dev/stdin", str(path)) == via_file.stdout


def test_ctrl_c_stops_cleanly_with_exit_130() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalspec", "validate", "/dev/stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=signals_at_their_defaults,
    )
    assert proc.stdin is not None
    proc.stdin.write(_line("a") + b"\n" + _line("a") + b"\n")
    proc.stdin.flush()
    time.sleep(1.0)  # let it start and block on the open pipe; not a timing assertion
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    proc.stdin.close()
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert b"interrupted" in err


def test_ctrl_c_stops_worker_processes_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    bad = _line("bad", targets=[])
    template = _line("ID")
    with path.open("wb") as f:
        f.write(bad + b"\n")  # an early error line shows that checking has started
        for block in range(200):  # ~40 MB: ten chunks, seconds of work
            lines = (template.replace(b'"ID"', b'"id%d-%d"' % (block, i)) for i in range(1000))
            f.write(b"\n".join(lines) + b"\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalspec", "validate", "--jobs", "2", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        preexec_fn=signals_at_their_defaults,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert b"empty_targets" in first
    assert proc.returncode == 130
    assert b"Traceback" not in err


def test_an_error_row_is_an_error_record_without_its_line() -> None:
    # Error rows are built into records positionally (for speed); a field added to
    # ErrorRecord later must not be dropped or moved on the way.
    import attrs

    from evalspec.model import ErrorRecord
    from evalspec.validation.precise import records

    values = {f.name: f"value of {f.name}" for f in attrs.fields(ErrorRecord)}
    record = ErrorRecord(**dict(values, line=2))
    row = attrs.astuple(record)[1:]
    assert attrs.fields(ErrorRecord)[0].name == "line"
    assert records(42, [row]) == (attrs.evolve(record, line=42),)  # type: ignore[list-item]


def test_a_chunk_result_sent_by_a_worker_keeps_every_field_of_its_error_records() -> None:
    # A worker's ChunkResult crosses pickled, its errors as plain rows built into
    # records in the parent: no field may be dropped or moved on the way.
    import pickle
    from array import array

    import attrs

    from evalspec.model import ErrorRecord
    from evalspec.validation.engine import ChunkResult
    from evalspec.validation.validator import LineResult

    values = {f.name: f"value of {f.name}" for f in attrs.fields(ErrorRecord)}
    first = ErrorRecord(**dict(values, line=2))
    second = ErrorRecord(**dict(values, line=2, rule="other", task_id=None))
    third = ErrorRecord(**dict(values, line=5))
    rows = [(2, [attrs.astuple(first)[1:], attrs.astuple(second)[1:]])]
    rows.append((5, [attrs.astuple(third)[1:]]))
    errors = [LineResult(2, None, (first, second)), LineResult(5, None, (third,))]
    result = ChunkResult(0, 10, 2, 4, 4, rows, "a\nb", array("q", [2, 5]), array("q"))  # type: ignore[arg-type]
    assert result.errors == errors
    sent = pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    assert sent.n_errors == 2
    assert sent.numbered_errors(40) == [
        LineResult(42, None, (attrs.evolve(first, line=42), attrs.evolve(second, line=42))),
        LineResult(45, None, (attrs.evolve(third, line=45),)),
    ]
    assert sent.errors == errors
    assert (sent.start, sent.end, sent.origin, sent.lines, sent.total, sent.ids) == (
        0, 10, 2, 4, 4, "a\nb"
    )  # fmt: skip
    assert list(sent.skipped) == [2, 5]
    assert pickle.loads(pickle.dumps(sent)).errors == errors  # sent on again


def test_a_forked_worker_reports_invalid_lines_without_importing_attrs(tmp_path: Path) -> None:
    """A worker sends an invalid line's errors as plain rows, which the parent builds
    into records: the worker never imports attrs or the value classes (~15-20 ms of
    its first chunk, and the same in every worker), whatever the lines' problems."""
    path = _mixed_file(tmp_path / "t.jsonl", 300)
    with path.open("ab") as f:
        f.write(b"\n" + _line("typo", category="clasification") + b"\n{not json\n[1]\n\xff\n")
    script = f"""
import os, pickle, sys
from evalspec.io.fileidentity import file_identity
from evalspec.registry.snapshot import encode_spec, spec_in_force
from evalspec.validation import engine
from evalspec.validation.idtable import IdTable
path = {str(path)!r}
spec = spec_in_force()
engine._checker(spec, True, IdTable())  # the parent's fast path, before the fork
span = (path, 0, os.path.getsize(path), file_identity(os.stat(path)))
VALUES = ("attr", "evalspec.model", "evalspec.validation.validator")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    for name in [m for m in sys.modules if m.startswith(VALUES)]:
        del sys.modules[name]  # as in a warm parent, which had not imported them
    engine._init_worker(encode_spec(spec), True)
    before = set(sys.modules)
    sent = pickle.dumps(engine._work(span))
    new = sorted(m for m in set(sys.modules) - before if m.startswith(VALUES))
    os.write(w, pickle.dumps((new, sent)))
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
data = b""
while chunk := os.read(r, 1 << 20):
    data += chunk
new, sent = pickle.loads(data)
result = pickle.loads(sent)
rules = sorted({{e.rule for line in result.errors for e in line.errors}})
print(new, result.n_errors, rules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    new, count, rules = done.stdout.strip().split(" ", 2)
    assert new == "[]", done.stdout
    assert int(count) > 30
    for rule in ("duplicate_key", "invalid_json", "not_object", "unknown_category"):
        assert rule in rules


def test_a_file_replaced_while_its_chunks_are_read_is_an_error(tmp_path: Path) -> None:
    # The workers open the file by name: after a rename over it (a checkout, a
    # writer's atomic replace) they read the new file's bytes at the old file's
    # offsets, and the verdict was of neither file (invalid_json at chunk seams).
    path = tmp_path / "t.jsonl"
    lines = [_line(f"id{i}") for i in range(2000)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"\n".join([b'{"shifted": 1}', *lines]) + b"\n")

    def swap(tally: Tally) -> None:
        if replacement.exists():
            os.replace(replacement, path)

    with pytest.raises(OSError, match="replaced or removed while it was read"):
        list(iter_problems(str(path), jobs=2, chunk_bytes=4096, on_chunk=swap))


def test_a_file_removed_while_its_chunks_are_read_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(_line(f"id{i}") for i in range(2000)) + b"\n")

    def remove(tally: Tally) -> None:
        if path.exists():
            path.unlink()

    with pytest.raises(OSError, match="replaced or removed while it was read"):
        list(iter_problems(str(path), jobs=2, chunk_bytes=4096, on_chunk=remove))


@pytest.mark.parametrize("proof", ["ccore", "python"])
@pytest.mark.parametrize(("jobs", "chunk_bytes"), [(1, 1000), (1, 1 << 20), (2, 50_000)])
def test_big_files_give_the_same_output_with_and_without_the_compiled_core(
    tmp_path: Path,
    registry: Registry,
    monkeypatch: pytest.MonkeyPatch,
    proof: str,
    jobs: int,
    chunk_bytes: int,
) -> None:
    """Past FAST_PATH_MIN_BYTES the compiled core (where built) also keeps the ids, as
    digests: its repeats, decided by reading first lines again, are the dict's."""
    if proof == "python":
        monkeypatch.setenv(NO_CCORE_ENV, "1")
    elif compiled_core() is None:
        pytest.skip("the compiled core is not built here")
    path = _mixed_file(tmp_path / "tasks.jsonl", n=3000)
    assert path.stat().st_size > FAST_PATH_MIN_BYTES
    found = list(iter_problems(str(path), jobs=jobs, chunk_bytes=chunk_bytes))
    assert found == _expected(path, registry)
    assert sum(e.rule == "duplicate_task_id" for r in found for e in r.errors) > 50


def test_a_worker_sends_digests_not_ids_when_the_parent_keeps_digests(
    tmp_path: Path, registry: Registry
) -> None:
    core = compiled_core()
    if core is None:
        pytest.skip("the compiled core is not built here")
    from evalspec.validation.engine import check_chunk

    path = _mixed_file(tmp_path / "tasks.jsonl", n=300)
    size = path.stat().st_size
    plain = check_chunk(str(path), 0, size, registry.spec, None)
    digested = check_chunk(str(path), 0, size, registry.spec, None, None, core.id_digests)
    assert plain.digests is None and plain.ids
    assert digested.ids == "" and digested.digests == core.id_digests(plain.ids.split("\n"))
    assert (digested.errors, digested.skipped) == (plain.errors, plain.skipped)


def test_a_file_rewritten_in_place_while_ids_are_read_again_is_an_error(tmp_path: Path) -> None:
    if compiled_core() is None:
        pytest.skip("the compiled core is not built here")
    path = tmp_path / "t.jsonl"
    lines = [_line(f"id{i:05d}") for i in range(3000)] + [_line("id00000")]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert path.stat().st_size > FAST_PATH_MIN_BYTES

    def rewrite(tally: Tally) -> None:
        with open(path, "r+b") as f:  # same length, another id: the repeat would be missed
            f.write(_line("id99999"))

    with pytest.raises(OSError, match="while it was read"):
        list(iter_problems(str(path), jobs=1, chunk_bytes=4096, on_chunk=rewrite))


@given(
    st.lists(st.integers(1, 5000), max_size=60),
    st.data(),
    st.integers(1, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 2**40),
)
def test_span_lines_gives_the_same_numbers_with_and_without_the_core(
    lengths: list[int], data: st.DataObject, origin: int, first_line: int, start: int
) -> None:
    from array import array

    from evalspec.validation.engine import ChunkResult, span_lines

    lines = range(origin, origin + len(lengths))
    skipped = sorted(data.draw(st.sets(st.sampled_from(lines))) if lengths else [])
    result = ChunkResult(
        start, start + sum(lengths), origin, len(lengths), len(lengths), [], "",
        array("q", skipped), array("q", lengths),
    )  # fmt: skip
    shift = first_line - origin
    # What the parent computed before the core did it: each kept line and its offset.
    offsets = [start + sum(lengths[:i]) for i in range(len(lengths))]
    kept = [i for i, n in enumerate(lines) if n not in skipped]
    expected = ([lines[i] + shift for i in kept], [offsets[i] for i in kept])
    for core in (compiled_core(), None):
        got = span_lines(result, shift, core)
        assert (got[0].tolist(), got[1].tolist()) == expected


def test_the_core_span_lines_refuses_skipped_lines_outside_or_out_of_order() -> None:
    from array import array

    core = compiled_core()
    if core is None:
        pytest.skip("the compiled core is not built here")
    lengths = array("q", [3, 4, 5, 6, 7])  # lines 10-14 from byte 100
    lines, offsets = core.span_lines(lengths, array("q", [11, 13]), 10, 5, 100)
    assert array("q", lines).tolist() == [15, 17, 19]
    assert array("q", offsets).tolist() == [100, 107, 118]
    for bad in ([13, 11], [9], [15], [11, 11]):
        with pytest.raises(ValueError, match="skipped"):
            core.span_lines(lengths, array("q", bad), 10, 5, 100)
    with pytest.raises(ValueError, match="out of range"):  # more skipped than lines
        core.span_lines(lengths, array("q", range(10, 16)), 10, 5, 100)
    with pytest.raises(ValueError, match="a length"):
        core.span_lines(array("q", [3, -4, 5]), array("q"), 1, 0, 0)
    with pytest.raises(ValueError, match="array"):
        core.span_lines(array("i", [3]), array("q"), 1, 0, 0)
    with pytest.raises(TypeError):
        core.span_lines(lengths, array("q"), 10)  # type: ignore[call-arg]


def test_a_forked_worker_starts_without_importing_the_attrs_spec_classes(tmp_path: Path) -> None:
    """A worker reads the parent's spec as the plain tables a warm parent holds, and
    inherits the fast path's imports from the parent that built its own before the
    pool started: neither evalspec.versions (attrs, the migrations: ~40 ms) nor
    msgspec is imported again in it."""
    script = """
import os, sys
from evalspec.registry.snapshot import encode_spec, spec_in_force
from evalspec.registry.tables import SpecTables
from evalspec.validation import engine
from evalspec.validation.idtable import IdTable
spec = spec_in_force()
doc = encode_spec(spec)
HEAVY = ("evalspec.versions", "msgspec")
for name in [m for m in sys.modules if m.startswith(HEAVY)]:
    del sys.modules[name]  # as in a warm parent, which never imported them
engine._checker(spec, True, IdTable())  # the parent's fast path, before the fork
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    before = set(sys.modules)
    engine._init_worker(doc, True)
    new = sorted(m for m in set(sys.modules) - before if m.startswith((*HEAVY, "attr")))
    ok = type(engine._worker["spec"]) is SpecTables and encode_spec(engine._worker["spec"]) == doc
    os.write(w, repr((ok, new)).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print(os.read(r, 65536).decode())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(True, [])"
