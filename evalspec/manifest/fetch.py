"""Bringing missing files from their URI, verified before they are moved into place.

The download streams into a temp file in the destination directory while it
is hashed; it is cut off as soon as more bytes than the manifest's ``size``
arrive; the size and then the hash are compared; only then is the file
fsync-ed and renamed over the target with ``os.replace``. So a failed,
partial or tampered download never leaves a file at the target path, and an
existing file there is replaced only by verified bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import IO, Any

import attrs

from evalspec.io.atomicfile import fsync_dir
from evalspec.manifest.check import ManifestLike, as_manifest, check_entry, safe_local_path
from evalspec.manifest.digest import CHUNK_BYTES
from evalspec.manifest.errors import ManifestError, MissingExtraError
from evalspec.manifest.lfs import parse_lfs_pointer
from evalspec.manifest.model import Manifest, ManifestEntry
from evalspec.manifest.problems import ManifestProblem
from evalspec.manifest.sources import open_allowed, outside_root, resolve_source, source_problem

_REPLACEABLE = frozenset(
    {"size_mismatch", "hash_mismatch", "unmaterialized_lfs_pointer", "missing"}
)


DEFAULT_MAX_BYTES = 64 << 30
"""The largest entry ``fetch`` downloads unless told otherwise (64 GiB)."""


@attrs.frozen
class FetchLimits:
    """What ``fetch`` refuses before downloading: entries over ``max_bytes`` (None: no
    limit), and ``file://`` sources outside the repository unless ``allow_outside_root``.
    Entries larger than the destination's free space are always refused."""

    max_bytes: int | None = DEFAULT_MAX_BYTES
    allow_outside_root: bool = False


@attrs.frozen
class FetchResult:
    """What ``fetch`` did: entries fetched, entries already intact, problems."""

    fetched: tuple[ManifestEntry, ...] = ()
    present: tuple[ManifestEntry, ...] = ()
    problems: tuple[ManifestProblem, ...] = ()


