"""``evalspec validate PATH... [--format text|json|github|sarif|junit] [--spec-version N]
[--jobs N] [--quiet] [--color WHEN]``; PATH may be ``-`` (standard input) or a directory."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from evalspec.commands.inputs import (
    STDIN,
    add_color,
    add_paths,
    add_quiet,
    display,
    expand,
    not_jsonl_hint,
    stdin_binary,
)
from evalspec.formats import FORMATS, FileReport, render_reports
from evalspec.model import ErrorRecord
from evalspec.registry import default_registry
from evalspec.terminal import Painter
from evalspec.validate import LineResult, ValidationResult, iter_validate
from evalspec.wording import counted


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="check task files against the spec",
        description="Validate task files line by line. Exit 0 when every line is valid, "
        "1 when any line is not, 2 on usage or I/O errors.",
    )
    add_paths(p)
    p.add_argument(
        "--format",
        choices=("text", "json", *FORMATS),
        default="text",
        help="text (default), json, github (workflow annotations), sarif (SARIF 2.1.0) "
        "or junit (JUnit XML, one test case per file)",
    )
    add_spec_version(p)
    p.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=None,
        metavar="N",
        help="check each file in N processes (default: by file size, "
        "one per core for big files); output is the same for any N",
    )
    add_quiet(p, "problems, one line each")
    add_color(p)
    p.set_defaults(run=run)


def add_spec_version(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--spec-version",
        type=int,
        default=None,
        metavar="N",
        help="validate against spec version N (default: the newest)",
    )


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


PLAIN = Painter(False)


def format_error(path: str, e: ErrorRecord, paint: Painter = PLAIN) -> str:
    """``file:line: rule field — message`` (one line, for people)."""
    field = f" {e.field}" if e.field else ""
    where = paint(f"{path}:{e.line}:", "bold")
    return f"{where} {paint(e.rule, 'red', 'bold')}{field} — {e.message}"


def summary(path: str, total: int, invalid: int, paint: Painter = PLAIN) -> str:
    """``file: 10 tasks, 9 valid, 1 invalid``."""
    counts = f"{counted(total, 'task')}, {total - invalid} valid, {invalid} invalid"
    return f"{paint(path + ':', 'bold')} {paint(counts, 'red' if invalid else 'green')}"


def _problems(
    path: str, args: argparse.Namespace, tally: Any, on_chunk: Any
) -> Iterator[LineResult]:
    from evalspec.parallel import iter_problems

    if path != STDIN:
        return iter_problems(
            path,
            spec_version=args.spec_version,
            jobs=getattr(args, "jobs", None),
            tally=tally,
            on_chunk=on_chunk,
        )
    return _stdin_problems(args.spec_version, tally)


def _stdin_problems(spec_version: int | None, tally: Any) -> Iterator[LineResult]:
    # A pipe is read once, in this process: the same verdicts as iter_problems.
    for verdict in iter_validate(stdin_binary(), spec_version=spec_version):
        tally.total += 1
        if verdict.task is None:
            tally.invalid += 1
            yield verdict


def run(args: argparse.Namespace) -> int:
    from evalspec.parallel import Tally
    from evalspec.progress import Progress

    default_registry(args.spec_version)  # plugin errors surface before any file is read
    paths, input_problems = expand(args.paths)
    for problem in input_problems:
        print(f"evalspec: error: {problem}", file=sys.stderr)
    quiet = getattr(args, "quiet", False)
    paint = Painter.for_stream(sys.stdout, getattr(args, "color", "auto"))
    reports: list[dict[str, Any]] = []
    file_reports: list[FileReport] = []
    io_failed = bool(input_problems)
    problems = False
    for path in paths:
        name = display(path)
        result = ValidationResult(path=name)
        tally = Tally()
        progress = Progress.for_stream(sys.stderr, name)
        first_error: ErrorRecord | None = None
        try:
            # Valid tasks are never built or held: only errors stream out.
            for verdict in _problems(path, args, tally, progress.update):
                if first_error is None and verdict.errors:
                    first_error = verdict.errors[0]
                if args.format == "text":
                    for e in verdict.errors:
                        print(format_error(name, e, paint))
                else:
                    result.errors.extend(verdict.errors)
            result.total, result.invalid = tally.total, tally.invalid
        except OSError as exc:
            progress.clear()
            io_failed = True
            reason = exc.strerror or str(exc)
            print(f"evalspec: error: cannot read {name}: {reason}", file=sys.stderr)
            reports.append({"path": name, "error": f"cannot read: {reason}"})
            file_reports.append(FileReport(name, (), reason))
            continue
        finally:
            progress.clear()
        problems = problems or result.invalid > 0
        if args.format == "text" and not quiet:
            print(summary(name, result.total, result.invalid, paint))
        hint = not_jsonl_hint(path, first_error)
        if hint is not None:
            print(hint, file=sys.stderr)
        reports.append(result.to_dict())
        file_reports.append(FileReport(name, tuple(result.errors)))
    if args.format in FORMATS:
        sys.stdout.write(render_reports(args.format, file_reports, command="evalspec validate"))
    elif args.format == "json":
        json.dump({"files": reports}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    if io_failed:
        return 2
    return 1 if problems else 0
