"""``evalspec manifest add|verify|fetch``: large files kept outside git, by checksum."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from evalspec.io.wording import counted
from evalspec.manifest import (
    DEFAULT_MANIFEST,
)
from evalspec.manifest.fetch import DEFAULT_MAX_BYTES
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


def run_add(args: argparse.Namespace) -> int:
    from evalspec.command import manifest_add

    result = manifest_add(
        args.file,
        args.uri,
        manifest=args.manifest,
        root=args.root,
        gitignore=not args.no_gitignore,
        allow_outside_root=args.allow_outside_root,
    )
    added = result.added
    if added is None:
        print(f"evalspec: error: {result.error}", file=sys.stderr)
        return result.exit_code
    entry = added.entry
    verb = "updated" if added.previous is not None else "added"
    print(
        f"{result.manifest_path}: {verb} {show(entry.path)} ({entry.size} bytes, "
        f"sha256 {entry.sha256})"
    )
    if added.gitignore_added:
        print(f"{added.manifest.root / '.gitignore'}: ignoring {show(entry.path)}")
    if added.tracked:
        print(
            f"evalspec: warning: git still tracks {show(entry.path)}; run "
            f"`git rm --cached -- {entry.path}` to keep it out of the repository",
            file=sys.stderr,
        )
    return result.exit_code


def run_verify(args: argparse.Namespace) -> int:
    from evalspec.command import manifest_verify

    result = manifest_verify(manifest=args.manifest, root=args.root)
    manifest, problems = result.manifest, result.problems
    if args.format == "json":
        doc = {
            "manifest": str(result.manifest_path),
            "root": str(manifest.root),
            "entries": manifest.listed,
            "ok": result.ok,
            "problems": [p.to_dict() for p in problems],
        }
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for p in problems:
            print(p.format())
        listed, found = counted(manifest.listed, "entry"), counted(len(problems), "problem")
        print(f"{result.manifest_path}: {listed}, {result.ok} ok, {found}")
    return result.exit_code


def run_fetch(args: argparse.Namespace) -> int:
    from evalspec.command import manifest_fetch

    result = manifest_fetch(
        args.paths,
        manifest=args.manifest,
        root=args.root,
        force=args.force,
        max_bytes=args.max_size,
        allow_outside_root=args.allow_outside_root,
    )
    for path in result.unknown:
        print(f"evalspec: error: {result.manifest_path}: no entry {show(path)}", file=sys.stderr)
    fetched = result.fetched
    if fetched is None:
        return result.exit_code
    if args.format == "json":
        doc = {
            "manifest": str(result.manifest_path),
            "root": str(result.manifest.root),
            "fetched": [e.path for e in fetched.fetched],
            "present": [e.path for e in fetched.present],
            "problems": [p.to_dict() for p in fetched.problems],
        }
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for e in fetched.fetched:
            print(f"fetched {show(e.path)} ({e.size} bytes) from {show(e.uri)}")
        for p in fetched.problems:
            print(p.format())
        print(
            f"{result.manifest_path}: {len(fetched.fetched)} fetched, "
            f"{len(fetched.present)} already present, "
            f"{counted(len(fetched.problems), 'problem')}"
        )
    return result.exit_code
