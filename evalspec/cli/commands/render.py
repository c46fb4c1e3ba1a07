"""``evalspec render PATH... [--format jsonl|json|text] [--allow-bad-tasks]``: the prompts a
model would receive. PATH may be ``-`` (standard input) or a directory."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from evalspec.cli.options import add_paths, add_spec_version
from evalspec.io.wording import counted
from evalspec.validation.messages import format_error

if TYPE_CHECKING:
    from evalspec.command import RenderedFile

FORMATS = ("jsonl", "json", "text")


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "render",
        help="print the rendered prompt of every task",
        description="Print every task's prompt exactly as a model receives it (few-shot "
        'examples rendered in). Default: one {"task_id", "prompt"} JSON line per task. '
        "Refuses to start when any line of any file is invalid, unless --allow-bad-tasks. "
        "Exit 0 when rendered, 1 when refused, 2 on usage or I/O errors.",
    )
    add_paths(p)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help='jsonl (default): one {"task_id", "prompt"} line per task; json: one document '
        '{"files": [{"path", "tasks": [{"task_id", "prompt"}]}]}; text: each prompt under '
        "a ==> PATH TASK_ID <== header, for reading",
    )
    p.add_argument(
        "--allow-bad-tasks",
        action="store_true",
        help="render the valid tasks and report the invalid ones on stderr",
    )
    add_spec_version(p)
    p.set_defaults(run=run)


def _write(fmt: str, files: tuple[RenderedFile, ...]) -> None:
    out = sys.stdout
    if fmt == "json":
        doc = {
            "files": [
                {
                    "path": f.name,
                    "tasks": [
                        {"task_id": task_id, "prompt": prompt} for task_id, prompt in f.prompts
                    ],
                }
                for f in files
            ]
        }
        json.dump(doc, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return
    first = True
    for f in files:
        for task_id, prompt in f.prompts:
            if fmt == "jsonl":
                line = json.dumps({"task_id": task_id, "prompt": prompt}, ensure_ascii=False)
                out.write(line + "\n")
            else:
                out.write(("" if first else "\n") + f"==> {f.name} {task_id} <==\n")
                out.write(prompt + "\n")
                first = False


def run(args: argparse.Namespace) -> int:
    from evalspec.command import render

    result = render(
        args.paths, spec_version=args.spec_version, allow_bad_tasks=args.allow_bad_tasks
    )
    for problem in result.input_problems:
        print(f"evalspec: error: {problem}", file=sys.stderr)
    for f in result.files:
        for e in f.errors:
            print(format_error(f.name, e), file=sys.stderr)
        if f.hint is not None:
            print(f.hint, file=sys.stderr)
    if result.failure is not None:
        print(f"evalspec: error: {result.failure}", file=sys.stderr)
    if result.input_problems or result.failure is not None:
        return result.exit_code
    total, invalid = result.total, result.invalid
    if result.refused:
        print(
            f"evalspec: refusing to render: {invalid} of {counted(total, 'task')} "
            f"{'is' if invalid == 1 else 'are'} invalid "
            "(fix them, or pass --allow-bad-tasks to render the valid ones)",
            file=sys.stderr,
        )
        return result.exit_code
    _write(args.format, result.files)
    if invalid:
        print(
            f"evalspec: rendered {counted(total - invalid, 'task')}, skipped {invalid} invalid",
            file=sys.stderr,
        )
    return result.exit_code
