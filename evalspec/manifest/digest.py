"""Streamed SHA-256 of raw bytes (no newline normalisation, unlike DVC 2.x)."""

from __future__ import annotations

import hashlib
import os
import re
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def file_sha256(path: str | os.PathLike[str]) -> tuple[str, int]:
    """``(hex digest, size in bytes)`` of the file's bytes, read in 1 MiB chunks."""
    with open(path, "rb") as f:
        return stream_sha256(f)


def stream_sha256(f: BinaryIO, head: bytes = b"") -> tuple[str, int]:
    """``(hex digest, size in bytes)`` of ``head`` and the rest of the open file ``f``
    (``head``: what the caller already read from it)."""
    digest = hashlib.sha256(head)
    size = len(head)
    while chunk := f.read(CHUNK_BYTES):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size
