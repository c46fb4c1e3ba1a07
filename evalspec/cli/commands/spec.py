"""``evalspec spec list|show|new|check|lock``: author, check and release spec migrations.

Runs in the project of the nearest ``pyproject.toml`` above the current
directory (see :mod:`evalspec.registry.project`). Text for people by
default, ``--format json`` for tools. Exit 0 clean, 1 problems found, 2
usage or I/O error. The work is :mod:`evalspec.command`'s ``spec_*`` functions.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "spec",
        help="list, show, author, check and release spec versions",
        description="Spec versions are migrations: list them, show one, scaffold the next, "
        "check the chain, gate, lock, fixtures, implementations and changelog, and release "
        "the head with `spec lock`. Runs in the project of the nearest pyproject.toml.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        a: argparse.ArgumentParser = actions.add_parser(name, help=help_text, description=help_text)
        a.add_argument(
            "--format",
            choices=("text", "json"),
            default="text",
            help="text for people (default) or json for tools",
        )
        return a

    action("list", "every spec version, what it adds, released or pending")
    show = action("show", "the vocabulary and pair table at one spec version")
    show.add_argument(
        "number",
        type=int,
        nargs="?",
        metavar="N",
        help="the spec version (default: the newest in force)",
    )
    new = action("new", "scaffold the next migration and its fixture stub")
    new.add_argument(
        "--category", required=True, metavar="NAME", help="the category the migration adds"
    )
    new.add_argument(
        "--metric",
        action="append",
        required=True,
        metavar="M",
        help="a metric the category allows (repeatable)",
    )
    new.add_argument(
        "--post-process",
        action="append",
        required=True,
        metavar="R",
        dest="post_process",
        help="a post-process rule it allows (repeatable)",
    )
    new.add_argument(
        "--fixture",
        metavar="FILE",
        help="the fixture file (default: fixtures/NAME.jsonl in the migrations "
        "directory; an existing file elsewhere is copied there)",
    )
    new.add_argument("--message", metavar="TEXT", help="the migration's one-line message")
    action("check", "check chain, gate, lock, fixtures, implementations and changelog")
    lock = action("lock", "release the current head: record checksums in the project's lock")
    lock.add_argument(
        "--repair",
        type=int,
        metavar="N",
        help="re-record the checksums of released versions N and later after a deliberate "
        "edit; only for versions never published (otherwise add a new migration)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from evalspec import command

    if args.action == "list":
        result = command.spec_list()
    elif args.action == "show":
        result = command.spec_show(args.number)
    elif args.action == "new":
        result = command.spec_new(
            category=args.category,
            metrics=args.metric,
            post_processes=args.post_process,
            fixture=args.fixture,
            message=args.message,
        )
    elif args.action == "check":
        result = command.spec_check()
    else:
        result = command.spec_lock(repair=args.repair)
    if args.format == "json":
        if result.doc is not None:
            json.dump(result.doc, sys.stdout, ensure_ascii=False, indent=2)
            sys.stdout.write("\n")
    else:
        for line in result.lines:
            print(line)
    for line in result.errors:
        print(f"evalspec: error: {line}", file=sys.stderr)
    return result.exit_code
