"""Validating a sharded dataset where it lives: a glob or fsspec URL of JSONL shards.

``evalspec validate 's3://bucket/evals/*.jsonl'`` (or a quoted local glob)
names ONE dataset cut into shards: the matching files, in sorted name order.
Each shard is checked on its own (stages 1-5, and task-id uniqueness inside
the shard, exactly as for one file); uniqueness across shards is decided in
shard order, then line order: the first use of an id counts, a later use in a
later shard is a ``duplicate_task_id`` error on that line, naming the shard
and line that used it first. The errors of a shard are reported with its name
and its own line numbers, so the output is what validating the concatenated
shards would find, told shard by shard.

The work runs in three steps, so that with ``--executor ray`` no node ever
holds every id:

1. one job per shard (in parallel): errors, counts, and the shard's first-use
   ids with line and byte offset, split into ``partitions`` lists by a stable
   hash of the id (CRC-32, not Python's salted ``hash``);
2. one job per partition: all shards' lists of that partition, in shard order;
   an id already seen in an earlier shard is a cross-shard duplicate. Memory
   per job is about ``1/partitions`` of the ids;
3. here: each duplicate's line is read back by its offset, and every shard's
   errors are merged in line order.

Locally the same steps run in this process (one partition), so the output is
byte for byte the same with or without Ray.
"""

from __future__ import annotations

import errno
import glob
import heapq
import importlib
import itertools
import os
import zlib
from collections.abc import Callable, Sequence
from typing import IO, Any

import attrs

from evalspec.errors import EvalspecError, MissingDependencyError
from evalspec.registry.build import default_registry
from evalspec.validation.engine import CHUNK_BYTES, Tally, _blocks, _in_block, _resolve, check_block
from evalspec.validation.fast import FastPath
from evalspec.validation.idtable import IdTable
from evalspec.validation.validator import LineResult, duplicate_record

Entry = tuple[str, int, int]
"""``(task id, line, byte offset of the line)`` of an id's first use in a shard."""


class ShardError(EvalspecError):
    """A pattern matches no shard, or a shard cannot be listed."""


class RemoteError(OSError):
    """A remote file system failed with an error of its own that is no OSError
    (botocore's ``NoCredentialsError``, an HTTP client's): an I/O error of the
    shard, reported in one line, not a traceback."""


