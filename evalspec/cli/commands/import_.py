"""``evalspec import INPUT --mapping FILE --output FILE [--force]``: tasks built from
benchmark rows (JSONL, CSV, Parquet) through a mapping file, every one validated."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from evalspec.errors import MissingDependencyError, SpecVersionError
from evalspec.importing.mapping import MappingError, read_mapping
from evalspec.importing.rows import HEADER
from evalspec.importing.tasks import (
    FewShotError,
    ImportResult,
    OutputExistsError,
    format_report,
    import_rows,
    write_tasks,
)
from evalspec.io.atomicfile import UnsafePathError
from evalspec.io.inputs import STDIN
from evalspec.io.wording import counted, one_line


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "import",
        help="build a task file from benchmark rows (JSONL, CSV, Parquet) and a mapping",
        description="Build one task per row of INPUT (JSON Lines, optionally gzipped; CSV; "
        "Parquet with the 'parquet' extra) from the templates of a mapping file (YAML or "
        "TOML), and validate every task at the mapping's spec_version. A row that cannot "
        "be mapped, or whose task the validator rejects, is reported by row number with "
        "the rule, field and message; then nothing is written. Exit 0 when every row made "
        "a valid task and the file was written, 1 when rows were reported, 2 on usage or "
        "I/O errors (a bad mapping, an unreadable input, an existing output without "
        "--force). See docs/import.md.",
    )
    p.add_argument("input", metavar="INPUT", help="the benchmark rows, as published")
    p.add_argument(
        "--mapping",
        "-m",
        required=True,
        metavar="FILE",
        help="the mapping file (.yaml, .yml or .toml)",
    )
    p.add_argument(
        "--output",
        "-o",
        required=True,
        metavar="FILE",
        help="the task file to write (JSON Lines); - writes standard output",
    )
    p.add_argument("--force", action="store_true", help="replace the output file if it exists")
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="how the outcome is reported: text (default: one line per reported row on "
        "stderr) or json (one document on stdout: input, output, spec_version, rows, tasks, "
        "written, problems [{row, line, rule, field, message, task_id}])",
    )
    p.add_argument(
        "--quiet", "-q", action="store_true", help="print only the problems: no summary line"
    )
    p.set_defaults(run=run)


def _error(message: str) -> int:
    print(f"evalspec: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    if args.input == STDIN:
        return _error("INPUT must be a file: its format is read from its name")
    if args.format == "json" and args.output == STDIN:
        return _error("--format json prints the report on standard output: name an --output file")
    try:
        mapping = read_mapping(args.mapping)
    except MappingError as exc:
        return _error(str(exc))
    if args.output != STDIN and not args.force and os.path.lexists(args.output):
        return _error(f"refusing to overwrite {one_line(args.output)}: it exists (pass --force)")
    try:
        result = import_rows(args.input, mapping)
    except OSError as exc:
        name = one_line(str(exc.filename or args.input))
        return _error(f"cannot read {name}: {one_line(str(exc.strerror or exc))}")
    except (MappingError, FewShotError, SpecVersionError, MissingDependencyError) as exc:
        return _error(one_line(str(exc)))
    if args.format == "json":
        return _json_outcome(args, result, mapping.spec_version)
    for report in result.problems:
        print(format_report(args.input, report), file=sys.stderr)
    if not result.ok:
        rows = len({p.row for p in result.problems if p.row != HEADER})
        what = f"{rows} of {counted(result.rows, 'row')} cannot be imported"
        if any(p.row == HEADER for p in result.problems):
            what = "the header cannot be read"
        print(f"evalspec: {what}; nothing written", file=sys.stderr)
        return 1
    if args.output == STDIN:
        sys.stdout.write(result.text())
        sys.stdout.flush()
    else:
        problem = _write(result, args)
        if problem is not None:
            return _error(problem)
    if not args.quiet:
        where = "standard output" if args.output == STDIN else one_line(args.output)
        print(
            f"evalspec: imported {counted(len(result.tasks), 'task')} from "
            f"{one_line(args.input)} into {where} (spec version {mapping.spec_version})",
            file=sys.stderr,
        )
    return 0


def _write(result: ImportResult, args: argparse.Namespace) -> str | None:
    """Write the task file; the error line when it cannot be."""
    try:
        write_tasks(result, args.output, force=args.force)
    except (OutputExistsError, UnsafePathError) as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot write {one_line(args.output)}: {one_line(str(exc.strerror or exc))}"
    return None


def _json_outcome(args: argparse.Namespace, result: ImportResult, spec_version: int) -> int:
    """The report as one JSON document; the file is written only when every row imported."""
    problem = None if not result.ok else _write(result, args)
    if problem is not None:
        return _error(problem)
    doc = {
        "input": args.input,
        "output": args.output,
        "spec_version": spec_version,
        "rows": result.rows,
        "tasks": len(result.tasks),
        "written": result.ok,
        "problems": [p.to_dict() for p in result.problems],
    }
    json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0 if result.ok else 1
