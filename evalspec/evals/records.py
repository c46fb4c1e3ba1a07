"""Reading the records of a dataset file the way the validator splits it into lines."""

from __future__ import annotations

import io
from typing import Any

import attrs

from evalspec.io.jsonline import decode_bytes, parse_line


@attrs.frozen
class Records:
    """The JSON values of a file's non-blank lines, and the lines that did not parse."""

    values: list[tuple[int, Any]]
    unparsed: list[int]

    @property
    def complete(self) -> bool:
        return not self.unparsed


def is_lfs_pointer(data: bytes) -> bool:
    """Whether ``data`` is a Git LFS pointer file rather than the content it stands for.

    The one check of the package (:func:`evalspec.manifest.lfs.parse_lfs_pointer`):
    a pointer is under 1024 bytes, as git-lfs reads it.
    """
    if not data.startswith(b"version "):
        return False  # parse_lfs_pointer's first test, without importing the manifest
        # package (urllib, http, ssl: more time than linting a small dataset)
    from evalspec.manifest.lfs import parse_lfs_pointer

    return parse_lfs_pointer(data) is not None


def read_records(data: bytes) -> Records:
    """Parse each non-blank line (``\\n``-terminated, ``\\r`` dropped, BOM accepted)."""
    from evalspec.validation.validator import line_content, read_lines

    values: list[tuple[int, Any]] = []
    unparsed: list[int] = []
    # The validator's line reader and line ending rules, so lint, diff and
    # validate agree on what line N is.
    for number, line in enumerate(read_lines(io.BytesIO(data)), start=1):
        raw = line_content(line, number)
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