def _remote_call(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except (OSError, EvalspecError):
        raise
    except Exception as exc:
        raise RemoteError(errno.EIO, str(exc) or type(exc).__name__) from exc


class _RemoteFile:
    """An fsspec file whose every failure is an OSError (see :class:`RemoteError`)."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def read(self, size: int = -1) -> bytes:
        data: bytes = _remote_call(lambda: self._f.read(size))
        return data

    def readline(self) -> bytes:
        # No size: fsspec's readline takes none. Only a line already read once in
        # blocks (so within the line limit) is read again this way.
        line: bytes = _remote_call(self._f.readline)
        return line

    def seek(self, offset: int) -> int:
        at: int = _remote_call(lambda: self._f.seek(offset))
        return at

    def close(self) -> None:
        _remote_call(self._f.close)

    def __enter__(self) -> _RemoteFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_pattern(path: str) -> bool:
    """True for a URL (``scheme://``) or a path with glob characters: a sharded dataset."""
    return "://" in path or glob.has_magic(path)


def _fsspec() -> Any:
    try:
        # By name: fsspec ships no type information.
        return importlib.import_module("fsspec")
    except ImportError as exc:
        raise MissingDependencyError("a URL of shards", "fsspec", "ray") from exc


def expand(pattern: str) -> list[str]:
    """The shards of ``pattern``, sorted: local glob matches, or fsspec URLs.

    :raises ShardError: nothing matches.
    :raises MissingDependencyError: a URL without fsspec (or its protocol's package).
    """
    if "://" not in pattern:
        found = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
        if not glob.has_magic(pattern):
            found = [pattern]  # a plain path: opening it reports a missing file
    else:
        fsspec = _fsspec()
        try:
            fs, _, paths = fsspec.core.get_fs_token_paths(pattern)
        except ImportError as exc:
            raise MissingDependencyError(
                f"{pattern.split('://')[0]}:// URLs", str(exc), "ray"
            ) from exc
        except (OSError, ValueError) as exc:
            raise ShardError(f"cannot list {pattern}: {exc}") from None
        except Exception as exc:  # the file system's own (botocore's NoCredentialsError)
            raise ShardError(f"cannot list {pattern}: {exc or type(exc).__name__}") from None
        found = sorted(fs.unstrip_protocol(p) for p in paths)
    if not found:
        raise ShardError(f"{pattern} matches no shard")
    return found


def open_shard(shard: str) -> IO[bytes]:
    """A binary stream of a shard (a local path, or an fsspec URL)."""
    if "://" not in shard:
        return open(shard, "rb")
    fsspec = _fsspec()
    remote = _RemoteFile(_remote_call(lambda: fsspec.open(shard, "rb").open()))
    # It has the methods the readers call (read, readline, seek, close, with).
    f: IO[bytes] = remote  # type: ignore[assignment]
    return f


def partition_of(task_id: str, partitions: int) -> int:
    """A stable partition for an id: the same in every process and on every node."""
    return zlib.crc32(task_id.encode("utf-8", "surrogatepass")) % partitions


@attrs.frozen
class ShardSummary:
    """What step 1 found in one shard, apart from its ids."""

    shard: str
    total: int
    errors: list[LineResult]


def check_shard(
    shard: str, spec_version: int | None, partitions: int
) -> tuple[ShardSummary, list[list[Entry]]]:
    """Step 1: one shard's errors and counts, and its first-use ids by partition.

    :raises OSError: the shard cannot be read.
    """
    spec = default_registry(spec_version).spec
    fast = FastPath(spec)
    seen = IdTable()
    tally = Tally()
    errors: list[LineResult] = []
    parts: list[list[Entry]] = [[] for _ in range(partitions)]
    first_line = 1
    with open_shard(shard) as f:
        for start, data in _blocks(f, CHUNK_BYTES):
            result = check_block(data, start, spec, fast)
            errors.extend(_resolve(result, first_line, seen, _in_block(data, start), tally))
            shift = first_line - result.origin
            skip = set(result.skipped)
            numbers = itertools.filterfalse(
                skip.__contains__, range(result.origin, result.origin + result.lines)
            )
            starts = list(itertools.accumulate(result.lengths, lambda a, b: a + b + 1, initial=0))
            ids = result.ids.split("\n") if result.ids else []
            for task_id, number in zip(ids, numbers, strict=True):
                line = number + shift
                if seen.get(task_id) == line:  # its first use in this shard
                    offset = result.start + starts[number - result.origin]
                    parts[partition_of(task_id, partitions)].append((task_id, line, offset))
            first_line += result.lines
    return ShardSummary(shard, tally.total, errors), parts


Duplicate = tuple[int, int, int, str, int, int]
"""``(shard index, line, offset, task id, first shard index, first line)``."""


def cross_duplicates(*parts: list[Entry]) -> list[Duplicate]:
    """Step 2: one partition's ids of every shard, in shard order -> cross-shard repeats."""
    first: dict[str, tuple[int, int]] = {}
    found: list[Duplicate] = []
    for index, entries in enumerate(parts):
        for task_id, line, offset in entries:
            earlier = first.get(task_id)
            if earlier is None:
                first[task_id] = (index, line)
            else:
                found.append((index, line, offset, task_id, *earlier))
    return found


@attrs.frozen
class ShardReport:
    """One shard's verdict: every error in line order, and its counts."""

    shard: str
    total: int
    errors: list[LineResult]

    @property
    def invalid(self) -> int:
        return len(self.errors)


def _read_line(shard: str, offset: int) -> bytes:
    with open_shard(shard) as f:
        f.seek(offset)
        return f.readline()


def _merge(summaries: Sequence[ShardSummary], duplicates: Sequence[Duplicate]) -> list[ShardReport]:
    """Step 3: cross-shard duplicate records merged into each shard's errors."""
    by_shard: dict[int, list[LineResult]] = {}
    for index, line, offset, task_id, first_index, first_line in sorted(duplicates):
        record = duplicate_record(
            line, task_id, first_line, _read_line(summaries[index].shard, offset)
        )
        where = summaries[first_index].shard
        record = attrs.evolve(
            record, message=f"task_id {task_id!r} is already used on line {first_line} of {where}"
        )
        by_shard.setdefault(index, []).append(LineResult(line, None, (record,)))
    out = []
    for index, s in enumerate(summaries):
        extra = by_shard.get(index, [])
        errors = list(heapq.merge(s.errors, extra, key=lambda r: r.line)) if extra else s.errors
        out.append(ShardReport(s.shard, s.total, errors))
    return out


def validate_shards_local(
    shards: Sequence[str],
    spec_version: int | None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[ShardReport]:
    """Validate ``shards`` as one dataset in this process; ``progress(done, total)``
    after each shard."""
    results = []
    for done, shard in enumerate(shards, start=1):
        results.append(check_shard(shard, spec_version, 1))
        if progress is not None:
            progress(done, len(shards))
    duplicates = cross_duplicates(*(parts[0] for _, parts in results))
    return _merge([summary for summary, _ in results], duplicates)


def validate_shards_ray(
    shards: Sequence[str],
    spec_version: int | None,
    *,
    address: str | None = None,
    partitions: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[ShardReport]:
    """Validate ``shards`` as one dataset on a Ray cluster (shards read on the nodes).

    :raises OSError: a shard cannot be read (on its node).
    """
    from evalspec.cluster.ray import connect, import_ray

    started = not import_ray().is_initialized()
    ray = connect(address)
    try:
        return _on_ray(ray, shards, spec_version, partitions, progress)
    finally:
        if started:
            ray.shutdown()


def _on_ray(
    ray: Any,
    shards: Sequence[str],
    spec_version: int | None,
    partitions: int | None,
    progress: Callable[[int, int], None] | None,
) -> list[ShardReport]:
    n_parts = partitions or max(1, int(ray.cluster_resources().get("CPU", 1)))
    step1 = ray.remote(num_returns=n_parts + 1)(_check_shard_flat)
    step2 = ray.remote(cross_duplicates)
    refs = [step1.remote(s, spec_version, n_parts) for s in shards]
    summaries = []
    for done, shard_refs in enumerate(refs, start=1):
        try:
            summaries.append(ray.get(shard_refs[0]))
        except ray.exceptions.RayTaskError as exc:
            # A shard its node cannot read is the same I/O error as a local one.
            cause = getattr(exc, "cause", None)
            if isinstance(cause, OSError):
                raise cause from None
            raise
        if progress is not None:
            progress(done, len(refs))
    dup_refs = [step2.remote(*(r[1 + p] for r in refs)) for p in range(n_parts)]
    duplicates = [d for part in ray.get(dup_refs) for d in part]
    return _merge(summaries, duplicates)


def _check_shard_flat(shard: str, spec_version: int | None, partitions: int) -> tuple[Any, ...]:
    summary, parts = check_shard(shard, spec_version, partitions)
    return (summary, *parts)


__all__ = [
    "ShardError",
    "ShardReport",
    "check_shard",
    "cross_duplicates",
    "expand",
    "is_pattern",
    "partition_of",
    "validate_shards_local",
    "validate_shards_ray",
]
