"""The closed vocabulary of manifest problem codes and the problem value class."""

from __future__ import annotations

import json
from types import MappingProxyType

import attrs

from evalspec.io.wording import one_line

PROBLEM_CODES: MappingProxyType[str, str] = MappingProxyType(
    {
        # found when the manifest is read
        "invalid_entry": "an entry is not an object, or a field is missing or malformed "
        "(uri without a scheme, sha256 not 64 lowercase hex digits, size not a "
        "non-negative integer)",
        "invalid_path": "the path is empty, uses a backslash, holds a NUL or control "
        "character, has an empty or '.' component, points into .git, or has a component "
        "over 255 bytes",
        "path_traversal": "the path is absolute (/, a drive letter, UNC) or has a '..' "
        "component, or one of its components is a symlink that leads outside the repository",
        "duplicate_path": "two entries name the same file after Unicode NFC normalisation "
        "or case folding",
        "path_conflict": "one entry's path is a directory of another entry's path",
        # found when the local copy is checked
        "missing": "the file is not present locally (evalspec manifest fetch brings it)",
        "not_a_file": "the path exists but is not a regular file",
        "size_mismatch": "the file's size differs from the manifest's (byte count)",
        "hash_mismatch": "the file's SHA-256 differs from the manifest's (hash count)",
        "unmaterialized_lfs_pointer": "the file is a Git LFS pointer, not the data "
        "(run git lfs pull)",
        "unreadable": "the local file cannot be read",
        # found while fetching
        "download_too_large": "the source sent more bytes than the manifest's size; "
        "the download was aborted",
        "source_unreadable": "the entry's URI cannot be opened or read",
        "missing_dependency": "the URI scheme needs an optional extra that is not installed",
        "write_failed": "the downloaded file cannot be written into place",
        "too_large": "the entry's size is over the fetch limit (--max-size); "
        "nothing was downloaded",
        "no_space": "the entry's size is more than the destination's free space; "
        "nothing was downloaded",
        "source_outside_root": "a URI reads a local file (file://, local://, or a cache "
        "chain ending in one) outside the repository (allowed only with --allow-outside-root)",
        "source_not_allowed": "the URI's protocol is not on the allow-list "
        "(file, local, s3, gs, az, http(s), and simplecache/filecache/blockcache chains of them)",
        "source_mismatch": "a local file outside the repository does not match the entry; "
        "the message is the same whatever the file holds",
    }
)
"""Every :class:`ManifestProblem` code, with what it means."""

IO_CODES = frozenset(
    {"unreadable", "source_unreadable", "missing_dependency", "write_failed", "no_space"}
)
"""Codes that are I/O or environment failures (CLI exit 2) rather than integrity problems."""


def show(path: str) -> str:
    """``path`` for a one-line message: JSON-quoted when it holds anything unprintable."""
    if path and path.isprintable() and "\\" not in path and path.strip() == path:
        return path
    return json.dumps(path)


@attrs.frozen
class ManifestProblem:
    """One thing wrong with one manifest entry (or its local copy, or its download)."""

    manifest: str
    """The manifest file, as the caller named it."""
    entry: str
    """The entry's path as written in the manifest, or ``files[N]`` when it has none."""
    code: str = attrs.field(validator=attrs.validators.in_(PROBLEM_CODES))
    message: str

    def format(self) -> str:
        """``manifest: entry: code — message`` (one line, for people)."""
        # The message may quote a URI or a path from the manifest, which a pull
        # request wrote: a control character in it shows escaped.
        entry = show(self.entry)
        return f"{one_line(self.manifest)}: {entry}: {self.code} — {one_line(self.message)}"

    def to_dict(self) -> dict[str, str]:
        return {
            "manifest": self.manifest,
            "entry": self.entry,
            "code": self.code,
            "message": self.message,
        }
