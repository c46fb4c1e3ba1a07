"""``evalspec validate PATH... [--format text|json|github|sarif|junit] [--spec-version N]
[--jobs N] [--quiet] [--color WHEN]``; PATH may be ``-`` (standard input) or a directory."""

from __future__ import annotations

import sys

from evalspec.cli.formatnames import FORMATS
from evalspec.io.terminal import Painter
from evalspec.io.wording import counted, one_line
from evalspec.validation.messages import format_error, summary

# A warm run on a valid file imports neither typing, the value classes (attrs),
# the formatters, the registry, argparse nor json (argparse with re, gettext and
# locale, and json with re, cost it ~10 ms): the names below are annotations
# only, and the rest is imported where a run needs it. Type checkers treat any
# name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from evalspec.cli.progress import Progress
    from evalspec.model import ErrorRecord
    from evalspec.validation.files import DatasetValidation, FileValidation, ValidateResult


def add_parser(sub: Any) -> None:
    from evalspec.cli.options import (
        add_color,
        add_executor_options,
        add_paths,
        add_quiet,
        add_spec_version,
    )

    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="check task files against the spec",
        description="Validate task files line by line. Exit 0 when every line is valid, "
        "1 when any line is not, 2 on usage or I/O errors.",
    )
    add_paths(
        p,
        "; a quoted glob or fsspec URL ('s3://bucket/evals/*.jsonl') is one dataset in "
        "shards, task ids unique across them",
    )
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
    add_executor_options(
        p,
        "where shards are checked: local (this process) or ray (in parallel on the "
        "cluster; pip install 'evalspec-contract[ray]'); the output is the same",
    )
    add_quiet(p, "problems, one line each")
    add_color(p)
    p.set_defaults(run=run)


def _jobs(text: str) -> int:
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def quick_args(words: list[str]) -> Any | None:
    """The namespace argparse would make of ``evalspec validate PATH...`` (every word
    after the command a path: none empty or starting with ``-``), without argparse;
    ``None`` for any other command line (argparse parses it).

    A warm ``evalspec validate`` of a small file is over in a few milliseconds, and
    argparse (with :mod:`re`, :mod:`gettext` and :mod:`locale`) would add ~7 ms to
    them. ``tests/cli/test_startup.py`` holds this to argparse's namespace.
    """
    if len(words) < 2 or words[0] != "validate":
        return None
    paths = words[1:]
    if not all(word and word[0] != "-" for word in paths):
        return None
    from types import SimpleNamespace

    return SimpleNamespace(
        version=None,
        command="validate",
        paths=paths,
        format="text",
        spec_version=None,
        jobs=None,
        executor="local",
        ray_address=None,
        quiet=False,
        color="auto",
        run=run,
    )


def run(args: argparse.Namespace) -> int:
    from evalspec.validation.files import DatasetValidation, validate

    text = args.format == "text"
    quiet = getattr(args, "quiet", False)
    paint = Painter.for_stream(sys.stdout, getattr(args, "color", "auto"))

    def print_error(name: str, e: ErrorRecord) -> None:
        # One write, not print's two (the line, then its end): once an error.
        sys.stdout.write(format_error(name, e, paint) + "\n")

    def print_entry(entry: FileValidation | DatasetValidation) -> None:
        if isinstance(entry, DatasetValidation):
            if text:
                _print_dataset(entry)
            return
        if entry.failure is not None:
            print(
                f"evalspec: error: {entry.failure} {one_line(entry.name)}: "
                f"{one_line(entry.reason or '')}",
                file=sys.stderr,
            )
            return
        if text and not quiet:
            print(summary(entry.name, entry.total, entry.invalid, paint))
        if entry.hint is not None:
            print(entry.hint, file=sys.stderr)

    tty = sys.stderr.isatty()
    executor = getattr(args, "executor", "local")
    result = validate(
        args.paths,
        spec_version=args.spec_version,
        jobs=getattr(args, "jobs", None),
        executor=executor,
        ray_address=getattr(args, "ray_address", None),
        on_error=print_error if text else None,
        on_entry=print_entry,
        progress=_progress if tty else None,
        shard_progress=_shard_progress if tty else None,
        on_input_problem=lambda problem: print(f"evalspec: error: {problem}", file=sys.stderr),
    )
    if args.format in FORMATS:
        from evalspec.cli.formats import FileReport, render_reports

        rendered = [FileReport(f.name, f.errors, f.reason) for f in result.files]
        sys.stdout.write(render_reports(args.format, rendered, command="evalspec validate"))
    elif args.format == "json":
        import json

        json.dump(_json_document(result), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    return result.exit_code


def _json_document(result: ValidateResult) -> dict[str, Any]:
    from evalspec.validation.files import DatasetValidation
    from evalspec.validation.validator import ValidationResult

    files: list[dict[str, Any]] = []
    datasets: list[dict[str, Any]] = []
    for entry in result.entries:
        if isinstance(entry, DatasetValidation):
            datasets.append(
                {
                    "pattern": entry.pattern,
                    "shards": len(entry.shards),
                    "total": entry.total,
                    "valid": entry.total - entry.invalid,
                    "invalid": entry.invalid,
                }
            )
        shown = entry.shards if isinstance(entry, DatasetValidation) else (entry,)
        for f in shown:
            if f.failure is not None:
                files.append({"path": f.name, "error": f"{f.failure}: {f.reason}"})
                continue
            verdict = ValidationResult(
                f.name, errors=list(f.errors), total=f.total, invalid=f.invalid
            )
            files.append(verdict.to_dict())
    doc: dict[str, Any] = {"files": files}
    if datasets:
        doc["datasets"] = datasets
    return doc


def _progress(name: str) -> Progress:
    # Only on a terminal, where a line is drawn: elsewhere Progress.for_stream would
    # make one that draws nothing, and its module is one more to load.
    from evalspec.cli.progress import Progress

    return Progress.for_stream(sys.stderr, name)


def _shard_progress(pattern: str, done: int, total: int) -> None:
    end = "\n" if done == total else ""
    print(f"\r{pattern}: {done}/{total} shards checked", end=end, file=sys.stderr, flush=True)


def _print_dataset(dataset: DatasetValidation) -> None:
    # A dataset's lines are printed without colour, as they always were.
    for shard in dataset.shards:
        for e in shard.errors:
            print(format_error(shard.name, e))
        print(summary(shard.name, shard.total, shard.invalid))
    total, invalid = dataset.total, dataset.invalid
    print(
        f"{dataset.pattern}: {counted(len(dataset.shards), 'shard')}, "
        f"{counted(total, 'task')}, {total - invalid} valid, {invalid} invalid"
    )
