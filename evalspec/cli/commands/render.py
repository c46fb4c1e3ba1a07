"""``evalspec render PATH... [--format jsonl|json|text] [--allow-bad-tasks]``: the prompts a
model would receive. PATH may be ``-`` (standard input) or a directory."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from evalspec.cli.options import add_paths, add_spec_version
from evalspec.io.inputs import STDIN, expand, input_name, stdin_binary
from evalspec.io.wording import counted, one_line
from evalspec.model import TaskSpec
from evalspec.registry.build import default_registry
from evalspec.scoring.render import render
from evalspec.validation.messages import format_error, not_jsonl_hint
from evalspec.validation.validator import ValidationResult, validate_file

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


def _write(fmt: str, files: list[tuple[str, list[TaskSpec]]]) -> None:
    out = sys.stdout
    if fmt == "json":
        doc = {
            "files": [
                {
                    "path": name,
                    "tasks": [{"task_id": t.task_id, "prompt": render(t)} for t in tasks],
                }
                for name, tasks in files
            ]
        }
        json.dump(doc, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return
    first = True
    for name, tasks in files:
        for task in tasks:
            if fmt == "jsonl":
                line = json.dumps(
                    {"task_id": task.task_id, "prompt": render(task)}, ensure_ascii=False
                )
                out.write(line + "\n")
            else:
                out.write(("" if first else "\n") + f"==> {name} {task.task_id} <==\n")
                out.write(render(task) + "\n")
                first = False


def _validated(path: str, registry: Any) -> ValidationResult:
    """The tasks of ``path`` read line by line, as validate reads them: the line
    length limit applies, so ``/dev/zero`` or an endless pipe ends with an
    ``invalid_json`` error instead of being read into memory whole.

    :raises OSError: the file cannot be read.
    """
    with contextlib.ExitStack() as stack:
        f = stdin_binary() if path == STDIN else stack.enter_context(open(path, "rb"))
        return validate_file(f, registry=registry)


def run(args: argparse.Namespace) -> int:
    registry = default_registry(args.spec_version)
    paths, input_problems = expand(args.paths)
    for problem in input_problems:
        print(f"evalspec: error: {problem}", file=sys.stderr)
    if input_problems:
        return 2
    files: list[tuple[str, list[TaskSpec]]] = []
    total = invalid = 0
    for path in paths:
        name = input_name(path)
        try:
            result = _validated(path, registry)
        except OSError as exc:
            reason = one_line(str(exc.strerror or exc))
            print(f"evalspec: error: cannot read {one_line(name)}: {reason}", file=sys.stderr)
            return 2
        for e in result.errors:
            print(format_error(name, e), file=sys.stderr)
        hint = not_jsonl_hint(path, result.errors[0] if result.errors else None)
        if hint is not None:
            print(hint, file=sys.stderr)
        total += result.total
        invalid += result.invalid
        files.append((name, result.validated))
    if invalid and not args.allow_bad_tasks:
        print(
            f"evalspec: refusing to render: {invalid} of {counted(total, 'task')} "
            f"{'is' if invalid == 1 else 'are'} invalid "
            "(fix them, or pass --allow-bad-tasks to render the valid ones)",
            file=sys.stderr,
        )
        return 1
    _write(args.format, files)
    if invalid:
        print(
            f"evalspec: rendered {counted(total - invalid, 'task')}, skipped {invalid} invalid",
            file=sys.stderr,
        )
    return 0
