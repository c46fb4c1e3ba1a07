"""``evalspec init [DIR] [--owner OWNER]``: scaffold an evals-as-code layout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "init",
        help="scaffold datasets/, rubrics/, scripts/, config/ and reports/",
        description="Create the evals-as-code layout with an example dataset, its data card, "
        "config/labels.yaml, config/gates.yaml and CODEOWNERS entries. Never overwrites a file.",
    )
    p.add_argument("dir", nargs="?", default=".", metavar="DIR")
    p.add_argument(
        "--owner",
        default=None,
        metavar="OWNER",
        help="the eval owner written into the example card and CODEOWNERS "
        "(a GitHub @user or @org/team; default @eval-owner)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from evalspec.project.card import OWNER_PATTERN
    from evalspec.project.scaffold import DEFAULT_OWNER, scaffold

    owner = args.owner or DEFAULT_OWNER
    if not OWNER_PATTERN.match(owner):
        print(
            f"evalspec: error: --owner {owner!r} is not a GitHub @user, @org/team or e-mail",
            file=sys.stderr,
        )
        return 2
    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        print(f"evalspec: error: {args.dir} exists and is not a directory", file=sys.stderr)
        return 2
    try:
        result = scaffold(target, owner)
    except OSError as exc:
        print(
            f"evalspec: error: cannot write {exc.filename or args.dir}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    for rel in result.created:
        print(f"created  {rel}")
    for rel in result.appended:
        print(f"appended {rel} (reports/ is generated, not hand-edited)")
    for rel in result.skipped:
        print(f"skipped  {rel} (exists)")
    for note in result.notes:
        print(f"note: {note}")
    print("next: edit datasets/example.card.md (owner), then run `evalspec lint`")
    return 0
