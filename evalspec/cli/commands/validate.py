"""``evalspec validate PATH... [--format text|json|github|sarif|junit] [--spec-version N]
[--jobs N] [--quiet] [--color WHEN]``; PATH may be ``-`` (standard input) or a directory."""

from __future__ import annotations

import argparse
import json
import os
import sys

from evalspec.cli.formatnames import FORMATS
from evalspec.cli.options import (
    add_color,
    add_executor_options,
    add_paths,
    add_quiet,
    add_spec_version,
)
from evalspec.io.inputs import STDIN, expand, input_name, stdin_binary
from evalspec.io.terminal import Painter
from evalspec.io.wording import counted, one_line
from evalspec.validation.messages import format_error, not_jsonl_hint, summary

# A warm run on a valid file imports neither typing, the value classes (attrs),
# the formatters nor the registry: the names below are annotations only, and the
# rest is imported where a run needs it. Type checkers treat any name
# TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from evalspec.model import ErrorRecord
    from evalspec.registry.tables import AnySpec
    from evalspec.validation.validator import LineResult

FileFound = tuple[str, tuple["ErrorRecord", ...], "str | None"]
"""``(path, errors, io_error)`` of one file, for the CI formats (a FileReport each)."""


def add_parser(sub: Any) -> None:
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
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _problems(
    path: str, args: argparse.Namespace, tally: Any, on_chunk: Any, spec: AnySpec
) -> Iterator[LineResult]:
    from evalspec.validation.engine import iter_problems

    if path != STDIN:
        return iter_problems(
            path,
            spec_version=args.spec_version,
            jobs=getattr(args, "jobs", None),
            tally=tally,
            on_chunk=on_chunk,
            spec=spec,
        )
    return _stdin_problems(args.spec_version, tally)


def _stdin_problems(spec_version: int | None, tally: Any) -> Iterator[LineResult]:
    from evalspec.validation.validator import iter_validate

    # A pipe is read once, in this process: the same verdicts as iter_problems.
    for verdict in iter_validate(stdin_binary(), spec_version=spec_version):
        tally.total += 1
        if verdict.task is None:
            tally.invalid += 1
            yield verdict


def run(args: argparse.Namespace) -> int:
    from evalspec.cli.progress import Progress
    from evalspec.validation.engine import Tally

    executor = getattr(args, "executor", "local")
    if getattr(args, "ray_address", None) is not None and executor != "ray":
        print("evalspec: error: --ray-address needs --executor ray", file=sys.stderr)
        return 2
    if executor == "ray":
        from evalspec.cluster.ray import import_ray

        import_ray()  # without the extra: say how to install it before reading anything
    from evalspec.registry.snapshot import tables_in_force

    # The spec version in force, from the registry snapshot when it is current
    # (as plain tables: no registry, no attrs); plugin errors surface before any
    # file is read.
    spec = tables_in_force(args.spec_version)
    paths, input_problems = expand(args.paths)
    for problem in input_problems:
        print(f"evalspec: error: {problem}", file=sys.stderr)
    quiet = getattr(args, "quiet", False)
    paint = Painter.for_stream(sys.stdout, getattr(args, "color", "auto"))
    reports: list[dict[str, Any]] = []
    file_reports: list[FileFound] = []
    datasets: list[dict[str, Any]] = []
    io_failed = bool(input_problems)
    problems = False
    for path in paths:
        if _sharded(path, executor):
            found, failed = _run_sharded(args, path, reports, file_reports, datasets)
            problems = problems or found
            io_failed = io_failed or failed
            continue
        name = input_name(path)
        errors: list[ErrorRecord] = []
        tally = Tally()
        progress = Progress.for_stream(sys.stderr, name)
        first_error: ErrorRecord | None = None
        try:
            # Valid tasks are never built or held: only errors stream out.
            for verdict in _problems(path, args, tally, progress.update, spec):
                if first_error is None and verdict.errors:
                    first_error = verdict.errors[0]
                if args.format == "text":
                    for e in verdict.errors:
                        print(format_error(name, e, paint))
                else:
                    errors.extend(verdict.errors)
        except OSError as exc:
            progress.clear()
            io_failed = True
            reason = exc.strerror or str(exc)
            from evalspec.validation.pool import WorkerLost

            # A lost --jobs worker is not the file's fault: say so.
            verb = "cannot check" if isinstance(exc, WorkerLost) else "cannot read"
            print(f"evalspec: error: {verb} {one_line(name)}: {one_line(reason)}", file=sys.stderr)
            reports.append({"path": name, "error": f"{verb}: {reason}"})
            file_reports.append((name, (), reason))
            continue
        finally:
            progress.clear()
        problems = problems or tally.invalid > 0
        if args.format == "text" and not quiet:
            print(summary(name, tally.total, tally.invalid, paint))
        hint = not_jsonl_hint(path, first_error)
        if hint is not None:
            print(hint, file=sys.stderr)
        if args.format == "json":
            from evalspec.validation.validator import ValidationResult

            result = ValidationResult(name, errors=errors, total=tally.total, invalid=tally.invalid)
            reports.append(result.to_dict())
        file_reports.append((name, tuple(errors), None))
    if args.format in FORMATS:
        from evalspec.cli.formats import FileReport, render_reports

        rendered = [FileReport(where, shown, io_error) for where, shown, io_error in file_reports]
        sys.stdout.write(render_reports(args.format, rendered, command="evalspec validate"))
    elif args.format == "json":
        doc: dict[str, Any] = {"files": reports}
        if datasets:
            doc["datasets"] = datasets
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    if io_failed:
        return 2
    return 1 if problems else 0


