"""``evalspec lint [PATH...] [--format text|json|github|sarif|junit] [--base REV] [--no-git]
[--select CODES] [--ignore CODES] [--statistics] [--no-group]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from evalspec.cli.options import add_color, add_quiet
from evalspec.io.terminal import Painter
from evalspec.io.wording import counted, one_line
from evalspec.validation.messages import format_error

if TYPE_CHECKING:
    from evalspec.evals.lint import LintReport
    from evalspec.model import ErrorRecord


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "lint",
        help="check the datasets of an evals-as-code layout before they are merged",
        description="Lint datasets: data card, task spec at the card's spec version, labels, "
        "conflicting targets, few-shot leakage, mcq options, id collisions, LFS pointers, code "
        "owners and version bumps. The layout's config/lint.yaml chooses rules (select, ignore, "
        "per-file-ignores); a data card's suppress: entries suppress findings on single tasks, "
        "with a reason (docs/lint.md). Exit 0 clean, 1 on any problem, 2 on usage or I/O errors.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a layout directory, a datasets directory or NAME.jsonl files; a directory "
        "outside any layout stands for the layouts below it (default: .)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "github", "sarif", "junit"),
        default="text",
        help="text for people, json for tools; github annotations, SARIF 2.1.0 or JUnit XML "
        "for CI (see evalspec.cli.formats)",
    )
    p.add_argument(
        "--base",
        default="HEAD",
        metavar="REV",
        help="the revision a changed dataset must have bumped its version against "
        "(default: HEAD; in CI use the pull request's base, e.g. origin/main)",
    )
    p.add_argument("--no-git", action="store_true", help="skip the version-bump check")
    p.add_argument(
        "--select",
        type=_codes,
        default=(),
        metavar="CODES",
        help="report only these rule codes (comma-separated; a code also names the rules "
        "it is the word prefix of: card = card_missing, card_syntax, ...)",
    )
    p.add_argument(
        "--ignore",
        type=_codes,
        default=(),
        metavar="CODES",
        help="do not report these rule codes (as --select; wins over it)",
    )
    p.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of problems per rule instead of the problems",
    )
    p.add_argument(
        "--no-group",
        action="store_true",
        help="print every problem; by default text output prints the first 3 problems "
        "of a kind (same file, rule, field and message but for its quoted values and "
        "numbers) and folds the rest into one line that counts them and names their lines",
    )
    add_quiet(p, "problems, one line each")
    add_color(p)
    p.set_defaults(run=run)


def _codes(text: str) -> tuple[str, ...]:
    codes = tuple(c.strip() for c in text.split(",") if c.strip())
    if not codes:
        raise argparse.ArgumentTypeError("give one or more rule codes, comma-separated")
    return codes


def _ci_document(name: str, report: LintReport) -> str:
    """The lint findings in a CI format, one file entry per dataset and card."""
    from evalspec.cli.formats import FileReport, render_reports
    from evalspec.evals.lintrules import LINT_RULES
    from evalspec.rules import RULES

    by_file: dict[str, list[ErrorRecord]] = {d.path: [] for d in report.datasets}
    for p in report.problems():
        by_file.setdefault(p.file, []).append(p.error)
    files = [FileReport(path, tuple(errors)) for path, errors in by_file.items()]
    rules = {**RULES, **LINT_RULES}
    return render_reports(name, files, rules=rules, command="evalspec lint")


def _summary(report: LintReport, paint: Painter) -> None:
    for d in report.datasets:
        status = paint("ok", "green") if not d.problems else counted(len(d.problems), "problem")
        if d.suppressed:
            status += f" ({len(d.suppressed)} suppressed)"
        version = d.version if d.version is not None else "?"
        print(
            f"{one_line(d.path)}: {counted(d.tasks, 'task')}, version {version}, "
            f"{d.content_hash or 'no content hash'} — {status}"
        )
    if not report.datasets:
        print("no datasets found")
    print(_total(report, sum(1 for _ in report.problems())))


def _total(report: LintReport, problems: int) -> str:
    """``N problems in M datasets`` and, when the cards suppress some, how many."""
    suppressed = sum(1 for _ in report.suppressed())
    more = f", {suppressed} suppressed" if suppressed else ""
    return f"{counted(problems, 'problem')} in {counted(len(report.datasets), 'dataset')}{more}"


def _print_problems(report: LintReport, paint: Painter, *, group: bool) -> None:
    """One line per problem, or per problem shown and per fold of the rest."""
    import attrs

    from evalspec.evals.lint.grouping import Fold, grouped

    for item in grouped(report.problems()) if group else report.problems():
        if isinstance(item, Fold):
            message = f"{item.describe()}; --no-group prints each"
            print(
                format_error(
                    item.first.file, attrs.evolve(item.first.error, message=message), paint
                )
            )
        else:
            print(format_error(item.file, item.error, paint))


def _print_statistics(report: LintReport) -> None:
    """ruff's ``--statistics``: one line per rule, the count first, most frequent first;
    then the findings the data cards suppress, per rule."""
    from evalspec.evals.lint.report import statistics

    counts = statistics(report)
    suppressed = statistics(report, suppressed=True)
    width = max((len(str(count)) for _, count in (*counts, *suppressed)), default=1)
    for rule, count in counts:
        print(f"{count:>{width}}  {rule}")
    for rule, count in suppressed:
        print(f"{count:>{width}}  {rule} (suppressed)")
    print(_total(report, sum(count for _, count in counts)))


def run(args: argparse.Namespace) -> int:
    from evalspec.command import lint

    result = lint(
        args.paths,
        base=args.base,
        check_git=not args.no_git,
        select=args.select,
        ignore=args.ignore,
    )
    for e in result.path_problems:
        print(f"evalspec: error: {e}", file=sys.stderr)
    report = result.report
    if report is None:
        return result.exit_code
    for e in report.io_errors:
        print(f"evalspec: error: {e}", file=sys.stderr)
    if args.statistics:
        _print_statistics(report)
    elif args.format == "json":
        json.dump(report.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif args.format in ("github", "sarif", "junit"):
        sys.stdout.write(_ci_document(args.format, report))
    else:
        paint = Painter.for_stream(sys.stdout, args.color)
        _print_problems(report, paint, group=not args.no_group)
        if not args.quiet:
            _summary(report, paint)
    return result.exit_code
