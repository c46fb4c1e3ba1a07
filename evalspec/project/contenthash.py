"""The content hash of a dataset: a fingerprint of its records, not of its bytes.

``sha256:`` + hex SHA-256 over, for each record in file order, its canonical
JSON (sorted keys, no insignificant whitespace, UTF-8) followed by ``\\n``.
Reordering keys or reformatting a line leaves the hash unchanged; changing,
adding, removing or reordering records changes it. Reports and manifests
cite it to say exactly which data a score was computed on.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

from evalspec.project.records import read_records

PREFIX = "sha256:"


def canonical(record: Any) -> bytes:
    """A record's canonical JSON bytes."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def content_hash(records: Iterable[Any]) -> str:
    """``sha256:<hex>`` of the records in order."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(canonical(record))
        digest.update(b"\n")
    return PREFIX + digest.hexdigest()


def file_content_hash(path: str | os.PathLike[str]) -> str | None:
    """The content hash of a dataset file; ``None`` when a line is not JSON.

    :raises OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        records = read_records(f.read())
    if not records.complete:
        return None
    return content_hash(value for _, value in records.values)
