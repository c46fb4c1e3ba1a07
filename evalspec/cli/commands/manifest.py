"""``evalspec manifest add|verify|fetch``: large files kept outside git, by checksum."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from evalspec.io.exitcodes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from evalspec.io.wording import counted
from evalspec.manifest import (
    DEFAULT_MANIFEST,
    IO_CODES,
    ManifestProblem,
    add,
    fetch,
    find_root,
    load_manifest,
    verify,
)
from evalspec.manifest.fetch import DEFAULT_MAX_BYTES, FetchLimits
from evalspec.manifest.problems import show

_FORMAT_HELP = "text for people (default) or json for tools"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--manifest",
        metavar="PATH",
        default=None,
        help=f"the manifest file (default: {DEFAULT_MANIFEST} of the evals layout here, "
        f"else ROOT/{DEFAULT_MANIFEST})",
    )
    p.add_argument(
        "--root",
        metavar="DIR",
        default=None,
        help="repository root that entry paths are relative to (default: the git work "
        "tree holding the manifest, else the current directory)",
    )


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "manifest",
        help="record, verify and fetch large files kept outside git",
        description="A manifest lists each large file's repository path, remote URI, "
        "SHA-256 and size. Exit 0 when all is well, 1 when problems are found, 2 on "
        "usage or I/O errors.",
    )
    actions = p.add_subparsers(dest="manifest_command", metavar="ACTION", required=True)

    a = actions.add_parser(
        "add",
        help="record a file (path, URI, SHA-256, size) and git-ignore it",
        description="Record FILE in the manifest and add it to the repository's .gitignore. "
        "Upload the file to URI yourself; fetch downloads it from there.",
    )
    a.add_argument("file", metavar="FILE", help="the large file to record")
    a.add_argument("--uri", required=True, help="where the file is stored (file://, s3://, ...)")
    a.add_argument("--no-gitignore", action="store_true", help="leave .gitignore alone")
    a.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="accept a local URI outside the repository (fetch will need the same flag)",
    )
    _common(a)
    a.set_defaults(run=run_add)

    v = actions.add_parser(
        "verify",
        help="re-hash every local copy and report every problem",
        description="Check every entry: a safe path, the file present, size and SHA-256 "
        "equal to the manifest's.",
    )
    _common(v)
    v.add_argument("--format", choices=("text", "json"), default="text", help=_FORMAT_HELP)
    v.set_defaults(run=run_verify)

    f = actions.add_parser(
        "fetch",
        help="download missing files from their URI, verified, atomically",
        description="Download each missing file into a temp file beside its target, check "
        "size and SHA-256, then move it into place. s3://, gs://, ... need "
        "pip install 'evalspec-contract[manifest]'; S3 settings come from the AWS variables and "
        "EVALSPEC_S3_ENDPOINT_URL.",
    )
    f.add_argument("paths", nargs="*", metavar="PATH", help="only these entries (default: all)")
    f.add_argument("--force", action="store_true", help="also replace files that mismatch")
    f.add_argument(
        "--max-size",
        metavar="SIZE",
        type=_size,
        default=DEFAULT_MAX_BYTES,
        help="refuse entries larger than SIZE bytes (suffixes K, M, G, T; 0: no limit; "
        "default 64G); entries larger than the free disk space are always refused",
    )
    f.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="allow local sources (file://, local://, chains of them) outside the "
        "repository (refused by default: a "
        "manifest from a pull request could name any file CI can read)",
    )
    _common(f)
    f.add_argument("--format", choices=("text", "json"), default="text", help=_FORMAT_HELP)
    f.set_defaults(run=run_fetch)


_SIZE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(text: str) -> int:
    """A byte count such as ``500M`` or ``64G`` (binary units; ``B`` or ``iB`` may follow)."""
    spelled = text.strip().upper().removesuffix("IB").removesuffix("B")
    number, suffix = (spelled[:-1], spelled[-1]) if spelled[-1:].isalpha() else (spelled, "")
    if suffix not in _SIZE_SUFFIXES or not number.isdigit() or len(number) > 20:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 500M, 64G, 0 for no limit)")
    return int(number) * _SIZE_SUFFIXES[suffix]


def _layout_manifest(args: argparse.Namespace) -> Path | None:
    """Inside an evals layout (the file added, or the current directory) the manifest
    sits beside the layout's datasets; a manifest already at the repository root is
    still used by verify and fetch when the layout has none."""
    from evalspec.evals.layout import find_layout

    starts = [Path(args.file).parent] if getattr(args, "file", None) else []
    for start in [*starts, Path.cwd()]:
        layout = find_layout(start)
        if layout is None:
            continue
        path = layout.root / DEFAULT_MANIFEST
        if getattr(args, "file", None) or path.is_file():
            return path
        return None
    return None


def _locate(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """(manifest path, explicit root or None)."""
    root = Path(args.root) if args.root is not None else None
    if args.manifest is not None:
        return Path(args.manifest), root
    in_layout = _layout_manifest(args) if root is None else None
    base = root if root is not None else find_root(Path.cwd())
    path = in_layout if in_layout is not None else base / DEFAULT_MANIFEST
    if root is None:
        # Messages name the manifest as the user would type it from here.
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            path = Path(relative)
    return path, root


def _exit_code(problems: list[ManifestProblem] | tuple[ManifestProblem, ...]) -> int:
    if any(p.code in IO_CODES for p in problems):
        return EXIT_USAGE
    return EXIT_PROBLEMS if problems else EXIT_OK


def run_add(args: argparse.Namespace) -> int:
    manifest_path, root = _locate(args)
    try:
        result = add(
            manifest_path,
            args.file,
            args.uri,
            root=root,
            gitignore=not args.no_gitignore,
            allow_outside_root=args.allow_outside_root,
        )
    except OSError as exc:  # reading problems are ManifestErrors: this is the writing
        where = exc.filename or manifest_path
        print(f"evalspec: error: cannot write {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    entry = result.entry
    verb = "updated" if result.previous is not None else "added"
    print(f"{manifest_path}: {verb} {show(entry.path)} ({entry.size} bytes, sha256 {entry.sha256})")
    if result.gitignore_added:
        print(f"{result.manifest.root / '.gitignore'}: ignoring {show(entry.path)}")
    if result.tracked:
        print(
            f"evalspec: warning: git still tracks {show(entry.path)}; run "
            f"`git rm --cached -- {entry.path}` to keep it out of the repository",
            file=sys.stderr,
        )
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    manifest_path, root = _locate(args)
    manifest = load_manifest(manifest_path, root=root)
    problems = verify(manifest)
    # verify adds at most one problem per readable entry after the reading problems.
    ok = len(manifest.entries) - (len(problems) - len(manifest.problems))
    if args.format == "json":
        doc = {
            "manifest": str(manifest_path),
            "root": str(manifest.root),
            "entries": manifest.listed,
            "ok": ok,
            "problems": [p.to_dict() for p in problems],
        }
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for p in problems:
            print(p.format())
        listed, found = counted(manifest.listed, "entry"), counted(len(problems), "problem")
        print(f"{manifest_path}: {listed}, {ok} ok, {found}")
    return _exit_code(problems)


def run_fetch(args: argparse.Namespace) -> int:
    manifest_path, root = _locate(args)
    manifest = load_manifest(manifest_path, root=root)
    wanted = set(args.paths) if args.paths else None
    if wanted is not None:
        unknown = sorted(wanted - {e.path for e in manifest.entries})
        if unknown:
            for path in unknown:
                print(f"evalspec: error: {manifest_path}: no entry {show(path)}", file=sys.stderr)
            return EXIT_USAGE
    limits = FetchLimits(
        max_bytes=args.max_size or None, allow_outside_root=args.allow_outside_root
    )
    result = fetch(manifest, force=args.force, paths=wanted, limits=limits)
    if args.format == "json":
        doc = {
            "manifest": str(manifest_path),
            "root": str(manifest.root),
            "fetched": [e.path for e in result.fetched],
            "present": [e.path for e in result.present],
            "problems": [p.to_dict() for p in result.problems],
        }
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for e in result.fetched:
            print(f"fetched {show(e.path)} ({e.size} bytes) from {show(e.uri)}")
        for p in result.problems:
            print(p.format())
        print(
            f"{manifest_path}: {len(result.fetched)} fetched, {len(result.present)} already "
            f"present, {counted(len(result.problems), 'problem')}"
        )
    return _exit_code(result.problems)