class _Rejected(Exception):
    """The download is refused; carries the problem code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_OPAQUE_MISMATCH = "source_mismatch"


def _copy_verified(
    entry: ManifestEntry,
    out: IO[bytes],
    storage_options: Mapping[str, Any] | None,
    opaque: bool = False,
) -> None:
    """Stream ``entry.uri`` into ``out``; raise :class:`_Rejected` unless it matches.

    ``opaque`` (a local file outside the repository): every way of not matching,
    and every read error, gives one message, so a manifest cannot learn an outside
    file's size, kind or existence from which message it gets.
    """
    try:
        _copy_checked(entry, out, storage_options)
    except (_Rejected, ManifestError) as exc:
        if not opaque:
            raise
        raise _Rejected(
            _OPAQUE_MISMATCH,
            f"{entry.uri} is not the file the manifest describes (or cannot be read); "
            "nothing written",
        ) from exc


def _copy_checked(
    entry: ManifestEntry, out: IO[bytes], storage_options: Mapping[str, Any] | None
) -> None:
    digest = hashlib.sha256()
    received = 0
    head = b""
    limit = entry.size
    try:
        with open_allowed(entry.uri, storage_options) as src:
            while True:
                # Never ask for more than one byte past the declared size.
                chunk = src.read(min(CHUNK_BYTES, limit + 1 - received))
                if not chunk:
                    break
                received += len(chunk)
                if received > limit:
                    raise _Rejected(
                        "download_too_large",
                        f"{entry.uri} sent more than the manifest's {limit} bytes; "
                        "download aborted",
                    )
                if len(head) < 1024:
                    head += chunk[: 1024 - len(head)]
                digest.update(chunk)
                out.write(chunk)
    except (_Rejected, ManifestError):
        raise
    except Exception as exc:  # any backend's error (OSError, botocore, ...) is the source's
        detail = str(exc) or type(exc).__name__
        raise _Rejected("source_unreadable", f"cannot read {entry.uri}: {detail}") from exc
    # The messages state what the manifest expected, never the size or digest of
    # what was read: a manifest from a pull request must not make CI reveal facts
    # about a file it can read.
    pointer = parse_lfs_pointer(head) if received < 1024 else None
    if received != limit:
        if pointer is not None:
            raise _Rejected(
                "unmaterialized_lfs_pointer",
                f"{entry.uri} holds a Git LFS pointer, not the data; upload the real file",
            )
        raise _Rejected(
            "size_mismatch",
            f"{entry.uri} sent fewer than the manifest's {limit} bytes; nothing written",
        )
    if digest.hexdigest() != entry.sha256:
        if pointer is not None:
            raise _Rejected(
                "unmaterialized_lfs_pointer",
                f"{entry.uri} holds a Git LFS pointer, not the data; upload the real file",
            )
        raise _Rejected(
            "hash_mismatch",
            f"{entry.uri} does not have the manifest's sha256 {entry.sha256}; nothing written",
        )


def _free_bytes(directory: Path) -> int | None:
    """Free space where ``directory`` is (or would be created); None when unknown."""
    for candidate in (directory, *directory.parents):
        try:
            return shutil.disk_usage(candidate).free
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return None


def _reads_outside(manifest: Manifest, entry: ManifestEntry) -> bool:
    try:
        return outside_root(resolve_source(entry.uri), manifest.root)
    except ManifestError:
        return False  # refused before this is asked


def _refusal(
    manifest: Manifest, entry: ManifestEntry, target: Path, limits: FetchLimits
) -> tuple[str, str] | None:
    """Why the download must not start, as ``(code, message)``; checked before any byte."""
    refused = source_problem(entry.uri, manifest.root, limits.allow_outside_root)
    if refused is not None:
        return refused
    if limits.max_bytes is not None and entry.size > limits.max_bytes:
        return "too_large", (
            f"the manifest says {entry.size} bytes, over the fetch limit of "
            f"{limits.max_bytes} bytes (raise it with --max-size); nothing downloaded"
        )
    free = _free_bytes(target.parent)
    if free is not None and entry.size > free:
        return "no_space", (
            f"the manifest says {entry.size} bytes, more than the {free} bytes free "
            f"in {target.parent}; nothing downloaded"
        )
    return None


def fetch_entry(
    manifest: Manifest,
    entry: ManifestEntry,
    storage_options: Mapping[str, Any] | None = None,
    limits: FetchLimits | None = None,
) -> ManifestProblem | None:
    """Download one entry into place; a problem (and nothing written) when it fails."""

    def problem(code: str, message: str) -> ManifestProblem:
        return ManifestProblem(manifest.display, entry.path, code, message)

    target, escape = safe_local_path(manifest, entry)
    if escape is not None:
        return problem("path_traversal", escape)
    refused = _refusal(manifest, entry, target, limits or FetchLimits())
    if refused is not None:
        return problem(*refused)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".evalspec-part"
        )
    except OSError as exc:
        return problem("write_failed", f"cannot create a file in {target.parent}: {exc}")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            _copy_verified(entry, out, storage_options, _reads_outside(manifest, entry))
            out.flush()
            os.fsync(out.fileno())
        # mkstemp made it 0600; a fetched dataset is as readable as a checked-out one.
        os.chmod(tmp, 0o644)
        # The parent may have been swapped for a symlink while we downloaded.
        escape = safe_local_path(manifest, entry)[1]
        if escape is not None:
            return problem("path_traversal", escape)
        os.replace(tmp, target)
    except _Rejected as exc:
        return problem(exc.code, exc.message)
    except MissingExtraError as exc:
        return problem("missing_dependency", str(exc))
    except ManifestError as exc:
        return problem("source_unreadable", str(exc))
    except OSError as exc:
        return problem("write_failed", f"cannot write {target}: {exc.strerror or exc}")
    finally:
        # Also on KeyboardInterrupt and on the exception evalspec's CLI raises
        # for SIGTERM and SIGHUP (evalspec.cli.main).
        tmp.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return None


def fetch(
    manifest: ManifestLike,
    *,
    root: str | os.PathLike[str] | None = None,
    force: bool = False,
    paths: Collection[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    limits: FetchLimits | None = None,
) -> FetchResult:
    """Bring every missing local copy (and with ``force``, every mismatching one).

    ``limits`` (default :class:`FetchLimits`) says which entries are refused
    before any byte is downloaded.

    Intact copies are left alone. A copy that is present but wrong is reported,
    not replaced, unless ``force``. ``paths`` limits the run to those entries.
    Problems found while reading the manifest are reported and their entries
    skipped.
    """
    m = as_manifest(manifest, root)
    fetched: list[ManifestEntry] = []
    present: list[ManifestEntry] = []
    problems = list(m.problems)
    for entry in m.entries:
        if paths is not None and entry.path not in paths:
            continue
        state = check_entry(m, entry)
        if state is None:
            present.append(entry)
            continue
        if state.code != "missing" and not (force and state.code in _REPLACEABLE):
            if state.code in _REPLACEABLE:
                state = attrs.evolve(state, message=f"{state.message}; pass --force to replace it")
            problems.append(state)
            continue
        failure = fetch_entry(m, entry, storage_options, limits)
        if failure is None:
            fetched.append(entry)
        else:
            problems.append(failure)
    return FetchResult(fetched=tuple(fetched), present=tuple(present), problems=tuple(problems))
