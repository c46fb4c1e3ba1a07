"""Recognising a Git LFS pointer file (the spec: git-lfs docs/spec.md).

A checkout without ``git lfs pull`` holds small text pointers instead of the
data; hashing one gives a bare mismatch that hides the real fix, so the
pointer shape gets its own message.
"""

from __future__ import annotations

import os
import re

import attrs

LFS_SPEC_VERSIONS = (
    "https://git-lfs.github.com/spec/v1",
    # The pre-release name, still readable per the spec.
    "https://hawser.github.com/spec/v1",
)
MAX_POINTER_BYTES = 1024
_OID = re.compile(r"sha256:[0-9a-f]{64}")
_KEY = re.compile(r"[a-z0-9.-]+")


@attrs.frozen
class LfsPointer:
    """The object a pointer file stands for."""

    oid: str
    """``sha256:`` followed by 64 lowercase hex digits."""
    size: int


def parse_lfs_pointer(data: bytes) -> LfsPointer | None:
    """The pointer ``data`` encodes, or None when it is not a Git LFS pointer."""
    if len(data) >= MAX_POINTER_BYTES or not data.startswith(b"version "):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    fields: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(" ")
        if not sep or not _KEY.fullmatch(key) or "\r" in value or key in fields:
            return None
        fields[key] = value
    # The version is compared as an exact string, without URL normalisation.
    if lines[0].partition(" ")[2] not in LFS_SPEC_VERSIONS:
        return None
    oid, size = fields.get("oid", ""), fields.get("size", "")
    if not _OID.fullmatch(oid) or not size.isascii() or not size.isdigit():
        return None
    return LfsPointer(oid=oid, size=int(size))


def read_lfs_pointer(path: str | os.PathLike[str]) -> LfsPointer | None:
    """The pointer stored at ``path``, or None (also for files too big to be one)."""
    with open(path, "rb") as f:
        head = f.read(MAX_POINTER_BYTES)
    return parse_lfs_pointer(head)
