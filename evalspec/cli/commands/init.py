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
    p.add_argument(
        "dir",
        nargs="?",
        default=".",
        metavar="DIR",
        help="where the layout goes (default: the current directory); created if missing",
    )
    p.add_argument(
        "--owner",
        default=None,
        metavar="OWNER",
        help="the eval owner written into the example card and CODEOWNERS "
        "(a GitHub @user or @org/team; default @eval-owner)",
    )
    p.set_defaults(run=run)


def missing_dependency() -> str | None:
    """Why init cannot finish here (PyYAML missing), found before anything is written:
    the CODEOWNERS step reads the data cards' YAML front matter."""
    from evalspec.evals.yamlfile import MissingYamlError, load_mapping

    try:
        load_mapping("", what="the dependency probe")
    except MissingYamlError as exc:
        return str(exc)
    return None


def _next_step(args: argparse.Namespace, card_created: bool) -> str:
    from evalspec.evals.scaffold import DEFAULT_OWNER

    where = "" if args.dir in (".", "./") else f" {args.dir}"
    lint = f"`evalspec lint{where}`"
    if args.owner is None and card_created:
        return (
            f"next: replace the placeholder owner {DEFAULT_OWNER} in the card and in CODEOWNERS "
            f"(or rerun with --owner), then run {lint}"
        )
    return (
        "next: add your datasets beside the example, each NAME.jsonl with a NAME.card.md; "
        f"run {lint}"
    )


def run(args: argparse.Namespace) -> int:
    from evalspec.evals.card import OWNER_PATTERN
    from evalspec.evals.scaffold import DEFAULT_OWNER, scaffold

    missing = missing_dependency()
    if missing is not None:
        print(f"evalspec: error: {missing} (nothing was written)", file=sys.stderr)
        return 2
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
    print(_next_step(args, any(rel.endswith(".card.md") for rel in result.created)))
    return 0
