"""``evalspec validate PATH... [--format text|json|github|sarif|junit] [--spec-version N]
[--jobs N]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from evalspec.formats import FORMATS, FileReport, render_reports
from evalspec.model import ErrorRecord
from evalspec.validate import ValidationResult


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="check task files against the spec",
        description="Validate task files line by line. Exit 0 when every line is valid, "
        "1 when any line is not, 2 on usage or I/O errors.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="tasks.jsonl files")
    p.add_argument(
        "--format",
        choices=("text", "json", *FORMATS),
        default="text",
        help="text (default), json, github (workflow annotations), sarif (SARIF 2.1.0) "
        "or junit (JUnit XML, one test case per file)",
    )
    p.add_argument(
        "--spec-version",
        type=int,
        default=None,
        metavar="N",
        help="validate against spec version N (default: the newest)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=None,
        metavar="N",
        help="check each file in N processes (default: by file size, "
        "one per core for big files); output is the same for any N",
    )
    p.set_defaults(run=run)


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def format_error(path: str, e: ErrorRecord) -> str:
    """``file:line: rule field — message`` (one line, for people)."""
    field = f" {e.field}" if e.field else ""
    return f"{path}:{e.line}: {e.rule}{field} — {e.message}"


def run(args: argparse.Namespace) -> int:
    from evalspec.parallel import Tally, iter_problems
    from evalspec.progress import Progress
    from evalspec.snapshot import spec_in_force

    # The spec version in force, from the registry snapshot when it is current;
    # plugin errors surface before any file is read.
    spec = spec_in_force(args.spec_version)
    reports: list[dict[str, Any]] = []
    file_reports: list[FileReport] = []
    io_failed = problems = False
    for path in args.paths:
        result = ValidationResult(path=path)
        tally = Tally()
        progress = Progress.for_stream(sys.stderr, path)
        try:
            # Valid tasks are never built or held: only errors stream out.
            for verdict in iter_problems(
                path,
                spec_version=args.spec_version,
                jobs=getattr(args, "jobs", None),
                tally=tally,
                on_chunk=progress.update,
                spec=spec,
            ):
                if args.format == "text":
                    for e in verdict.errors:
                        print(format_error(path, e))
                else:
                    result.errors.extend(verdict.errors)
            result.total, result.invalid = tally.total, tally.invalid
        except OSError as exc:
            progress.clear()
            io_failed = True
            reason = exc.strerror or str(exc)
            print(f"evalspec: error: cannot read {path}: {reason}", file=sys.stderr)
            reports.append({"path": path, "error": f"cannot read: {reason}"})
            file_reports.append(FileReport(path, (), reason))
            continue
        finally:
            progress.clear()
        problems = problems or result.invalid > 0
        if args.format == "text":
            print(f"{path}: {result.total} tasks, {result.valid} valid, {result.invalid} invalid")
        reports.append(result.to_dict())
        file_reports.append(FileReport(path, tuple(result.errors)))
    if args.format in FORMATS:
        sys.stdout.write(render_reports(args.format, file_reports, command="evalspec validate"))
    elif args.format == "json":
        json.dump({"files": reports}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    if io_failed:
        return 2
    return 1 if problems else 0
