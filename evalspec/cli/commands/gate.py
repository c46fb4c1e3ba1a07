"""``evalspec gate REPORT... [--baseline BASE]... [--config FILE] [--markdown FILE]
[--format text|json]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from evalspec.cli.options import add_color, add_quiet
from evalspec.io.terminal import Painter
from evalspec.io.wording import one_line

if TYPE_CHECKING:
    from evalspec.command import GateResult


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "gate",
        help="check score reports against the red lines of config/gates.yaml",
        description="Check each gate (dataset or slice, metric, min and max_drop) against the "
        "score reports. Exit 0 when every gate passes, 1 when any fails, 2 on an invalid "
        "config, an unreadable report, or a report with sandbox errors.",
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
        help="gates file (default: config/gates.yaml of the layout holding the first "
        "REPORT, else of the layout here)",
    )
    p.add_argument(
        "--markdown", default=None, metavar="FILE", help="also write a Markdown summary to FILE"
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default): one line per check; json: one object (schema "
        "evalspec/gate-report, see README.md, Gate) on standard output",
    )
    p.add_argument(
        "--allow-incomparable",
        action="store_true",
        help="compare with a baseline scored on other tasks, spec version, metrics or "
        "number of tasks (the output says so)",
    )
    p.add_argument(
        "--allow-sandbox-errors",
        action="store_true",
        help="gate a report holding tasks the sandbox could not run (status sandbox_error; "
        "its means leave them out; the output says so)",
    )
    add_quiet(p, "failed checks")
    add_color(p)
    p.set_defaults(run=run)


def _print_text(args: argparse.Namespace, result: GateResult) -> None:
    from evalspec.evals.gates import tally

    for message in result.gated_anyway:
        print(f"note  gated anyway (--allow-sandbox-errors): {one_line(message)}")
    for message in result.compared_anyway:
        print(f"note  compared anyway (--allow-incomparable): {message}")
    paint = Painter.for_stream(sys.stdout, args.color)
    marks = {True: ("pass", "green"), False: ("FAIL", "red"), None: ("skip", "yellow")}
    for v in result.verdicts:
        if args.quiet and v.passed is not False:
            continue
        mark, colour = marks[v.passed]
        # Names come from the config and the reports: a control character in one
        # shows escaped, so it can neither split the line nor draw on a terminal.
        shown = f"{one_line(v.gate.name)}: {v.check}: {one_line(v.message)}"
        print(f"{paint(mark, colour, 'bold')}  {shown}")
    if args.quiet:
        return
    for name in result.uncovered:
        print(f"note  no gate covers dataset {name!r}")
    colour = "red" if result.failed else "yellow" if result.skipped else "green"
    print(paint(tally(result.verdicts), colour))


def run(args: argparse.Namespace) -> int:
    from evalspec.command import gate

    result = gate(
        args.reports,
        baselines=args.baseline,
        config=args.config,
        allow_incomparable=args.allow_incomparable,
        allow_sandbox_errors=args.allow_sandbox_errors,
    )
    for line in result.errors:
        print(line, file=sys.stderr)
    if result.errors:
        if result.refused is not None and args.format == "json":
            # A tool reading the JSON learns that nothing was gated, and why,
            # from a key rather than from standard error.
            print(json.dumps(result.to_json(), indent=2))
        return result.exit_code
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=2))
    else:
        _print_text(args, result)
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
