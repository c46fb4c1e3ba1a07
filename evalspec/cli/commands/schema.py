"""``evalspec schema [--spec-version N] [--indent N]``: print the task JSON Schema."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "schema",
        help="print the JSON Schema (Draft 2020-12) of a task",
        description="Print a Draft 2020-12 JSON Schema of one task line at a spec version, "
        "for editors and tools in other languages. The validator stays the authority: "
        "the schema cannot check task_id uniqueness, duplicate keys or embedded few-shot "
        "blocks.",
    )
    p.add_argument(
        "--spec-version",
        type=int,
        default=None,
        metavar="N",
        help="the spec version to describe (default: the newest)",
    )
    p.add_argument(
        "--indent",
        type=_indent,
        default=2,
        metavar="N",
        help=f"JSON indentation, 0 to {MAX_INDENT} (default: 2)",
    )
    p.set_defaults(run=run)


MAX_INDENT = 16
"""An indent is a string of that many spaces: a huge one would exhaust the memory."""


def _indent(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_INDENT:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_INDENT}, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from evalspec.command import schema

    found = schema(spec_version=args.spec_version)
    json.dump(found, sys.stdout, ensure_ascii=False, indent=args.indent)
    sys.stdout.write("\n")
    return 0
