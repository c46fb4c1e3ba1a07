"""``evalspec gate REPORT... [--baseline BASE]... [--config FILE] [--markdown FILE]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evalspec.cli.options import add_color, add_quiet
from evalspec.io.inputs import STDIN, STDIN_NAME, stdin_binary
from evalspec.io.terminal import Painter
from evalspec.io.wording import counted


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


def _config(args: argparse.Namespace) -> Path:
    from evalspec.evals.layout import find_layout

    if args.config is not None:
        return Path(args.config)
    layout = find_layout(Path.cwd())
    return layout.gates_file if layout is not None else Path("config") / "gates.yaml"


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


def run(args: argparse.Namespace) -> int:
    from evalspec.evals.gates import (
        GateConfigError,
        ReportError,
        by_dataset,
        check,
        incomparable,
        parse_gates,
        tally,
        to_markdown,
    )
    from evalspec.evals.layout import find_layout
    from evalspec.evals.lint import manifest_datasets, relative_name
    from evalspec.evals.manifestlink import ManifestUnreadable
    from evalspec.evals.yamlfile import MissingYamlError
    from evalspec.io.atomicfile import write_report
    from evalspec.io.safeload import DocumentError, read_text_bounded
    from evalspec.registry.build import default_registry

    config = _config(args)
    try:
        text = read_text_bounded(config)
    except (OSError, UnicodeDecodeError, DocumentError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        print(f"evalspec: error: cannot read gates config {config}: {reason}", file=sys.stderr)
        return 2
    in_config = config.parent.name == "config"
    layout = find_layout(config.parent.parent if in_config else Path.cwd())
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
    if differences and not args.allow_incomparable:
        for message in differences:
            print(f"evalspec: error: {message}", file=sys.stderr)
        print(
            "evalspec: error: refusing to compare with the baseline "
            "(pass --allow-incomparable if the comparison is intended)",
            file=sys.stderr,
        )
        return 2
    verdicts = check(gates, reports, baselines)
    for message in differences:
        print(f"note  compared anyway (--allow-incomparable): {message}")
    paint = Painter.for_stream(sys.stdout, args.color)
    marks = {True: ("pass", "green"), False: ("FAIL", "red"), None: ("skip", "yellow")}
    for v in verdicts:
        if args.quiet and v.passed is not False:
            continue
        mark, colour = marks[v.passed]
        print(f"{paint(mark, colour, 'bold')}  {v.gate.name}: {v.check}: {v.message}")
    gated = {g.dataset for g in gates}
    if not args.quiet:
        for name in sorted(set(reports) - gated):
            print(f"note  no gate covers dataset {name!r}")
    failed = sum(1 for v in verdicts if v.passed is False)
    skipped = sum(1 for v in verdicts if v.passed is None)
    if not args.quiet:
        print(paint(tally(verdicts), "red" if failed else "yellow" if skipped else "green"))
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
