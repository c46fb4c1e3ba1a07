"""``evalspec score TASKS PREDICTIONS``: post-process, score and report a model's outputs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evalspec.cli.options import add_executor_options, add_limit_options, limits_from
from evalspec.io.exitcodes import EXIT_USAGE
from evalspec.io.inputs import STDIN
from evalspec.scoring.intervals import DEFAULT_RESAMPLES
from evalspec.scoring.pipeline import ScoreOptions
from evalspec.scoring.report import FORMATS, format_report
from evalspec.scoring.runlogs import FORMATS as RUN_LOG_FORMATS


def _tier(text: str) -> str:
    """An isolation tier's name, checked when the command starts: a typo would
    otherwise pass unseen until the tasks held a code_exec task."""
    from evalspec.sandbox.errors import UnknownTierError
    from evalspec.sandbox.tiers import tier_rank

    try:
        tier_rank(text)
    except UnknownTierError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"must be at least 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        msg = f"must be 0 or more, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


MAX_BOOTSTRAP = 100_000
"""The most ``--bootstrap`` resamples: past this the interval stops moving, the run time not."""


def _resamples(text: str) -> int:
    value = _non_negative(text)
    if value > MAX_BOOTSTRAP:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_BOOTSTRAP}, got {value}")
    return value


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "score",
        help="score model outputs against a task file and report",
        description='Validate TASKS and PREDICTIONS (JSONL, one {"task_id", "output"} per '
        "line), post-process each output with its task's rule, score it with the task's "
        "metric, and report per task and per group with bootstrap 95% intervals. Refuses "
        "to start on invalid tasks unless --allow-bad-tasks. Exit 0 when clean, 1 when "
        "tasks were refused, none is valid, or the predictions file has problems (then "
        "the report is still written), 2 on usage or I/O errors.",
    )
    p.add_argument("tasks", metavar="TASKS", help="the task file (JSON Lines); - reads stdin")
    p.add_argument(
        "predictions",
        metavar="PREDICTIONS",
        help='the model\'s outputs, one {"task_id", "output"} JSON line per task; '
        "- reads stdin (one of TASKS and PREDICTIONS at most)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="the report as text (default), json (the documented schema) or markdown",
    )
    p.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    p.add_argument(
        "--allow-bad-tasks",
        action="store_true",
        help="score the valid tasks and report the invalid ones",
    )
    p.add_argument(
        "--allow-code-exec",
        action="store_true",
        help="run code_exec tasks: model output is executed in the sandbox",
    )
    p.add_argument(
        "--min-isolation",
        metavar="TIER",
        type=_tier,
        help="refuse to run code_exec below this sandbox isolation tier "
        "(strongest first: namespace, uid-drop, rlimits-only; default: any, but "
        "as root never rlimits-only unless named here)",
    )
    p.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="code_exec programs run N at a time (default: 1; with --executor ray, the "
        "cluster's CPUs)",
    )
    p.add_argument(
        "--pass-at",
        type=_positive,
        action="append",
        default=None,
        metavar="K",
        help="report pass@K for binary metrics (exact_match, accuracy, code_exec, ...) "
        "over the n samples of each task (repeatable; default: 1 when the predictions "
        'carry "outputs"); K above a task\'s n is refused',
    )
    add_executor_options(
        p,
        "where code_exec programs run: local (this machine, --jobs at a time) or ray "
        "(each program a Ray task on the cluster; pip install 'evalspec-contract[ray]')",
    )
    add_limit_options(p)
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the bootstrap intervals (default: 0)",
    )
    p.add_argument(
        "--bootstrap",
        type=_resamples,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples per interval, 0 for none, at most {MAX_BOOTSTRAP} "
        f"(default: {DEFAULT_RESAMPLES})",
    )
    p.add_argument(
        "--spec-version",
        type=int,
        default=None,
        metavar="N",
        help="validate and score at spec version N (default: the newest)",
    )
    p.add_argument(
        "--predictions-format",
        choices=RUN_LOG_FORMATS,
        default="evalspec",
        help="what PREDICTIONS is: an evalspec predictions file (default), an "
        "lm-evaluation-harness samples_*.jsonl (--log_samples; raw resps are scored), or "
        "an inspect eval log (.eval or .json; pip install 'evalspec-contract[inspect]')",
    )
    p.add_argument(
        "--id-template",
        metavar="TEMPLATE",
        help="how a harness sample names its task: e.g. 'gsm8k_{doc_id}' or "
        "'{doc.question_id}' (lm-eval), '{id}' or '{metadata.FIELD}' (inspect); default: "
        "the sample's task_id (doc.task_id, metadata.task_id), else inspect's sample id",
    )
    p.add_argument(
        "--dataset",
        metavar="NAME",
        help="dataset name in the report (default: the tasks file's stem)",
    )
    p.set_defaults(run=run)


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _progress(done: int, total: int) -> None:
    # About a hundred updates per run, whatever its size.
    if done != total and done % max(1, total // 100):
        return
    width = 30
    filled = width * done // max(total, 1)
    bar = "#" * filled + "-" * (width - filled)
    end = "\n" if done == total else ""
    print(f"\revalspec: scored {done}/{total} [{bar}]", end=end, file=sys.stderr, flush=True)


def _declared_labels(tasks: str) -> tuple[str, ...] | None:
    """The labels the layout holding the tasks file (or the one here) declares."""
    from evalspec.evals.labels import declared_label_keys

    return declared_label_keys(Path.cwd() if tasks == STDIN else Path(tasks))


def run(args: argparse.Namespace) -> int:
    from evalspec.command import score

    result = score(
        args.tasks,
        args.predictions,
        spec_version=args.spec_version,
        options=ScoreOptions(
            allow_bad_tasks=args.allow_bad_tasks,
            allow_code_exec=args.allow_code_exec,
            min_isolation=args.min_isolation,
            jobs=args.jobs,
            pass_at=args.pass_at,
            executor=args.executor,
            ray_address=args.ray_address,
            seed=args.seed,
            bootstrap=args.bootstrap,
            dataset=args.dataset,
            limits=limits_from(args),
            labels=_declared_labels(args.tasks),
            predictions_format=args.predictions_format,
            id_template=args.id_template,
        ),
        on_message=_say,
        progress=_progress if sys.stderr.isatty() else None,
    )
    report = result.report
    if report is None:
        return result.exit_code
    text = format_report(report, args.format)
    if args.output:
        from evalspec.io.atomicfile import write_report

        try:
            write_report(args.output, text)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"evalspec: error: cannot write {args.output}: {reason}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.write(text)
    return result.exit_code
