"""``evalspec export lm-eval TASKS --output DIR``: a task file as another harness's task."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evalspec.cli.options import add_spec_version
from evalspec.io.exitcodes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from evalspec.io.wording import counted, one_line
from evalspec.registry.build import default_registry


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "export",
        help="write a task file as an lm-evaluation-harness task",
        description="Write TASKS as an lm-evaluation-harness task directory (a task YAML, "
        "the task file and a small Python module) that renders evalspec's prompt and "
        "scores with the task's own post-process rule and metric, so lm-eval reports "
        "what `evalspec score` reports. Run it with `lm_eval --include_path DIR --tasks "
        "NAME`. Exit 0 when written, 1 when TASKS has invalid lines (each is listed), "
        "2 on usage or I/O errors.",
    )
    p.add_argument("harness", choices=("lm-eval",), help="the harness to export for")
    p.add_argument("tasks", metavar="TASKS", help="the task file (JSON Lines)")
    p.add_argument("--output", metavar="DIR", required=True, help="the task directory to write")
    p.add_argument("--name", help="the lm-eval task name (default: the file's stem)")
    p.add_argument(
        "--allow-code-exec",
        action="store_true",
        help="export code_exec tasks: lm-eval then runs the model's output in evalspec's sandbox",
    )
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR")
    add_spec_version(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from evalspec.integrations.lm_eval_export import ExportError, export_lm_eval

    registry = default_registry(args.spec_version)
    try:
        done = export_lm_eval(
            args.tasks,
            args.output,
            registry=registry,
            name=args.name,
            allow_code_exec=args.allow_code_exec,
            force=args.force,
        )
    except ExportError as exc:
        lines = str(exc).splitlines()
        invalid = lines[-1].endswith("refusing to export invalid tasks")
        for line in lines[:-1] if invalid else ():
            print(line, file=sys.stderr)
        print(f"evalspec: error: {lines[-1]}", file=sys.stderr)
        return EXIT_PROBLEMS if invalid else EXIT_USAGE
    except OSError as exc:
        where = one_line(exc.filename or args.tasks)
        print(f"evalspec: error: {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"evalspec: wrote lm-eval task {done.task_name!r} ({counted(done.tasks, 'task')}) "
        f"to {done.directory}: lm_eval --include_path {done.directory} --tasks {done.task_name}",
        file=sys.stderr,
    )
    return EXIT_OK
