"""The value classes of a manifest: entries and the manifest they belong to."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from evalspec.manifest.digest import SHA256_HEX
from evalspec.manifest.paths import path_syntax_problem
from evalspec.manifest.problems import ManifestProblem

FORMAT_NAME = "evalspec.manifest"
"""The value of the manifest's top-level ``format`` key."""
FORMAT_VERSION = 1
"""The manifest format version this evalspec writes and reads."""
DEFAULT_MANIFEST = "datasets/manifest.json"
"""Where the manifest lives, relative to the repository root, unless told otherwise."""

# A scheme, optionally after fsspec cache links (``simplecache::s3://...``); which
# protocols may be read is decided by evalspec.manifest.sources.
_SCHEME = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*::)*[A-Za-z][A-Za-z0-9+.-]*://")


def uri_problem(uri: object) -> str | None:
    """A message when ``uri`` is not a ``scheme://...`` string fit for one line."""
    if not isinstance(uri, str):
        return f"uri must be a string, got {type(uri).__name__}"
    if not _SCHEME.match(uri):
        return f"uri {uri!r} has no scheme; write file:///abs/path, s3://bucket/key, ..."
    if not uri.isprintable() or any(c.isspace() for c in uri):
        return f"uri {uri!r} holds whitespace or a control character; percent-encode it"
    return None


def sha256_problem(value: object) -> str | None:
    """A message when ``value`` is not 64 lowercase hex digits."""
    if not isinstance(value, str) or not SHA256_HEX.fullmatch(value):
        return f"sha256 must be 64 lowercase hex digits, got {value!r}"
    return None


def size_problem(value: object) -> str | None:
    """A message when ``value`` is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"size must be a non-negative integer (bytes), got {value!r}"
    return None


def _check(
    problem: Callable[[object], str | None],
) -> Callable[[object, attrs.Attribute[Any], object], None]:
    def validator(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
        message = problem(value)
        if message is not None:
            raise ValueError(message)

    return validator


def _path_problem(value: object) -> str | None:
    found = path_syntax_problem(value)
    return None if found is None else found[1]


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@attrs.frozen
class ManifestEntry:
    """One large file: where it lives in the repository, where it is stored, its digest.

    ``extra`` holds keys this evalspec does not know; they are kept verbatim
    when the manifest is rewritten (as Git LFS keeps unknown pointer keys).
    """

    path: str = attrs.field(validator=_check(_path_problem))
    """Repository-relative POSIX path."""
    uri: str = attrs.field(validator=_check(uri_problem))
    """Where ``fetch`` gets the bytes: ``file://``, ``s3://``, ``gs://``, ..."""
    sha256: str = attrs.field(validator=_check(sha256_problem))
    """SHA-256 of the raw bytes, 64 lowercase hex digits."""
    size: int = attrs.field(validator=_check(size_problem))
    """Size in bytes."""
    extra: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_frozen_mapping, eq=False, hash=False, repr=False
    )

    def to_dict(self) -> dict[str, Any]:
        """The entry as it is written in the manifest file."""
        return {
            **dict(self.extra),
            "path": self.path,
            "uri": self.uri,
            "sha256": self.sha256,
            "size": self.size,
        }


def _sorted_entries(entries: Iterable[ManifestEntry]) -> tuple[ManifestEntry, ...]:
    return tuple(sorted(entries, key=lambda e: e.path))


@attrs.frozen
class Manifest:
    """A manifest as read from (or about to be written to) ``path``.

    ``entries`` holds only well-formed entries, sorted by path; entries that
    could not be read are left out and described in ``problems``.
    """

    path: Path
    """The manifest file."""
    root: Path
    """The repository root that entry paths are relative to."""
    entries: tuple[ManifestEntry, ...] = attrs.field(default=(), converter=_sorted_entries)
    problems: tuple[ManifestProblem, ...] = ()
    """Problems found while reading the file (bad entries, duplicates)."""
    listed: int = attrs.field(
        default=attrs.Factory(lambda self: len(self.entries), takes_self=True)
    )
    """How many entries the file lists, including those left out for problems."""
    extra: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_frozen_mapping, eq=False, hash=False, repr=False
    )
    """Top-level keys this evalspec does not know, kept verbatim."""

    @property
    def display(self) -> str:
        """The manifest path for messages."""
        return str(self.path)

    def entry(self, path: str) -> ManifestEntry | None:
        """The entry whose path is exactly ``path``, if any."""
        for e in self.entries:
            if e.path == path:
                return e
        return None

    def local_path(self, entry: ManifestEntry) -> Path:
        """Where ``entry``'s local copy lives (check it with ``verify`` before trusting it)."""
        return self.root.joinpath(*entry.path.split("/"))

    def with_entry(self, entry: ManifestEntry) -> Manifest:
        """A copy with ``entry`` added, replacing any entry at the same path."""
        kept = [e for e in self.entries if e.path != entry.path]
        return attrs.evolve(self, entries=(*kept, entry))
