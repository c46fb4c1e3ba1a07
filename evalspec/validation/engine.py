"""Validating a file in chunks, in this process or spread over worker processes.

The file is cut at line boundaries into chunks of :data:`CHUNK_BYTES`. A
chunk is checked on its own (stages 1-5, fast path first, precise path for
any line the fast path cannot vouch for) and comes back small: the error
records of its invalid lines, the ids of its valid lines with their line
numbers and byte offsets, and counts. The parent takes chunk results in file
order, numbers their lines, and decides task-id uniqueness (stage 6) in line
order, so the output of ``--jobs N`` is the output of ``--jobs 1``, byte for
byte, and starts before the file is finished. Validated tasks are never
built, kept or sent: only ids cross process boundaries (their 32-bit digests
when the parent keeps the digest table).

How the workers run (start method, look-ahead, a lost worker) is
:mod:`evalspec.validation.pool`; that a worker reads the file the parent opened
is :mod:`evalspec.io.fileidentity`.
"""

from __future__ import annotations

import io
import itertools
import os
import stat
from array import array
from collections.abc import Callable, Iterator

from evalspec.io.linelimit import OverlongLine, max_line_bytes
from evalspec.io.signals import in_worker
from evalspec.validation.idtable import DigestIdTable, IdTable
from evalspec.validation.precise import line_outcome, line_rows, overlong_record, records

# Not `from typing import ...`: typing costs milliseconds at start-up, and these
# names are only annotations. Type checkers treat any name TYPE_CHECKING as true.
# Nor are the value classes (attrs), the fast path, the worker pool, the file
# identity checks or heapq imported up front: a warm `evalspec validate` of a small
# valid file needs none of them (each module is ~0.1-0.3 ms of its start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from evalspec.registry.tables import AnySpec
    from evalspec.validation.fast import FastPath
    from evalspec.validation.precise import ErrorRow
    from evalspec.validation.validator import LineResult

CHUNK_BYTES = 4 << 20
"""Bytes per chunk: big enough to amortize a round trip, small enough to stream."""

TAIL_SPLIT = 4
"""The last chunks of a file (:func:`chunk_bounds`' ``tail_bytes``) are this many times
smaller: a worker's chunk being checked and the one queued behind it cannot be
taken back (see :mod:`evalspec.validation.pool`), so at the end of a file the other
processes wait for them; quarter-sized, that wait went from ~25 ms to under 5 on a
100k-task file at ``--jobs 2``."""

MIN_BYTES_PER_JOB = 16 << 20
"""The default ``--jobs`` gives each worker at least this much of the file."""

DIGEST_BITS = 32
"""Bits of an id's digest the parent's table compares (tests lower it to make ids
collide: the verdicts must stay the same, decided on the real ids)."""

FAST_PATH_MIN_BYTES = 256 << 10
"""Input smaller than this skips the fast path: building its decoders (and
importing msgspec) costs more than it saves on a few hundred lines."""


