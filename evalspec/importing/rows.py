"""Reading benchmark rows as they are published: JSON Lines, CSV and (with the
``parquet`` extra) Parquet.

Each reader yields one :class:`Row` per record, numbered from 1, or a row that
carries the problem that kept it from being read. A problem after which the
rest of the file cannot be trusted (an overlong line, a broken CSV quote, bytes
that are not UTF-8 in a CSV) is the last row yielded, so the caller reports
where reading stopped instead of silently importing a prefix.

Row numbers: a JSONL row is its physical line (blank lines count, as the
validator counts them); a CSV row is its record, header excluded, with
``line`` the physical line it starts on (a quoted field may hold newlines); a
Parquet row is its position in the file.
"""

from __future__ import annotations

import csv
import gzip
import importlib
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

import attrs

from evalspec.errors import MissingDependencyError
from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.linelimit import OverlongLine, bounded_lines, max_line_bytes, overlong_message

HEADER = 0
"""The row number of a problem with a CSV's header (before any row)."""


@attrs.frozen
class RowProblem:
    """Why a row gives no task: a rule code, the field (or column) concerned, a sentence."""

    rule: str
    field: str | None
    message: str


@attrs.frozen
class Row:
    """One record of the input: its values, or the problem that kept it from being read."""

    number: int
    line: int
    values: Mapping[str, Any] | None = None
    problem: RowProblem | None = None


def named_format(path: str | os.PathLike[str]) -> str | None:
    """The format the file's suffix names (``.jsonl.gz`` is JSONL, read through gzip, as
    HumanEval is published), or None."""
    name = os.fspath(path).lower().removesuffix(".gz")
    for suffix, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".csv", "csv")):
        if name.endswith(suffix):
            return fmt
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    return None


def input_format(path: str | os.PathLike[str], declared: str | None) -> str:
    """The mapping's ``format``, else the one the suffix names, else JSONL."""
    return declared or named_format(path) or "jsonl"


def _open_binary(path: Path) -> BinaryIO:
    if path.suffix == ".gz":
        # GzipFile is a binary stream (typeshed does not spell it as one).
        return cast(BinaryIO, gzip.GzipFile(path, "rb"))
    return open(path, "rb")


def read_jsonl(path: Path) -> Iterator[Row]:
    """Each non-blank line as one JSON object. :raises OSError: unreadable."""
    number = 0
    with _open_binary(path) as f:
        try:
            for number, raw in enumerate(bounded_lines(f), start=1):
                row = _jsonl_row(number, raw)
                if row is not None:
                    yield row
                if isinstance(raw, OverlongLine):
                    return
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            message = f"the gzip stream is broken, the rest is not read: {exc}"
            yield Row(number + 1, number + 1, problem=RowProblem("unreadable", None, message))


def _jsonl_row(number: int, raw: bytes) -> Row | None:
    """The row of one line; None for a blank line."""
    if isinstance(raw, OverlongLine):
        return Row(number, number, problem=RowProblem("invalid_json", None, overlong_message()))
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # the UTF-8 BOM a Windows editor writes
    text, bad = decode_bytes(raw.rstrip(b"\r\n"))
    if bad is not None or text is None:
        message = bad.message if bad is not None else "not UTF-8"
        return Row(number, number, problem=RowProblem("invalid_json", None, message))
    if not text.strip():
        return None
    value, problems = parse_line(text)
    if problems:
        first = problems[0]
        return Row(number, number, problem=RowProblem(first.rule, first.field, first.message))
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else "not an object"
        message = f"a row is a JSON object, found {kind}"
        return Row(number, number, problem=RowProblem("not_object", None, message))
    return Row(number, number, values=value)


def read_csv(path: Path, columns: Sequence[str] | None) -> Iterator[Row]:
    """Each record as ``{column: text}``: the header names the columns, unless the mapping
    gives ``columns`` (MMLU's CSVs have no header). :raises OSError: unreadable."""
    # csv's own field limit (128 KiB) is below real long-context rows: the line limit
    # of JSONL files bounds a field instead. The limit is process-wide: restored after.
    previous = csv.field_size_limit(max_line_bytes())
    try:
        with open(path, "rb") as f:
            yield from _csv_rows(_text_lines(f), columns)
    finally:
        csv.field_size_limit(previous)


class _Overlong(Exception):
    """Internal: a physical line over the line limit (csv would read it whole)."""


def _text_lines(f: BinaryIO) -> Iterator[str]:
    """The physical lines of a CSV, each within the line limit, strictly UTF-8 (a BOM
    at the start dropped). csv reads its input a line at a time: without the limit a
    file without newlines (``/dev/zero``) would be read into memory, forever."""
    for index, raw in enumerate(bounded_lines(f)):
        if isinstance(raw, OverlongLine):
            raise _Overlong
        yield (raw[3:] if index == 0 and raw.startswith(b"\xef\xbb\xbf") else raw).decode("utf-8")


def _csv_rows(lines: Iterator[str], columns: Sequence[str] | None) -> Iterator[Row]:
    reader = csv.reader(lines, strict=True)
    names = list(columns) if columns is not None else None
    number = 0
    start = 1
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError, _Overlong) as exc:
            where = "" if names is not None else " (in the header)"
            reason = overlong_message() if isinstance(exc, _Overlong) else str(exc)
            message = f"cannot read the CSV from here on{where}: {reason}"
            yield Row(number + 1, start, problem=RowProblem("unreadable", None, message))
            return
        first, start = start, reader.line_num + 1
        if not record:
            continue  # a blank line
        if names is None:
            names = record
            problem = _header_problem(names)
            if problem is not None:
                yield Row(HEADER, first, problem=problem)
                return
            continue
        number += 1
        if len(record) != len(names):
            expected = "the header" if columns is None else "the mapping's columns"
            message = f"the row has {len(record)} fields and {expected} {len(names)}"
            yield Row(number, first, problem=RowProblem("row_shape", None, message))
            continue
        yield Row(number, first, values=dict(zip(names, record, strict=True)))


def _header_problem(names: Sequence[str]) -> RowProblem | None:
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            return RowProblem("bad_header", None, "the header has an empty column name")
        if name in seen:
            return RowProblem("bad_header", name, f"the header names the column {name!r} twice")
        seen.add(name)
    return None


def read_parquet(path: Path) -> Iterator[Row]:
    """Each row of a Parquet file, read a batch at a time. :raises OSError: unreadable.
    :raises MissingDependencyError: pyarrow is not installed."""
    try:
        # By name: pyarrow ships no type information.
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise MissingDependencyError("reading Parquet", "pyarrow", "parquet") from None
    pa: Any = importlib.import_module("pyarrow")
    number = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
            for values in batch.to_pylist():
                number += 1
                yield Row(number, number, values=values)
    except pa.ArrowException as exc:
        if isinstance(exc, OSError) and not number:
            raise  # the file cannot be opened at all: an I/O error, not a row
        what = "not a Parquet file" if not number else "the file is broken from here on"
        message = f"{what}: {exc}"
        yield Row(number + 1, number + 1, problem=RowProblem("unreadable", None, message))


def read_rows(
    path: str | os.PathLike[str], fmt: str, columns: Sequence[str] | None = None
) -> Iterator[Row]:
    """The rows of ``path`` in format ``fmt``. :raises OSError: unreadable."""
    path = Path(path)
    if fmt == "csv":
        return read_csv(path, columns)
    if fmt == "parquet":
        return read_parquet(path)
    return read_jsonl(path)


__all__ = ["HEADER", "Row", "RowProblem", "input_format", "named_format", "read_rows"]