def _refuse_escaping(shards: list[str]) -> None:
    """A local shard is read as a named task file is: not through a symlink out of
    the repository (see :func:`evalspec.io.inputs.escape_problem`).

    :raises ShardError: one is.
    """
    from evalspec.io.inputs import escape_problem
    from evalspec.io.repository import repository_of
    from evalspec.validation.shards import ShardError

    root = repository_of(os.getcwd())
    for shard in shards:
        problem = None if "://" in shard else escape_problem(shard, root)
        if problem is not None:
            raise ShardError(problem)


def _sharded(path: str, executor: str) -> bool:
    """Whether ``path`` names a sharded dataset (a glob or URL, or anything under Ray)."""
    if path == STDIN:
        return False
    if executor == "ray":
        return True
    # A file whose name merely looks like a glob ("data[1].jsonl") is that file
    # (and the shards module is imported only for what may be a pattern).
    if os.path.exists(path):
        return False
    from evalspec.validation.shards import is_pattern

    return is_pattern(path)


def _run_sharded(
    args: argparse.Namespace,
    pattern: str,
    reports: list[dict[str, Any]],
    file_reports: list[FileFound],
    datasets: list[dict[str, Any]],
) -> tuple[bool, bool]:
    """Validate the shards of ``pattern`` as one dataset; ``(problems, io_failed)``."""
    from evalspec.validation.shards import ShardError, validate_shards_local, validate_shards_ray
    from evalspec.validation.shards import expand as expand_shards
    from evalspec.validation.validator import ValidationResult

    tty = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\r{pattern}: {done}/{total} shards checked", end=end, file=sys.stderr, flush=True)

    try:
        shards = expand_shards(pattern)
        _refuse_escaping(shards)
        if args.executor == "ray":
            from evalspec.cluster.ray import stdout_kept_for_reports

            with stdout_kept_for_reports():
                found = validate_shards_ray(
                    shards,
                    args.spec_version,
                    address=args.ray_address,
                    progress=progress if tty else None,
                )
        else:
            found = validate_shards_local(
                shards, args.spec_version, progress=progress if tty else None
            )
    except (OSError, ShardError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        print(
            f"evalspec: error: cannot read {one_line(pattern)}: {one_line(reason)}", file=sys.stderr
        )
        reports.append({"path": pattern, "error": f"cannot read: {reason}"})
        file_reports.append((pattern, (), reason))
        return False, True
    total = invalid = 0
    for shard in found:
        errors = [e for verdict in shard.errors for e in verdict.errors]
        result = ValidationResult(path=shard.shard, errors=errors)
        result.total, result.invalid = shard.total, shard.invalid
        total, invalid = total + shard.total, invalid + shard.invalid
        if args.format == "text":
            for e in errors:
                print(format_error(shard.shard, e))
            print(summary(shard.shard, result.total, result.invalid))
        reports.append(result.to_dict())
        file_reports.append((shard.shard, tuple(errors), None))
    dataset = {
        "pattern": pattern,
        "shards": len(found),
        "total": total,
        "valid": total - invalid,
        "invalid": invalid,
    }
    datasets.append(dataset)
    if args.format == "text":
        print(
            f"{pattern}: {counted(len(found), 'shard')}, {counted(total, 'task')}, "
            f"{total - invalid} valid, {invalid} invalid"
        )
    return invalid > 0, False
