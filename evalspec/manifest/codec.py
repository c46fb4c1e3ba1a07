"""Reading and writing the manifest file (format ``evalspec.manifest``, version 1).

The file is UTF-8 JSON::

    {
      "files": [
        {"path": "datasets/big.jsonl", "sha256": "<64 lowercase hex>", "size": 123,
         "uri": "s3://bucket/big.jsonl"}
      ],
      "format": "evalspec.manifest",
      "version": 1
    }

It is written with sorted keys, two-space indentation, entries sorted by
path and a final newline, so the same content is always the same bytes and
a diff shows only what changed. Unknown keys are kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from evalspec.io.atomicfile import UnsafePathError, resolve_for_write, write_atomic
from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.safeload import DocumentError, json_depth_problem, read_bounded
from evalspec.manifest.errors import ManifestFormatError
from evalspec.manifest.model import (
    FORMAT_NAME,
    FORMAT_VERSION,
    Manifest,
    ManifestEntry,
    sha256_problem,
    size_problem,
    uri_problem,
)
from evalspec.manifest.paths import find_root, path_collisions, path_syntax_problem
from evalspec.manifest.problems import ManifestProblem

MAX_MANIFEST_BYTES = 64 << 20
"""Largest manifest read (64 MiB: some 200,000 entries)."""

_KNOWN_ENTRY_KEYS = ("path", "uri", "sha256", "size")


def _strip_prefix(value: Any) -> Any:
    # "sha256:<hex>" (the Git LFS oid spelling) is read as the bare digest.
    if isinstance(value, str) and value.startswith("sha256:"):
        return value[len("sha256:") :]
    return value


def _entry_problems(item: Any, index: int) -> tuple[str, list[tuple[str, str]]]:
    """``(display name, [(code, message), ...])`` for one item of ``files``."""
    if not isinstance(item, dict):
        return f"files[{index}]", [("invalid_entry", "an entry must be a JSON object")]
    path = item.get("path")
    name = path if isinstance(path, str) else f"files[{index}]"
    found: list[tuple[str, str]] = []
    missing = [k for k in _KNOWN_ENTRY_KEYS if k not in item]
    if missing:
        found.append(("invalid_entry", f"missing field(s): {', '.join(missing)}"))
    if "path" in item:
        problem = path_syntax_problem(path)
        if problem is not None:
            found.append(problem)
    for key, check in (("uri", uri_problem), ("sha256", sha256_problem), ("size", size_problem)):
        if key in item:
            message = check(_strip_prefix(item[key]) if key == "sha256" else item[key])
            if message is not None:
                found.append(("invalid_entry", message))
    return name, found


def parse_manifest(text: str, *, path: str | os.PathLike[str], root: Path) -> Manifest:
    """Parse manifest text; entry-level problems land in ``Manifest.problems``.

    Raises :class:`ManifestFormatError` when the text is not a manifest at all.
    """
    shown = str(path)
    value, parse_problems = parse_line(text)
    if parse_problems:
        raise ManifestFormatError(f"{shown}: {parse_problems[0].message}")
    too_deep = json_depth_problem(value)
    if too_deep is not None:
        raise ManifestFormatError(f"{shown}: {too_deep}")
    if not isinstance(value, dict) or value.get("format") != FORMAT_NAME:
        raise ManifestFormatError(
            f'{shown}: not an evalspec manifest (expected "format": "{FORMAT_NAME}")'
        )
    version = value.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ManifestFormatError(f'{shown}: "version" must be an integer, got {version!r}')
    if version > FORMAT_VERSION:
        raise ManifestFormatError(
            f"{shown}: manifest format version {version} is newer than this evalspec reads "
            f"({FORMAT_VERSION}); upgrade evalspec"
        )
    if version < 1:
        raise ManifestFormatError(f"{shown}: unknown manifest format version {version}")
    files = value.get("files")
    if not isinstance(files, list):
        raise ManifestFormatError(f'{shown}: "files" must be a list of entries')

    problems: list[ManifestProblem] = []
    entries: list[ManifestEntry] = []
    for index, item in enumerate(files):
        name, found = _entry_problems(item, index)
        if found:
            # The index tells apart two entries that share a (bad) path.
            problems.extend(
                ManifestProblem(shown, name, code, f"files[{index}]: {msg}") for code, msg in found
            )
            continue
        extra = {k: v for k, v in item.items() if k not in _KNOWN_ENTRY_KEYS}
        entries.append(
            ManifestEntry(
                path=item["path"],
                uri=item["uri"],
                sha256=_strip_prefix(item["sha256"]),
                size=item["size"],
                extra=extra,
            )
        )
    # A clashing entry is reported and left out (the first of an exact repeat stays):
    # fetching it could overwrite its twin.
    clashing: set[str] = set()
    repeated: set[str] = set()
    for clash, earlier, code, message in path_collisions(e.path for e in entries):
        problems.append(ManifestProblem(shown, clash, code, message))
        (repeated if clash == earlier else clashing).add(clash)
    kept: list[ManifestEntry] = []
    for e in entries:
        if e.path in clashing or (e.path in repeated and any(k.path == e.path for k in kept)):
            continue
        kept.append(e)
    extra = {k: v for k, v in value.items() if k not in ("format", "version", "files")}
    return Manifest(
        path=Path(path),
        root=root,
        entries=tuple(kept),
        problems=tuple(problems),
        extra=extra,
        listed=len(files),
    )


def load_manifest(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
) -> Manifest:
    """Read the manifest at ``path``.

    ``root`` is the repository root entry paths are relative to; by default
    the nearest directory above the manifest holding ``.git``, else the
    current directory. Raises :class:`ManifestFormatError` when the file is
    missing, unreadable or not a manifest.
    """
    resolved_root = Path(root) if root is not None else find_root(Path(path).parent)
    try:
        # A manifest that a symlink sends out of the repository is not read at all:
        # its error messages would tell something about that file.
        resolve_for_write(path, resolved_root)
    except UnsafePathError:
        raise ManifestFormatError(
            f"{path}: the manifest is a symlink that leads outside the repository"
        ) from None
    try:
        raw = read_bounded(path, MAX_MANIFEST_BYTES)
    except OSError as exc:
        raise ManifestFormatError(f"cannot read manifest {path}: {exc.strerror or exc}") from exc
    except DocumentError as exc:
        raise ManifestFormatError(str(exc)) from None
    text, problem = decode_bytes(raw)
    if problem is not None or text is None:
        detail = problem.message if problem is not None else "not UTF-8"
        raise ManifestFormatError(f"{path}: {detail}")
    return parse_manifest(text, path=path, root=resolved_root)


def new_manifest(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
) -> Manifest:
    """An empty manifest that will be written at ``path``."""
    resolved_root = Path(root) if root is not None else find_root(Path(path).parent)
    return Manifest(path=Path(path), root=resolved_root)


def dumps_manifest(manifest: Manifest) -> str:
    """The manifest file's exact text (sorted keys, entries sorted by path)."""
    doc = {
        **dict(manifest.extra),
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "files": [e.to_dict() for e in manifest.entries],
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def save_manifest(manifest: Manifest) -> None:
    """Write the manifest atomically (temp file beside it, fsync, then ``os.replace``).

    :raises UnsafePathError: the manifest path leads out of the repository by a symlink.
    """
    target = manifest.path
    # Checked before mkdir: a symlinked parent must not make us create directories outside.
    resolve_for_write(target, manifest.root)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, dumps_manifest(manifest), root=manifest.root)
