"""``evalspec gate REPORT... [--baseline BASE]... [--config FILE] [--markdown FILE]
[--format text|json]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec.cli.inputs import STDIN, STDIN_NAME, stdin_binary
from evalspec.cli.options import add_color, add_quiet
from evalspec.io.terminal import Painter
from evalspec.io.wording import counted, one_line

if TYPE_CHECKING:
    from evalspec.evals.layout import Layout


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


def _config(args: argparse.Namespace) -> tuple[Path, Layout | None]:
    """The gates file and the layout it belongs to.

    ``--config`` names the file; its layout is the one holding it. Otherwise the
    layout is found as lint finds it: walking up from the first report named (so
    ``gate evals/reports/main.json`` works from the repository root), else from the
    current directory, else the one layout below the current directory.
    """
    from evalspec.evals.layout import find_layout, layouts_below

    if args.config is not None:
        config = Path(args.config)
        in_config = config.parent.name == "config"
        return config, find_layout(config.parent.parent if in_config else Path.cwd())
    starts = [Path(r) for r in args.reports if r != STDIN][:1]
    layout = next(filter(None, (find_layout(p) for p in [*starts, Path.cwd()])), None)
    if layout is None:
        below = layouts_below(Path.cwd())
        layout = below[0] if len(below) == 1 else None
    if layout is None:
        return Path("config") / "gates.yaml", None
    return layout.gates_file, layout


def _labels(path: Path) -> dict[str, tuple[str, ...]] | None:
    """The legal label values, when the layout has a valid labels file (lint reports it if not)."""
    from evalspec.evals.labels import parse_labels
    from evalspec.io.safeload import DocumentError, read_text_bounded

    try:
        parsed, _ = parse_labels(read_text_bounded(path))
    except (OSError, UnicodeDecodeError, DocumentError):
        return None
    return None if parsed is None else parsed.legal


def _report(name: str) -> tuple[Path, dict[str, Any]]:
    from evalspec.evals.gates import ReportError, load_report

    if name == STDIN:
        from evalspec.io.safeload import MAX_JSON_BYTES

        try:
            # One byte past the limit is enough to refuse an endless stream.
            text = stdin_binary().read(MAX_JSON_BYTES + 1)
        except OSError as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ReportError(f"cannot read {STDIN_NAME}: {reason}") from None
        return Path(STDIN_NAME), load_report(Path(STDIN_NAME), text)
    return Path(name), load_report(Path(name))


def _print_text(
    args: argparse.Namespace,
    verdicts: list[Any],
    differences: list[str],
    uncovered: list[str],
    counts: str,
) -> None:
    for message in differences:
        print(f"note  compared anyway (--allow-incomparable): {message}")
    paint = Painter.for_stream(sys.stdout, args.color)
    marks = {True: ("pass", "green"), False: ("FAIL", "red"), None: ("skip", "yellow")}
    for v in verdicts:
        if args.quiet and v.passed is not False:
            continue
        mark, colour = marks[v.passed]
        # Names come from the config and the reports: a control character in one
        # shows escaped, so it can neither split the line nor draw on a terminal.
        shown = f"{one_line(v.gate.name)}: {v.check}: {one_line(v.message)}"
        print(f"{paint(mark, colour, 'bold')}  {shown}")
    if args.quiet:
        return
    for name in uncovered:
        print(f"note  no gate covers dataset {name!r}")
    failed = any(v.passed is False for v in verdicts)
    skipped = any(v.passed is None for v in verdicts)
    print(paint(counts, "red" if failed else "yellow" if skipped else "green"))


def run(args: argparse.Namespace) -> int:
    from evalspec.evals.gates import (
        REFUSED_SANDBOX_ERRORS,
        GateConfigError,
        ReportError,
        by_dataset,
        check,
        incomparable,
        parse_gates,
        sandbox_error_counts,
        tally,
        to_json,
        to_markdown,
    )
    from evalspec.evals.lint import manifest_datasets, relative_name
    from evalspec.evals.manifestlink import ManifestUnreadable
    from evalspec.evals.yamlfile import MissingYamlError
    from evalspec.io.atomicfile import write_report
    from evalspec.io.governing import govern
    from evalspec.io.safeload import DocumentError, read_text_bounded
    from evalspec.registry.build import default_registry

    config, layout = _config(args)
    try:
        text = read_text_bounded(config)
    except (OSError, UnicodeDecodeError, DocumentError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        print(f"evalspec: error: cannot read gates config {config}: {reason}", file=sys.stderr)
        return 2
    datasets = None
    labels = None
    if layout is not None:
        try:
            listed = manifest_datasets(layout)
        except ManifestUnreadable as exc:
            print(f"evalspec: error: {exc}", file=sys.stderr)
            return 2
        files = [*layout.dataset_files(), *listed]
        datasets = {layout.dataset_name(p) for p in files}
        labels = _labels(layout.labels_file)
        govern(layout.root)  # the layout's own [tool.evalspec] names its metrics
    registry = default_registry()
    try:
        gates = parse_gates(
            text,
            relative_name(config.resolve()),
            datasets=datasets,
            metrics=set(registry.metrics),
            labels=labels,
            categories=set(registry.spec.categories),
        )
        named = [*args.reports, *(args.baseline or [])]
        if named.count(STDIN) > 1:
            raise ReportError("- (standard input) can be given only once")
        reports = by_dataset([_report(r) for r in args.reports])
        baselines = (
            None if args.baseline is None else by_dataset([_report(b) for b in args.baseline])
        )
    except GateConfigError as exc:
        for line, msg in exc.problems:
            print(f"{exc.path}:{line}: {msg}", file=sys.stderr)
        print(
            f"evalspec: error: {counted(len(exc.problems), 'problem')} in the gates config "
            f"{exc.path}; "
            "no gate was checked",
            file=sys.stderr,
        )
        return 2
    except (ReportError, MissingYamlError) as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return 2
    differences = incomparable(reports, baselines or {})
    errored = sandbox_error_counts(reports, baselines or {})
    unrun = [e.message for e in errored]
    refusals = (
        (
            differences,
            args.allow_incomparable,
            "refusing to compare with the baseline "
            "(pass --allow-incomparable if the comparison is intended)",
            None,
        ),
        (
            unrun,
            args.allow_sandbox_errors,
            "refusing to gate a report with sandbox errors: "
            "score those tasks again (or pass --allow-sandbox-errors to gate the tasks that ran)",
            REFUSED_SANDBOX_ERRORS,
        ),
    )
    for messages, allowed, refusal, refused in refusals:
        if messages and not allowed:
            for message in [*messages, refusal]:
                print(f"evalspec: error: {message}", file=sys.stderr)
            if refused is not None and args.format == "json":
                # A tool reading the JSON learns that nothing was gated, and why,
                # from a key rather than from standard error.
                doc = to_json(
                    [],
                    config=relative_name(config.resolve()),
                    sandbox_errors=errored,
                    refused=refused,
                )
                print(json.dumps(doc, indent=2))
            return 2
    verdicts = check(gates, reports, baselines)
    gated = {g.dataset for g in gates}
    uncovered = sorted(set(reports) - gated)
    failed = sum(1 for v in verdicts if v.passed is False)
    if args.format == "json":
        doc = to_json(
            verdicts,
            config=relative_name(config.resolve()),
            uncovered=uncovered,
            compared_anyway=differences,
            sandbox_errors=errored,
        )
        print(json.dumps(doc, indent=2))
    else:
        for message in unrun:
            print(f"note  gated anyway (--allow-sandbox-errors): {one_line(message)}")
        _print_text(args, verdicts, differences, uncovered, tally(verdicts))
    if args.markdown:
        try:
            write_report(args.markdown, to_markdown(verdicts))
        except OSError as exc:
            print(
                f"evalspec: error: cannot write {args.markdown}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    return 1 if failed else 0
