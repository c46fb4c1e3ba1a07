"""``evalspec diff OLD NEW`` / ``evalspec diff --rev A..B PATH``: a dataset change report."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


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


def run(args: argparse.Namespace) -> int:
    from evalspec.command import diff
    from evalspec.evals.diff import to_markdown

    result = diff(
        args.paths,
        rev=args.rev,
        fail_on_removal=args.fail_on_removal,
        fail_on_duplicate=args.fail_on_duplicate,
    )
    if result.diff is None or result.title is None:
        print(f"evalspec: error: {result.error}", file=sys.stderr)
        return result.exit_code
    if args.format == "json":
        doc = {"dataset": result.title, **result.diff.to_dict()}
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_markdown(result.diff, result.title))
    return result.exit_code
