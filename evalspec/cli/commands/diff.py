"""``evalspec diff OLD NEW`` / ``evalspec diff --rev A..B PATH``: a dataset change report."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from evalspec.io.safeload import MAX_TEXT_BYTES, DocumentError, read_bounded
from evalspec.io.wording import one_line


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "diff",
        help="report tasks added, removed and changed between two versions of a dataset",
        description="Compare two dataset files (OLD NEW), or one file at two git revisions "
        "(--rev A..B PATH; an empty B means the working tree). Prints Markdown for a pull "
        "request description, or JSON.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="OLD NEW, or PATH with --rev")
    p.add_argument(
        "--rev",
        metavar="A..B",
        help="compare PATH at revision A with revision B (empty B: the working tree; "
        "A...B: from the merge base of A and B, as a pull request does)",
    )
    p.add_argument(
        "--format",
        choices=("markdown", "json"),
        default="markdown",
        help="markdown (default; for a pull request description) or json for tools",
    )
    p.add_argument(
        "--fail-on-removal",
        action="store_true",
        help="exit 1 when any task was removed (relabel instead of deleting)",
    )
    p.add_argument(
        "--fail-on-duplicate",
        action="store_true",
        help="exit 1 when a task id appears on more than one line of either side",
    )
    p.set_defaults(run=run)


def _card_version(data: bytes | None) -> str | None:
    from evalspec.evals.card import parse_card

    if data is None:
        return None
    card, _ = parse_card(data.decode("utf-8", "replace"))
    return card.version if card is not None else None


def _read(path: Path) -> bytes | None:
    try:
        return read_bounded(path, MAX_TEXT_BYTES)
    except FileNotFoundError:
        return None
    except DocumentError as exc:
        raise _Usage(str(exc)) from None


def _open(path: Path, stack: contextlib.ExitStack) -> IO[bytes] | None:
    try:
        return stack.enter_context(path.open("rb"))
    except FileNotFoundError:
        return None


def _sides(
    args: argparse.Namespace, stack: contextlib.ExitStack
) -> tuple[IO[bytes] | None, IO[bytes] | None, str, str, str, bytes | None, bytes | None]:
    """The two sides as seekable binary files (closed by ``stack``), labels and cards."""
    from evalspec.evals import gitrepo
    from evalspec.evals.card import card_path

    if args.rev is None:
        if len(args.paths) != 2:
            raise _Usage("give OLD and NEW files, or --rev A..B PATH")
        old_p, new_p = Path(args.paths[0]), Path(args.paths[1])
        for p in (old_p, new_p):
            if not p.exists():
                raise _Usage(f"{one_line(str(p))}: no such file")
            if not p.is_file():  # a device, a named pipe, a directory: it cannot be reread
                raise _Usage(f"{one_line(str(p))}: not a regular file (diff reads each side twice)")
        return (
            stack.enter_context(old_p.open("rb")),
            stack.enter_context(new_p.open("rb")),
            str(old_p),
            str(new_p),
            str(new_p),
            _read(card_path(old_p)),
            _read(card_path(new_p)),
        )
    if len(args.paths) != 1:
        raise _Usage("--rev A..B takes exactly one PATH")
    three_dots = "..." in args.rev
    a, sep, b = args.rev.partition("..." if three_dots else "..")
    if not sep or not a:
        raise _Usage(f"--rev takes A..B (B may be empty for the working tree), got {args.rev!r}")
    path = Path(args.paths[0])
    root = gitrepo.toplevel(path)
    if root is None:
        raise _Usage(f"{path}: not inside a git repository")
    label_a = a
    if three_dots:
        # As in a pull request: compare from where B's history left A's.
        try:
            base = gitrepo.merge_base(root, a, b or "HEAD")
        except gitrepo.GitError as exc:
            raise _Usage(str(exc)) from None
        label_a, a = f"{a}...", base
    rel = path.resolve().relative_to(root.resolve())
    crel = card_path(rel)

    def at(rev: str, p: Path) -> IO[bytes] | None:
        if not rev:
            return _open(root / p, stack)
        # Spooled to a temp file, so a big dataset is never held in memory.
        spool: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        try:
            return spool if gitrepo.show_into(root, rev, p.as_posix(), spool) else None
        except gitrepo.GitError as exc:
            raise _Usage(str(exc)) from None

    def card_at(rev: str, p: Path) -> bytes | None:
        if not rev:
            return _read(root / p)
        try:
            data = gitrepo.show(root, rev, p.as_posix())
        except gitrepo.GitError as exc:
            raise _Usage(str(exc)) from None
        return data if data is None or len(data) <= MAX_TEXT_BYTES else None

    old, new = at(a, rel), at(b, rel)
    if old is None and new is None:
        raise _Usage(
            f"{rel.as_posix()} exists neither at {label_a} nor at {b or 'the working tree'}"
        )
    return (
        old,
        new,
        label_a,
        b or "working tree",
        rel.as_posix(),
        card_at(a, crel),
        card_at(b, crel),
    )


class _Usage(Exception):
    pass


def run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        return _run(args, stack)


def _head(stream: IO[bytes] | None) -> bytes | None:
    """The first bytes of a side, enough to tell a Git LFS pointer."""
    if stream is None:
        return None
    data = stream.read(2048)
    stream.seek(0)
    return data


def _run(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    from evalspec.evals.diff import diff_files, to_markdown
    from evalspec.evals.records import is_lfs_pointer

    try:
        old, new, old_label, new_label, title, old_card, new_card = _sides(args, stack)
    except _Usage as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"evalspec: error: cannot read {one_line(str(exc.filename))}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    for side, stream in (("old", old), ("new", new)):
        data = _head(stream)
        if data is not None and is_lfs_pointer(data):
            print(
                f"evalspec: error: the {side} side of {title} is a Git LFS pointer, not the "
                "data; run `git lfs pull`",
                file=sys.stderr,
            )
            return 2
    try:
        diff = diff_files(old, new, old_label, new_label)
    except OSError as exc:
        print(
            f"evalspec: error: cannot read {one_line(title)}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    diff.old_version = _card_version(old_card)
    diff.new_version = _card_version(new_card)
    if args.format == "json":
        json.dump({"dataset": title, **diff.to_dict()}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_markdown(diff, title))
    if args.fail_on_removal and diff.removed:
        return 1
    return 1 if args.fail_on_duplicate and diff.repeated else 0
