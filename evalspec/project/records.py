"""Reading the records of a dataset file the way the validator splits it into lines."""

from __future__ import annotations

from typing import Any

import attrs

from evalspec.jsonline import decode_bytes, parse_line

LFS_SPEC_LINES = (
    b"version https://git-lfs.github.com/spec/v1",
    b"version https://hawser.github.com/spec/v1",  # the pre-release alias git-lfs still reads
)
_LFS_MAX_SIZE = 1024  # git-lfs never writes a pointer larger than this


@attrs.frozen
class Records:
    """The JSON values of a file's non-blank lines, and the lines that did not parse."""

    values: list[tuple[int, Any]]
    unparsed: list[int]

    @property
    def complete(self) -> bool:
        return not self.unparsed


def is_lfs_pointer(data: bytes) -> bool:
    """Whether ``data`` is a Git LFS pointer file rather than the content it stands for."""
    if len(data) > _LFS_MAX_SIZE:
        return False
    first = data.split(b"\n", 1)[0].rstrip(b"\r")
    return first in LFS_SPEC_LINES and b"\noid sha256:" in data


def read_records(data: bytes) -> Records:
    """Parse each non-blank line (``\\n``-terminated, ``\\r`` dropped, BOM accepted)."""
    values: list[tuple[int, Any]] = []
    unparsed: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.removesuffix(b"\r")
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        text, problem = decode_bytes(raw)
        if problem is not None or text is None:
            unparsed.append(number)
            continue
        if not text.strip():
            continue
        value, problems = parse_line(text)
        if problems:
            unparsed.append(number)
        else:
            values.append((number, value))
    return Records(values, unparsed)