class ChunkResult:
    """What checking one chunk found, with line numbers counted from ``origin``.

    A plain slotted class, not attrs: one is built per chunk on the warm path of
    ``evalspec validate``, which does not import attrs. The invalid lines are kept as
    plain rows until :attr:`errors` is read, so a ``--jobs`` worker, which only sends
    them, never imports attrs or builds a record: the parent builds each once, at the
    number it reports (:meth:`numbered_errors`).
    """

    __slots__ = (
        "_errors",
        "_rows",
        "digests",
        "end",
        "ids",
        "lengths",
        "lines",
        "origin",
        "skipped",
        "start",
        "total",
    )

    def __init__(
        self,
        start: int,
        end: int,
        origin: int,
        lines: int,
        total: int,
        rows: list[tuple[int, list[ErrorRow]]],
        ids: str,
        skipped: array[int],
        lengths: array[int],
        digests: bytes | None = None,
    ) -> None:
        self.start = start
        self.end = end
        self.origin = origin
        self.lines = lines
        self.total = total
        self._errors: list[LineResult] | None = None
        self._rows: list[tuple[int, list[ErrorRow]]] = rows
        """Each invalid line's number and its error rows, until :attr:`errors` is read."""
        self.ids = ids
        """The valid lines' task ids joined by newlines (a valid id holds no whitespace)."""
        self.skipped = skipped
        """The numbers of the lines that are not valid tasks (invalid or blank)."""
        self.lengths = lengths
        """Each line's length in bytes, without its newline (to find a line again)."""
        self.digests = digests
        """Instead of ``ids`` (then empty), when the parent keeps a digest table: the
        valid lines' task ids as 32-bit digests (``_core.id_digests``), 4 bytes an id
        rather than the id itself."""

    @property
    def errors(self) -> list[LineResult]:
        """The invalid lines' results, numbered from ``origin``."""
        if self._errors is None:
            self._errors = self.numbered_errors(0)
        return self._errors

    @property
    def n_errors(self) -> int:
        """How many lines are in :attr:`errors`."""
        return len(self._rows)

    def numbered_errors(self, shift: int) -> list[LineResult]:
        """:attr:`errors` with ``shift`` added to every line number."""
        if not shift and self._errors is not None:
            return self._errors
        if not self._rows:
            return []  # a valid chunk: no value class to import
        from evalspec.validation.validator import LineResult

        out = []
        for line, errors in self._rows:
            number = line + shift
            out.append(LineResult(number, None, records(number, errors)))
        return out

    # A worker's result reaches the parent pickled, its invalid lines as the plain
    # rows: pickling attrs records, then building each again renumbered, cost the
    # parent of --jobs 2 about 0.1 s of its time a million lines.
    def __getstate__(self) -> tuple[Any, ...]:
        return (
            self.start,
            self.end,
            self.origin,
            self.lines,
            self.total,
            self._rows,
            self.ids,
            self.skipped,
            self.lengths,
            self.digests,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (
            self.start,
            self.end,
            self.origin,
            self.lines,
            self.total,
            self._rows,
            self.ids,
            self.skipped,
            self.lengths,
            self.digests,
        ) = state
        self._errors = None


class Tally:
    """Running counts for one file, updated while its problems stream out.

    A plain slotted class (the warm path of ``evalspec validate`` builds one per
    file and does not import attrs).
    """

    __slots__ = ("bytes_done", "invalid", "size", "total")

    def __init__(
        self, total: int = 0, invalid: int = 0, bytes_done: int = 0, size: int = 0
    ) -> None:
        self.total = total
        self.invalid = invalid
        self.bytes_done = bytes_done
        self.size = size

    @property
    def valid(self) -> int:
        return self.total - self.invalid

    def __repr__(self) -> str:
        return (
            f"Tally(total={self.total}, invalid={self.invalid}, "
            f"bytes_done={self.bytes_done}, size={self.size})"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Tally)
        return (self.total, self.invalid, self.bytes_done, self.size) == (
            other.total,
            other.invalid,
            other.bytes_done,
            other.size,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as attrs.define made it


def default_jobs(size: int) -> int:
    """One process for small files; up to one per usable core for big ones."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, size // MIN_BYTES_PER_JOB))


def chunk_bounds(
    path: str | os.PathLike[str], size: int, chunk_bytes: int, tail_bytes: int = 0
) -> list[int] | None:
    """Byte offsets ``0 = b0 < b1 < ... < bn = size``, each the start of a line (``[0]``
    for an empty file); None when a line is over the line limit (read it serially).

    Chunks are ``chunk_bytes`` long (to the end of a line), and :data:`TAIL_SPLIT`
    times shorter in the last ``tail_bytes`` of the file."""
    bounds = [0]
    limit = max_line_bytes()
    small = max(1, chunk_bytes // TAIL_SPLIT)

    def step(pos: int) -> int:
        return chunk_bytes if size - pos > tail_bytes else small

    with open(path, "rb") as f:
        at = step(0)
        while at < size:
            f.seek(at - 1)
            # To the end of the line holding byte at-1, never more than the line limit.
            tail = f.readline(limit + 1)
            if len(tail) > limit and not tail.endswith(b"\n"):
                return None
            pos = f.tell()
            if pos >= size:
                break
            bounds.append(pos)
            at = pos + step(pos)
    if size > 0:
        bounds.append(size)
    return bounds


def check_chunk(
    path: str | os.PathLike[str],
    start: int,
    end: int,
    spec: AnySpec,
    fast: FastPath | None,
    identity: tuple[int, int] | None = None,
    digest: Callable[[list[str]], bytes] | None = None,
    buffer: bytearray | None = None,
) -> ChunkResult:
    """Stages 1-5 on the lines in bytes ``start:end`` of ``path`` (what a worker does),
    read into ``buffer`` when it is given and big enough (a worker reuses one).

    :raises FileChanged: ``identity`` is given and ``path`` is no longer that file.
    """
    from evalspec.io.fileidentity import read_span, read_span_into

    data: bytes | memoryview
    if buffer is not None and end - start <= len(buffer):
        data = read_span_into(path, start, end, identity, buffer)
    else:
        data = read_span(path, start, end, identity)
    return check_block(data, start, spec, fast, digest=digest)


def check_block(
    data: bytes | memoryview,
    start: int,
    spec: AnySpec,
    fast: FastPath | None,
    origin: int = 0,
    digest: Callable[[list[str]], bytes] | None = None,
) -> ChunkResult:
    """Stages 1-5 on ``data``: whole lines that start at byte ``start`` of the file,
    numbered from ``origin`` when it is known (a worker does not know it). With
    ``digest`` (``_core.id_digests``) the result carries the ids' digests, not the ids.
    ``data`` may be a view of a buffer read again later (:func:`_reused_blocks`): no
    part of it is kept, the lines handed on are copies."""
    # Line 1 may carry a BOM; any other chunk's first line is numbered (at least)
    # 2 so it is never taken for line 1. The parent renumbers, if need be.
    if origin <= 0:
        origin = 1 if start == 0 else 2
    got: list[Any]  # a str or None a line (True too, from core_block_digests)
    line_digests = None
    if fast is not None and fast.core_block is not None:
        # The compiled core splits the block and vouches for most lines in one pass,
        # building no bytes object for them; the lines it leaves (None) are cut out
        # of the block for the Python fast path, then the precise path. When the
        # caller keeps digests, the core answers True and the id's digest for most
        # vouched lines, building no str for their ids either.
        if digest is not None and fast.core_block_digests is not None:
            got, lengths_bytes, line_digests = fast.core_block_digests(data)
        else:
            got, lengths_bytes = fast.core_block(data)
        lengths = array("q")
        lengths.frombytes(lengths_bytes)
        n = len(got)
        starts = list(itertools.accumulate(lengths, initial=0))

        def line(i: int) -> bytes:
            # bytes() of a bytes slice is that slice; of a view, its copy (the buffer
            # is read into again, and error records keep their line's text).
            return bytes(data[starts[i] : starts[i + 1]])

        vouch_id = fast.vouch_id
        for i in _nones(got):
            got[i] = vouch_id(line(i))
    else:
        # Split exactly as read_lines splits a file (at b"\n", each line keeping
        # it; the line checks drop it). _blocks already bounded the line length,
        # so the hot path takes the C splitter rather than the bounded generator.
        lines = io.BytesIO(data).readlines()

        def line(i: int) -> bytes:
            return lines[i]

        n = len(lines)
        lengths = array("q", map(len, lines))  # line ending included
        # The hot loop runs in C (map); only lines the fast path cannot vouch for
        # (None) come back to Python.
        got = fast.vouch_ids(lines, data) if fast is not None else [None] * n
    rows: list[tuple[int, list[ErrorRow]]] = []
    skipped = array("q")
    blanks = 0
    for i in _nones(got):
        # The precise path; an invalid line's errors stay plain rows (no attrs here).
        outcome = line_rows(origin + i, line(i), spec)
        if outcome is not None and not outcome[1]:
            got[i] = outcome[0]["task_id"]
            continue
        skipped.append(origin + i)
        if outcome is None:
            blanks += 1
        else:
            rows.append((origin + i, outcome[1]))
    end = start + len(data)
    if digest is not None:
        if line_digests is not None and fast is not None and fast.merged_digests is not None:
            digests = fast.merged_digests(got, line_digests)
        else:
            digests = digest(list(filter(None, got)))  # valid ids are never empty
        return ChunkResult(start, end, origin, n, n - blanks, rows, "", skipped, lengths, digests)
    ids = "\n".join(filter(None, got))
    return ChunkResult(start, end, origin, n, n - blanks, rows, ids, skipped, lengths)


def _nones(got: list[Any]) -> list[int]:
    """The positions of ``None`` in ``got``, found in C (``list.index``)."""
    found: list[int] = []
    i = -1
    while True:
        try:
            i = got.index(None, i + 1)
        except ValueError:
            return found
        found.append(i)


def _blocks(stream: IO[bytes], block_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(start offset, whole lines)`` blocks of a stream (a pipe works too); a line
    over the line limit comes as an :class:`OverlongLine` block, the last one."""
    start = 0
    rest = b""
    limit = max_line_bytes()
    while True:
        data = stream.read(block_bytes)
        if not data:
            if rest:
                yield start, rest
            return
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # no line ends in this read: gather reads until one does
            parts = [rest, data]
            gathered = len(rest) + len(data)
            while cut == 0:
                if gathered > limit:
                    yield start, OverlongLine(b"".join(parts)[:80])
                    return
                data = stream.read(block_bytes)
                gathered += len(data)
                if not data:
                    yield start, b"".join(parts)
                    return
                parts.append(data)
                cut = data.rfind(b"\n") + 1
            parts[-1] = data[:cut]
            block = b"".join(parts)
        else:
            block = rest + data[:cut] if rest else data[:cut]
        rest = data[cut:]
        over = _first_overlong(block, limit) if len(block) > limit else None
        if over is not None:
            if over:
                yield start, block[:over]
            yield start + over, OverlongLine(block[over : over + 80])
            return
        yield start, block
        start += len(block)


def _reused_blocks(
    stream: io.BufferedIOBase, block_bytes: int, expected: int | None = None
) -> Iterator[tuple[int, memoryview | OverlongLine]]:
    """:func:`_blocks`, read into one buffer: each block is a view of it, good until the
    next block is asked for (the caller copies what it keeps).

    A fresh bytes object per read (and another for each join with the previous
    read's unfinished line) costs the peak of two or three blocks at once, and a
    page fault per 4 KiB of the file: glibc hands each freed block back to the
    kernel. Here the one buffer is touched once; the unfinished line moves to its
    front. A line longer than the buffer grows it (a new buffer: the caller's last
    view still points into the old one); it shrinks back after that line.

    ``expected`` is the stream's size when it is known (a regular file): a smaller
    file gets a buffer of its own size. ``bytearray(n)`` zeroes all ``n`` bytes, so
    a 4 MiB buffer for a 1 KiB file costs a page fault per 4 KiB (about 1.5 ms, a
    tenth of a warm ``evalspec validate``). A stream longer than expected (a file
    still being written) grows the buffer back to ``block_bytes``.
    """
    limit = max_line_bytes()
    size = max(1, block_bytes)
    buf = bytearray(size if expected is None else max(1, min(size, expected + 1)))
    view = memoryview(buf)
    have = 0  # bytes at buf's front not yet handed out: the start of an unended line
    start = 0
    while True:
        got = stream.readinto(view[have:])
        cut = have
        if got:
            have += got
            cut = buf.rfind(b"\n", 0, have) + 1
        elif not have:
            return
        # else the end of the stream: the last line, without its newline, is a block
        if cut == 0:  # no line ends in the buffer
            if have > limit:
                yield start, OverlongLine(bytes(view[: min(80, have)]))
                return
            if have == len(buf):
                # Never past limit + 1 bytes: the next read then fills it, and a line
                # still unended is over the limit (/dev/zero costs 1.5x the limit).
                grown = bytearray(min(2 * len(buf), limit + 1))
                grown[:have] = view[:have]
                buf, view = grown, memoryview(grown)
            continue
        over = _first_overlong(view[:cut], limit) if cut > limit else None
        if over is not None:
            if over:
                yield start, view[:over]
            yield start + over, OverlongLine(bytes(view[over : min(over + 80, cut)]))
            return
        yield start, view[:cut]
        if not got:
            return
        start += cut
        rest = bytes(view[cut:have])  # a copy: the two spans may overlap
        # Back to the full size after a long line, or when the stream holds more than
        # expected (the small buffer filled).
        long_line_over = len(buf) > size and len(rest) < size
        if long_line_over or (len(buf) < size and have == len(buf)):
            buf = bytearray(size)
            view = memoryview(buf)
        buf[: len(rest)] = rest
        have = len(rest)


def _first_overlong(block: bytes | memoryview, limit: int) -> int | None:
    """The offset of the first line of ``block`` longer than ``limit`` bytes, if any."""
    offset = 0
    if isinstance(block, memoryview):
        block = bytes(block)  # only for blocks over the limit (64 MiB by default)
    for line in block.split(b"\n"):
        if len(line) > limit:
            return offset
        offset += len(line) + 1
    return None


# -- worker processes -------------------------------------------------------------

_worker: dict[str, Any] = {}


def _init_worker(spec_doc: dict[str, Any], fast: bool, digests: bool = False) -> None:
    from evalspec.registry.snapshot import decode_tables

    # Ctrl-C is the parent's to handle: it stops the pool and exits 130; SIGTERM
    # ends a worker at once, silently.
    in_worker()
    # The parent's spec version, sent as JSON-ready data (it pickles under
    # spawn too): a worker neither loads plugins nor reads the project. Read as the
    # plain tables, as a warm parent holds them: the attrs classes of
    # evalspec.versions (and what it imports) cost a worker ~40 ms to import.
    spec = decode_tables(spec_doc)
    _worker["spec"] = spec
    _worker["fast"], _worker["digest"] = _chunk_checks(spec, fast, digests)


def _chunk_checks(
    spec: AnySpec, fast: bool, digests: bool
) -> tuple[FastPath | None, Callable[[list[str]], bytes] | None]:
    """What checking a chunk needs besides its bytes, the same in a worker and in the
    parent that checks chunks itself: the fast path (unless ``fast`` is off), and the
    core's digest function when the parent keeps a digest table (``digests``): then
    the chunk's ids go to it as digests, not ids (4 bytes an id). Without the core, ids
    are sent, which that table takes as well."""
    from evalspec.validation.fast import FastPath, compiled_core

    core = compiled_core() if digests else None
    return (FastPath(spec) if fast else None), (None if core is None else core.id_digests)


def _work(job: tuple[str, int, int, tuple[int, int]]) -> ChunkResult:
    path, start, end, identity = job
    spec, fast, digest = _worker["spec"], _worker["fast"], _worker["digest"]
    # One read buffer per worker: the chunk's result keeps no part of it. A chunk
    # longer than the buffer (its last line runs past CHUNK_BYTES) is read on its own.
    buffer = _worker.get("buffer")
    if buffer is None:
        buffer = _worker["buffer"] = bytearray(CHUNK_BYTES + (64 << 10))
    return check_chunk(path, start, end, spec, fast, identity, digest, buffer)


# -- the parent -------------------------------------------------------------------


def iter_problems(
    path: str,
    *,
    spec_version: int | None = None,
    jobs: int | None = None,
    tally: Tally | None = None,
    on_chunk: Callable[[Tally], None] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    fast: bool = True,
    spec: AnySpec | None = None,
) -> Iterator[LineResult]:
    """The invalid lines of ``path`` in line order, exactly as :func:`iter_validate`
    reports them, checked in ``jobs`` processes (default: :func:`default_jobs`).

    ``tally`` (if given) holds the running counts; ``on_chunk`` is called after
    each chunk (for progress). ``spec`` is the spec version to check against
    (default: that of :func:`~evalspec.registry.build.default_registry` at
    ``spec_version``). Only task ids are kept in memory.

    :raises OSError: the file cannot be opened or read.
    """
    tally = tally if tally is not None else Tally()
    if spec is None:
        from evalspec.registry.build import default_registry

        spec = default_registry(spec_version).spec
    first_line = 1
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        regular = stat.S_ISREG(st.st_mode)
        tally.size = st.st_size if regular else 0
        # Big regular files get the compact table; small ones skip loading the core.
        big = regular and st.st_size >= FAST_PATH_MIN_BYTES
        seen: IdTable | DigestIdTable | None = _id_table(f, spec) if fast and big else None
        if seen is None:
            seen = IdTable()
        n_jobs = default_jobs(tally.size) if jobs is None else max(1, jobs)
        bounds = None
        # A line limit below the chunk size is checked line by line, in this process.
        if regular and n_jobs > 1 and tally.size > chunk_bytes and max_line_bytes() >= chunk_bytes:
            # Two chunks a process at the end (being checked, queued): cut finer.
            bounds = chunk_bounds(path, tally.size, chunk_bytes, 2 * n_jobs * chunk_bytes)
        if bounds is None:
            fast_path = None
            # With the digest table, a block's ids go to it as digests (computed in C
            # from the list the block's check built), as a worker sends them: no joined
            # string of ids to split into a million str objects again.
            digest = None
            if isinstance(seen, DigestIdTable):
                from evalspec.validation.fast import compiled_core

                core = compiled_core()
                digest = None if core is None else core.id_digests
            # One read buffer for the whole file: each block is checked and resolved
            # (duplicates' lines read back from it) before the next read.
            expected = tally.size if regular else None
            for start, data in _reused_blocks(f, chunk_bytes, expected):
                if isinstance(data, OverlongLine):
                    from evalspec.validation.validator import LineResult

                    tally.total += 1
                    tally.invalid += 1
                    yield LineResult(first_line, None, (overlong_record(first_line, data),))
                    return
                if fast and fast_path is None and start + len(data) >= FAST_PATH_MIN_BYTES:
                    from evalspec.validation.fast import FastPath

                    fast_path = FastPath(spec)  # the same verdicts, sooner on big input
                # Numbered as they are reported: no error record is built twice.
                result = check_block(data, start, spec, fast_path, first_line, digest)
                if start == 0 and isinstance(seen, DigestIdTable):
                    seen.reserve(_expected_ids(result, tally.size))
                yield from _resolve(result, first_line, seen, _in_block(data, start), tally)
                first_line += result.lines
                if on_chunk is not None:
                    on_chunk(tally)
            return
        from evalspec.io.fileidentity import file_identity
        from evalspec.registry.snapshot import encode_spec
        from evalspec.validation.pool import ordered_results

        # The workers open the file by name: they check it is still the one open here.
        identity = file_identity(st)
        spans = [(os.fspath(path), a, b, identity) for a, b in itertools.pairwise(bounds)]
        # N jobs are N - 1 workers and this process, which checks chunks itself while
        # the next result is not ready (its own work between results is then not
        # taken from the workers' cores).
        results = ordered_results(
            _work,
            spans,
            workers=min(n_jobs - 1, len(spans)),
            initializer=_init_worker,
            initargs=(encode_spec(spec), fast, seen.needs_offsets),
            path=path,
            here=_checker(spec, fast, seen),
        )
        try:
            for result in results:
                if result.start == 0 and isinstance(seen, DigestIdTable):
                    seen.reserve(_expected_ids(result, tally.size))
                yield from _resolve(result, first_line, seen, _in_file(f), tally)
                first_line += result.lines
                if on_chunk is not None:
                    on_chunk(tally)
        finally:
            results.close()  # a reader that stops early ends the workers now, not at GC


def _checker(
    spec: AnySpec, fast: bool, seen: IdTable | DigestIdTable
) -> Callable[[tuple[str, int, int, tuple[int, int]]], ChunkResult]:
    """What a worker does with a chunk (:func:`_work`), for the parent to do itself:
    the same checks, digests when its table keeps them, one read buffer of its own.

    The fast path is built now, before the pool starts: workers forked after it
    inherit its imports (msgspec's among them) instead of each importing them again.
    The buffer is made at the first chunk (made before the fork, its pages would be
    copied when this process first writes them)."""
    fast_path, digest = _chunk_checks(spec, fast, seen.needs_offsets)
    buffers: list[bytearray] = []

    def check(job: tuple[str, int, int, tuple[int, int]]) -> ChunkResult:
        path, start, end, identity = job
        if not buffers:
            buffers.append(bytearray(CHUNK_BYTES + (64 << 10)))
        return check_chunk(path, start, end, spec, fast_path, identity, digest, buffers[0])

    return check


def _expected_ids(first: ChunkResult, size: int) -> int:
    """The ids a file of ``size`` bytes will hold, judged from its first chunk (5% more,
    and at most one id per 16 bytes): the digest table makes room for them at once."""
    read = max(1, first.end - first.start)
    valid = first.total - first.n_errors
    return min(size // 16, int(valid * size / read * 1.05))


def _id_table(f: IO[bytes], spec: AnySpec) -> DigestIdTable | None:
    """The compact id table for the regular file ``f``, when the compiled core is built
    (its digests are decided by reading the first line again: ``f`` can be)."""
    from evalspec.validation.fast import compiled_core

    core = compiled_core()
    # Its slots hold 32-bit line numbers: a file that may have 2**32 lines or more
    # (one newline a line) keeps the dict of ids, exact too.
    if core is None or os.fstat(f.fileno()).st_size >= 2**32 - 1:
        return None
    fd, limit = f.fileno(), max_line_bytes() + 1
    from evalspec.io.fileidentity import changed, file_signature

    signature = file_signature(f)

    # One window, read into again for every line looked up: a fresh 64 KiB bytes
    # object per read (two or three a repeated id) is mostly page faults, since the
    # allocator hands each freed one back (the parent of --jobs 2 spent 0.17 s a
    # million lines on them).
    window = bytearray(1 << 16)
    view = memoryview(window)
    vouch: list[Callable[[bytes], str | None]] = []  # the fast path's, at the first line

    def id_at(offset: int, skip: int, line: int) -> str:
        # The ids were read from this file's bytes as they were: rewritten since, its
        # lines could tell a repeated id from a new one wrongly.
        if file_signature(f) != signature:
            raise changed()
        # The table keeps one offset per 64 lines: the line is `skip` lines further on.
        # Every line before it was read whole once (none is over the limit).
        while True:
            got = _pread_into(fd, view, offset)
            if not got:
                raise changed()
            pos = 0
            while skip:
                cut = window.find(b"\n", pos, got)
                if cut < 0:
                    break
                pos = cut + 1
                skip -= 1
            if not skip:
                break
            offset += got
        cut = window.find(b"\n", pos, got)
        if cut >= 0:
            raw = bytes(view[pos : cut + 1])
        else:  # the line runs past the window: read the rest of it (at most the limit)
            parts = [bytes(view[pos:got])]
            have, at = got - pos, offset + got
            while have < limit:
                part = os.pread(fd, min(1 << 16, limit - have), at)
                parts.append(part)
                have += len(part)
                at += len(part)
                if not part or b"\n" in part:
                    break
            raw = b"".join(parts)
            cut = raw.find(b"\n")
            raw = raw[: cut + 1] if cut >= 0 else raw
        if len(raw) > limit:  # no valid line is: the file's bytes are not those read
            raise changed()
        # Most lines read again are vouched for by the fast path (the id of a valid
        # line, as the precise path decodes it) at a tenth of the precise path's cost.
        if not vouch:
            from evalspec.validation.fast import FastPath

            vouch.append(FastPath(spec).vouch_id)
        task_id = vouch[0](raw)
        if task_id is not None:
            return task_id
        outcome = line_outcome(line, raw, spec)
        # It was a valid task when it was read: anything else is another file's bytes.
        if outcome is None or outcome[1] or type(outcome[0]) is not dict:
            raise changed()
        precise_id: str = outcome[0]["task_id"]
        return precise_id

    return DigestIdTable(id_at, core.DigestTable(weak_bits=DIGEST_BITS))


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Read the bytes of ``fd`` at ``offset`` into ``view``, as many as it holds (fewer
    only at the end of the file, or when a read is cut short: the caller reads on
    from there); returns how many."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, len(view), offset)  # no preadv (macOS before 11)
    view[: len(data)] = data
    return len(data)


def _in_block(data: bytes | memoryview, start: int) -> Callable[[int], bytes]:
    if isinstance(data, memoryview):
        # A view from _reused_blocks starts at its buffer's first byte: search the buffer.
        obj = data.obj
        assert isinstance(obj, bytearray)
        base: bytes | bytearray = obj
    else:
        base = data
    end = len(data)

    def line_at(offset: int) -> bytes:
        i = offset - start
        j = base.find(b"\n", i, end)
        return bytes(data[i : j if j >= 0 else end])

    return line_at


def _in_file(f: IO[bytes]) -> Callable[[int], bytes]:
    def line_at(offset: int) -> bytes:
        f.seek(offset)
        return f.readline()

    return line_at


def _resolve(
    result: ChunkResult,
    first_line: int,
    seen: IdTable | DigestIdTable,
    line_at: Callable[[int], bytes],
    tally: Tally,
) -> Iterator[LineResult]:
    shift = first_line - result.origin
    digests = result.digests
    ids: list[str] = []
    if digests is None:
        ids = result.ids.split("\n") if result.ids else []
    # Each id's line number as reported, and the byte offset of its line: for every
    # line with a table that reads lines again, else only once a repeat is found.
    at: array[int] | None = None
    if seen.needs_offsets:
        from evalspec.validation.fast import compiled_core  # the table's, imported

        line_of, at = span_lines(result, shift, compiled_core())
        if digests is not None:
            assert isinstance(seen, DigestIdTable)  # a worker sends digests only to one
            repeats = seen.add_digests(digests, line_of, 0, at)
        else:
            repeats = seen.add_all(ids, line_of, 0, at)
    else:
        skip = set(result.skipped)
        end = result.origin + result.lines
        numbers = array("q", itertools.filterfalse(skip.__contains__, range(result.origin, end)))
        repeats = seen.add_all(ids, numbers, shift)
    duplicates: list[LineResult] = []
    if repeats:
        from evalspec.validation.validator import LineResult, duplicate_record

        if at is None:
            line_of, at = span_lines(result, shift)  # in Python: a small file, repeats
        for pos, first in repeats:
            offset = at[pos]
            number = line_of[pos]
            if isinstance(seen, DigestIdTable) and digests is not None:
                task_id = seen.read_id(offset, number)  # the worker sent its digest only
            else:
                task_id = ids[pos]
            record = duplicate_record(number, task_id, first, line_at(offset))
            duplicates.append(LineResult(number, None, (record,)))
    errors = result.numbered_errors(shift)
    tally.total += result.total
    tally.invalid += len(errors) + len(duplicates)
    tally.bytes_done = result.end
    if duplicates:
        import heapq

        yield from heapq.merge(errors, duplicates, key=lambda r: r.line)
    else:
        yield from errors


def span_lines(
    result: ChunkResult, shift: int, core: Any | None = None
) -> tuple[array[int], array[int]]:
    """The line number (plus ``shift``) and the byte offset of each line of ``result``
    that holds an id, in order: one C loop with the compiled ``core`` (the parent runs
    this for every line of a file it keeps digests of), the same numbers in Python."""
    line_of, at = array("q"), array("q")
    if core is not None:
        lines, offsets = core.span_lines(
            result.lengths, result.skipped, result.origin, shift, result.start
        )
        line_of.frombytes(lines)
        at.frombytes(offsets)
        return line_of, at
    skip = set(result.skipped)
    # One start more than lines (the end of the last one): not strict.
    starts = itertools.accumulate(result.lengths, initial=result.start)
    numbers = range(result.origin, result.origin + result.lines)
    for number, offset in zip(numbers, starts, strict=False):
        if number not in skip:
            line_of.append(number + shift)
            at.append(offset)
    return line_of, at


__all__ = [
    "ChunkResult",
    "Tally",
    "check_block",
    "check_chunk",
    "default_jobs",
    "iter_problems",
    "span_lines",
]
