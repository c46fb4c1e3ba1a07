"""``evalspec render PATH [--allow-bad-tasks]``: the prompts a model would receive."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from evalspec.commands.validate import format_error
from evalspec.prompting import render
from evalspec.registry import default_registry
from evalspec.validate import validate_file


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "render",
        help="print the rendered prompt of every task",
        description='Print one {"task_id", "prompt"} JSON line per task. Refuses to start '
        "when any line is invalid, unless --allow-bad-tasks.",
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument(
        "--allow-bad-tasks",
        action="store_true",
        help="render the valid tasks and report the invalid ones on stderr",
    )
    p.add_argument("--spec-version", type=int, default=None, metavar="N")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    registry = default_registry(args.spec_version)
    try:
        result = validate_file(args.path, registry=registry)
    except OSError as exc:
        print(f"evalspec: error: cannot read {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for e in result.errors:
        print(format_error(args.path, e), file=sys.stderr)
    if result.errors and not args.allow_bad_tasks:
        print(
            f"evalspec: refusing to render: {result.invalid} of {result.total} tasks are invalid "
            "(fix them, or pass --allow-bad-tasks to render the valid ones)",
            file=sys.stderr,
        )
        return 1
    for task in result.validated:
        sys.stdout.write(
            json.dumps({"task_id": task.task_id, "prompt": render(task)}, ensure_ascii=False) + "\n"
        )
    if result.errors:
        print(
            f"evalspec: rendered {result.valid} tasks, skipped {result.invalid} invalid",
            file=sys.stderr,
        )
    return 0
