"""Which sources a manifest entry may name: an allow-list, decided on where the URI reads.

A manifest comes from a pull request, so its URIs are hostile. fsspec reads the
local file system under many names (``file://``, ``local://``, and any chain
ending in one: ``simplecache::file://...``, ``filecache::local://...``). Every
one of them is resolved to the local path it reads and held to the same rule:
inside the repository, or refused (``--allow-outside-root`` lifts the rule).
Remote object stores and HTTP(S) are allowed; every other protocol
(``memory://``, ``ftp://``, ``ssh://``, ``zip::``, ``reference::``, ...) is
refused: a protocol nobody listed is never guessed to be safe.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO, Any

import attrs

from evalspec.io.repository import inside
from evalspec.manifest.errors import ManifestError
from evalspec.manifest.transport import file_uri_path, open_source, scheme_of

LOCAL_SCHEMES = frozenset({"file", "local"})
"""Protocols that read this machine's file system; held to "inside the repository"."""

REMOTE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "http", "https"})
"""Protocols that read another machine; allowed as they are."""

CACHE_WRAPPERS = frozenset({"simplecache", "filecache", "blockcache"})
"""fsspec chain links that only cache what the next link reads; the next link decides."""


@attrs.frozen
class Source:
    """Where an entry's URI reads: ``local_path`` (resolved) for a local file, else None."""

    uri: str
    target: str
    """The last link of a chained URI (the URI itself when not chained)."""
    local_path: str | None


def resolve_source(uri: str) -> Source:
    """Where ``uri`` reads; :class:`ManifestError` when its protocol is not allowed."""
    links = uri.split("::")
    for wrapper in links[:-1]:
        name = wrapper.split("://", 1)[0].lower()
        if wrapper.lower() not in CACHE_WRAPPERS and name not in CACHE_WRAPPERS:
            raise ManifestError(f"{uri}: the chain link {wrapper!r} is not an allowed protocol")
        if "://" in wrapper and wrapper.split("://", 1)[1]:
            raise ManifestError(f"{uri}: a cache link must not name a path of its own")
    target = links[-1]
    scheme = scheme_of(target)
    if scheme in LOCAL_SCHEMES:
        return Source(uri, target, os.path.realpath(_local_target_path(target)))
    if scheme in REMOTE_SCHEMES:
        return Source(uri, target, None)
    allowed = ", ".join(sorted(LOCAL_SCHEMES | REMOTE_SCHEMES))
    raise ManifestError(f"{uri}: the protocol {scheme or '(none)'}:// is not allowed ({allowed})")


def _local_target_path(target: str) -> str:
    if scheme_of(target) == "file":
        return file_uri_path(target)
    # fsspec's local:// takes the rest as a path, with or without a host part.
    rest = target.split("://", 1)[1] if "://" in target else target.split(":", 1)[1]
    if not rest:
        raise ManifestError(f"{target}: local:// URI without a path")
    return rest if rest.startswith("/") else "/" + rest


def outside_root(source: Source, root: str | os.PathLike[str]) -> bool:
    """Whether ``source`` reads a local file outside the repository at ``root``."""
    return source.local_path is not None and not inside(os.path.realpath(root), source.local_path)


def source_problem(
    uri: str, root: str | os.PathLike[str], allow_outside_root: bool = False
) -> tuple[str, str] | None:
    """Why ``uri`` may not be read for a manifest at ``root``, as ``(code, message)``.

    The message names the URI and the rule, never anything read from the file.
    """
    try:
        source = resolve_source(uri)
    except ManifestError as exc:
        return "source_not_allowed", str(exc)
    if allow_outside_root or not outside_root(source, root):
        return None
    return "source_outside_root", (
        f"{uri} reads a local file outside the repository; a manifest may only name local "
        "files inside it (pass --allow-outside-root to fetch from there anyway)"
    )


def open_allowed(uri: str, storage_options: Mapping[str, Any] | None = None) -> IO[bytes]:
    """A binary stream of ``uri`` if its protocol is allowed (the caller closes it).

    Every local spelling (``file://``, ``local://``, cache chains) is read by the
    stdlib from the path the allow-list judged, never reinterpreted by fsspec.
    """
    source = resolve_source(uri)
    if source.local_path is not None:
        return open(source.local_path, "rb")
    return open_source(uri, storage_options)
