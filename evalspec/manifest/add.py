"""Recording a large file in the manifest (``evalspec manifest add``)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from evalspec.io.atomicfile import repository_lock, resolve_for_write
from evalspec.io.repository import NotRegularFileError, OutsideRootError, open_inside
from evalspec.manifest.codec import load_manifest, new_manifest, save_manifest
from evalspec.manifest.digest import stream_sha256
from evalspec.manifest.errors import ManifestError
from evalspec.manifest.gitignore import ensure_ignored, is_tracked
from evalspec.manifest.lfs import MAX_POINTER_BYTES, parse_lfs_pointer
from evalspec.manifest.model import Manifest, ManifestEntry, uri_problem
from evalspec.manifest.paths import (
    containment_problem,
    find_root,
    path_collisions,
    path_syntax_problem,
)
from evalspec.manifest.sources import source_problem


@attrs.frozen
class AddResult:
    """What ``add`` did."""

    manifest: Manifest
    """The manifest as written."""
    entry: ManifestEntry
    previous: ManifestEntry | None
    """The entry this one replaced, if the path was already listed."""
    gitignore_added: bool
    """Whether a line was added to the repository's ``.gitignore``."""
    tracked: bool
    """Whether git still tracks the file (``git rm --cached`` it to keep it out)."""


def repository_path(root: str | os.PathLike[str], file: str | os.PathLike[str]) -> str:
    """``file`` (absolute or relative to the current directory) as a root-relative POSIX path."""
    root_real = os.path.realpath(root)
    absolute = os.path.abspath(file)
    # Resolve the directory but not the file itself: a symlinked file stays a symlink
    # and is judged by the containment check.
    parent = os.path.realpath(os.path.dirname(absolute))
    relative = os.path.relpath(os.path.join(parent, os.path.basename(absolute)), root_real)
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        raise ManifestError(f"{file}: not inside the repository root {root}")
    return relative.replace(os.sep, "/")


def add(
    manifest_path: str | os.PathLike[str],
    file: str | os.PathLike[str],
    uri: str,
    *,
    root: str | os.PathLike[str] | None = None,
    gitignore: bool = True,
    allow_outside_root: bool = False,
) -> AddResult:
    """Record ``file``'s path, ``uri``, SHA-256 and size; ignore the file in git.

    Creates the manifest when it does not exist; replaces the entry when the
    path is already listed (its unknown keys are kept). Raises
    :class:`ManifestError` when the file is missing, outside the repository,
    a Git LFS pointer, or the URI or existing manifest is malformed;
    :class:`~evalspec.io.atomicfile.UnsafePathError` when the manifest or
    ``.gitignore`` is a symlink out of the repository.

    The read, update and write of the manifest and ``.gitignore`` hold the
    repository's lock, so concurrent adds keep every entry.

    ``uri`` is held to the rules ``fetch`` applies (:mod:`evalspec.manifest.sources`):
    a protocol off the allow-list, or a local file outside the repository unless
    ``allow_outside_root``, is refused before anything is written.
    """
    resolved_root = Path(root) if root is not None else find_root(Path(manifest_path).parent)
    with repository_lock(resolved_root):
        return _add_locked(manifest_path, file, uri, root, gitignore, allow_outside_root)


def _add_locked(
    manifest_path: str | os.PathLike[str],
    file: str | os.PathLike[str],
    uri: str,
    root: str | os.PathLike[str] | None,
    gitignore: bool,
    allow_outside_root: bool,
) -> AddResult:
    if Path(manifest_path).exists():
        manifest = load_manifest(manifest_path, root=root)
        if manifest.problems:
            first = manifest.problems[0].format()
            raise ManifestError(
                f"{manifest_path} has {len(manifest.problems)} problem(s), fix them first "
                f"(evalspec manifest verify lists them); first: {first}"
            )
    else:
        manifest = new_manifest(manifest_path, root=root)
    problem = uri_problem(uri)
    if problem is not None:
        raise ManifestError(problem)
    refused = source_problem(uri, manifest.root, allow_outside_root)
    if refused is not None:
        raise ManifestError(f"{refused[0]}: {refused[1]}")
    path = repository_path(manifest.root, file)
    syntax = path_syntax_problem(path)
    if syntax is not None:
        raise ManifestError(f"{path}: {syntax[0]}: {syntax[1]}")
    escape = containment_problem(manifest.root, path)
    if escape is not None:
        raise ManifestError(f"{path}: path_traversal: {escape}")
    local = manifest.root.joinpath(*path.split("/"))
    # Opened once, checked on the descriptor, read only through it: the pointer
    # check and the digest are of one file, and a swap for a symlink to a file
    # outside after the checks above records nothing of that file.
    try:
        with open_inside(local, manifest.root) as f:
            head = f.read(MAX_POINTER_BYTES)
            pointer = parse_lfs_pointer(head)
            digest, size = stream_sha256(f, head)
    except (FileNotFoundError, NotRegularFileError):
        raise ManifestError(f"{file}: no such file (or not a regular file)") from None
    except OutsideRootError:
        # Where it leads is not shown: the message must reveal nothing outside.
        raise ManifestError(
            f"{path}: path_traversal: it leads outside the repository (or was replaced "
            "while it was read)"
        ) from None
    except OSError as exc:
        raise ManifestError(f"cannot read {file}: {exc.strerror or exc}") from exc
    if pointer is not None:
        raise ManifestError(f"{file} is a Git LFS pointer, not the data; run `git lfs pull` first")
    previous = manifest.entry(path)
    entry = ManifestEntry(
        path=path,
        uri=uri,
        sha256=digest,
        size=size,
        extra=previous.extra if previous is not None else {},
    )
    updated = manifest.with_entry(entry)
    for clash, earlier, code, message in path_collisions(e.path for e in updated.entries):
        if path in (clash, earlier):
            raise ManifestError(f"{clash}: {code}: {message}")
    if gitignore:  # refused before the manifest changes, not half-way through
        resolve_for_write(manifest.root / ".gitignore", manifest.root)
    save_manifest(updated)
    added = ensure_ignored(manifest.root, path) if gitignore else False
    return AddResult(
        manifest=updated,
        entry=entry,
        previous=previous,
        gitignore_added=added,
        tracked=is_tracked(manifest.root, path),
    )
