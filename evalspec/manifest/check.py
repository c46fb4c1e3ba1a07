"""Checking local copies against the manifest: ``verify`` and ``present_entries``."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import attrs

from evalspec.io.repository import NotRegularFileError, OutsideRootError, open_inside
from evalspec.manifest.codec import load_manifest
from evalspec.manifest.digest import stream_sha256
from evalspec.manifest.lfs import MAX_POINTER_BYTES, parse_lfs_pointer
from evalspec.manifest.model import Manifest, ManifestEntry
from evalspec.manifest.paths import containment_problem
from evalspec.manifest.problems import ManifestProblem

ManifestLike = Manifest | str | os.PathLike[str]


def as_manifest(manifest: ManifestLike, root: str | os.PathLike[str] | None = None) -> Manifest:
    """``manifest`` itself, or the manifest loaded from that path."""
    if isinstance(manifest, Manifest):
        return manifest if root is None else attrs.evolve(manifest, root=Path(root))
    return load_manifest(manifest, root=root)


@attrs.frozen
class LocalFile:
    """A manifest entry whose local copy is present (not necessarily intact)."""

    entry: ManifestEntry
    path: Path


def safe_local_path(manifest: Manifest, entry: ManifestEntry) -> tuple[Path, str | None]:
    """The entry's local path, and a ``path_traversal`` message when it leaves the root."""
    return manifest.local_path(entry), containment_problem(manifest.root, entry.path)


def _lfs_message(head: bytes) -> str | None:
    pointer = parse_lfs_pointer(head)
    if pointer is None:
        return None
    return (
        f"is a Git LFS pointer ({pointer.oid[:19]}…, {pointer.size} bytes), not the data; "
        "run `git lfs pull` (or `evalspec manifest fetch --force`)"
    )


def check_entry(manifest: Manifest, entry: ManifestEntry) -> ManifestProblem | None:
    """The one problem with ``entry``'s local copy, or None when it is intact.

    The copy is opened once and everything (type, size, pointer, digest) is read
    from that descriptor: a swap for a symlink to a file outside the repository
    after the path was checked reports nothing of that file."""

    def problem(code: str, message: str) -> ManifestProblem:
        return ManifestProblem(manifest.display, entry.path, code, message)

    local, escape = safe_local_path(manifest, entry)
    if escape is not None:
        return problem("path_traversal", escape)
    try:
        with open_inside(local, manifest.root) as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(MAX_POINTER_BYTES)
            if size != entry.size:
                lfs = _lfs_message(head)
                if lfs is not None:
                    return problem("unmaterialized_lfs_pointer", lfs)
                return problem(
                    "size_mismatch", f"size is {size} bytes, the manifest says {entry.size}"
                )
            digest, _size = stream_sha256(f, head)
    except FileNotFoundError:
        return problem("missing", "not present locally; run `evalspec manifest fetch`")
    except NotADirectoryError:
        return problem("missing", "not present locally (a parent is not a directory)")
    except NotRegularFileError:
        return problem("not_a_file", "exists but is not a regular file")
    except OutsideRootError:
        return problem(
            "path_traversal", "leads outside the repository (or was replaced while it was read)"
        )
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # fine alone, too long below this root
            return problem("invalid_path", "path is too long for the file system here")
        return problem("unreadable", f"cannot read: {exc.strerror or exc}")
    if digest != entry.sha256:
        lfs = _lfs_message(head)
        if lfs is not None:
            return problem("unmaterialized_lfs_pointer", lfs)
        return problem("hash_mismatch", f"sha256 is {digest}, the manifest says {entry.sha256}")
    return None


def verify(
    manifest: ManifestLike, *, root: str | os.PathLike[str] | None = None
) -> list[ManifestProblem]:
    """Every problem with the manifest and its local copies; empty when all is intact.

    Each local copy is hashed in full (streamed, raw bytes). The list holds
    the problems found while reading the manifest first, then one problem
    at most per entry, in path order.
    """
    m = as_manifest(manifest, root)
    found = list(m.problems)
    for entry in m.entries:
        problem = check_entry(m, entry)
        if problem is not None:
            found.append(problem)
    return found


def present_entries(
    manifest: ManifestLike, *, root: str | os.PathLike[str] | None = None
) -> list[LocalFile]:
    """The entries whose local copy is present as a regular file inside the repository.

    Cheap (no hashing): this is what lint asks to treat those files as
    datasets. Entries whose path escapes the repository are never returned.
    """
    m = as_manifest(manifest, root)
    out: list[LocalFile] = []
    for entry in m.entries:
        local, escape = safe_local_path(m, entry)
        if escape is None and local.is_file():
            out.append(LocalFile(entry=entry, path=local))
    return out
