"""``evalspec gate REPORT... [--baseline BASE]... [--config FILE] [--markdown FILE]``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evalspec.cli.options import add_color, add_quiet
from evalspec.io.terminal import Painter


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "gate",
        help="check score reports against the red lines of config/gates.yaml",
        description="Check each gate (dataset or slice, metric, min and max_drop) against the "
        "score reports. Exit 0 when every gate passes, 1 when any fails, 2 on an invalid "
        "config or an unreadable report.",
    )
    p.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        help="score reports (evalspec score --format json); - reads one from standard input",
    )
    p.add_argument(
        "--baseline",
        # One file per --baseline (repeat it for more): a flag taking several values would
        # swallow the REPORTs after it, so "gate --baseline B REPORT" could not parse.
        action="append",
        default=None,
        metavar="BASE",
        help="baseline score report for max_drop (one per dataset; repeat the option for "
        "more); - reads standard input",
    )
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="gates file (default: config/gates.yaml of the layout here)",
    )
    p.add_argument(
        "--markdown", default=None, metavar="FILE", help="also write a Markdown summary to FILE"
    )
    p.add_argument(
        "--allow-incomparable",
        action="store_true",
        help="compare with a baseline scored on other tasks, spec version, metrics or "
        "number of tasks (the output says so)",
    )
    add_quiet(p, "failed checks")
    add_color(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from evalspec.command import gate
    from evalspec.evals.gates import tally

    result = gate(
        args.reports,
        baselines=args.baseline,
        config=args.config,
        allow_incomparable=args.allow_incomparable,
    )
    for line in result.errors:
        print(line, file=sys.stderr)
    if result.errors:
        return result.exit_code
    for message in result.compared_anyway:
        print(f"note  compared anyway (--allow-incomparable): {message}")
    paint = Painter.for_stream(sys.stdout, args.color)
    marks = {True: ("pass", "green"), False: ("FAIL", "red"), None: ("skip", "yellow")}
    for v in result.verdicts:
        if args.quiet and v.passed is not False:
            continue
        mark, colour = marks[v.passed]
        print(f"{paint(mark, colour, 'bold')}  {v.gate.name}: {v.check}: {v.message}")
    if not args.quiet:
        for name in result.uncovered:
            print(f"note  no gate covers dataset {name!r}")
        colour = "red" if result.failed else "yellow" if result.skipped else "green"
        print(paint(tally(result.verdicts), colour))
    if args.markdown:
        from evalspec.io.atomicfile import write_report

        try:
            write_report(args.markdown, result.to_markdown())
        except OSError as exc:
            print(
                f"evalspec: error: cannot write {args.markdown}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    return result.exit_code
