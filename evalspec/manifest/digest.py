"""Streamed SHA-256 of raw bytes (no newline normalisation, unlike DVC 2.x)."""

from __future__ import annotations

import hashlib
import os
import re

CHUNK_BYTES = 1 << 20
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def file_sha256(path: str | os.PathLike[str]) -> tuple[str, int]:
    """``(hex digest, size in bytes)`` of the file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
