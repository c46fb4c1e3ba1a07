"""``evalspec score TASKS PREDICTIONS``: post-process, score and report a model's outputs."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import sys
from typing import Any

from evalspec.bootstrap import DEFAULT_RESAMPLES
from evalspec.commands.validate import format_error
from evalspec.predictions import PredictionProblem, read_predictions
from evalspec.registry import default_registry
from evalspec.sandbox.interrupt import Interrupted, ending_runs_on_signals
from evalspec.score_report import FORMATS, build_report, format_report
from evalspec.scoring import open_sandbox, score_tasks
from evalspec.validate import validate_file

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


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
    p.add_argument("tasks", metavar="TASKS", help="tasks.jsonl")
    p.add_argument("predictions", metavar="PREDICTIONS", help="predictions JSONL")
    p.add_argument("--format", choices=FORMATS, default="text")
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
        help="refuse to run code_exec below this sandbox isolation tier "
        "(strongest first: namespace, uid-drop, rlimits-only; default: any)",
    )
    p.add_argument(
        "--jobs",
        type=_positive,
        default=1,
        metavar="N",
        help="code_exec programs run N at a time (default: 1)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the bootstrap intervals (default: 0)",
    )
    p.add_argument(
        "--bootstrap",
        type=_non_negative,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples per interval, 0 for none (default: {DEFAULT_RESAMPLES})",
    )
    p.add_argument(
        "--spec-version",
        type=int,
        default=None,
        metavar="N",
        help="validate and score at spec version N (default: the newest)",
    )
    p.add_argument(
        "--dataset",
        metavar="NAME",
        help="dataset name in the report (default: the tasks file's stem)",
    )
    p.set_defaults(run=run)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        print(f"evalspec: error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return None


def _format_problem(path: str, p: PredictionProblem) -> str:
    return f"{path}:{p.line}: {p.rule} — {p.message}"


def _progress(done: int, total: int) -> None:
    # About a hundred updates per run, whatever its size.
    if done != total and done % max(1, total // 100):
        return
    end = "\n" if done == total else ""
    print(f"\revalspec: scored {done}/{total}", end=end, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    registry = default_registry(args.spec_version)
    tasks_bytes = _read(args.tasks)
    predictions_bytes = _read(args.predictions)
    if tasks_bytes is None or predictions_bytes is None:
        return EXIT_USAGE
    # Both files are validated from the bytes that are hashed, so the
    # checksums in the report are of exactly what was scored.
    validation = validate_file(io.BytesIO(tasks_bytes), registry=registry)
    invalid_ids = [e.task_id for e in validation.errors if e.task_id is not None]
    predictions = read_predictions(
        io.BytesIO(predictions_bytes),
        [t.task_id for t in validation.validated],
        invalid_task_ids=invalid_ids,
    )
    for e in validation.errors:
        print(format_error(args.tasks, e), file=sys.stderr)
    for p in predictions.problems:
        print(_format_problem(args.predictions, p), file=sys.stderr)
    if validation.errors and not args.allow_bad_tasks:
        print(
            f"evalspec: refusing to score: {validation.invalid} of {validation.total} tasks are "
            "invalid (fix them, or pass --allow-bad-tasks to score the valid ones)",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    code_tasks = [
        t
        for t in validation.validated
        if registry.metric(t.metric_name).sandboxed and t.task_id in predictions.outputs
    ]
    if code_tasks and not args.allow_code_exec:
        print(
            f"evalspec: refusing to score: {len(code_tasks)} tasks use a metric that executes "
            f"the model's output as code ({', '.join(sorted({t.metric_name for t in code_tasks}))})"
            "; pass --allow-code-exec to run them in the sandbox",
            file=sys.stderr,
        )
        return EXIT_USAGE
    notes = []
    if not validation.validated:
        # An empty dataset is a problem, not a score: its aggregates are all null.
        print(f"evalspec: {args.tasks} holds no valid task to score", file=sys.stderr)
        notes.append("the tasks file holds no valid task")
    if predictions.for_invalid_tasks:
        notes.append(
            f"{predictions.for_invalid_tasks} predictions name invalid tasks and were not scored"
        )
    # SIGINT/SIGTERM end every sandboxed run at once and leave nothing behind
    # (the probe's runs included).
    guard = ending_runs_on_signals() if code_tasks else contextlib.nullcontext()
    try:
        with guard:
            # Opened before scoring, so a sandbox that cannot reach the asked
            # tier stops the run before any task is scored.
            sandbox = (
                open_sandbox(args.allow_code_exec, minimum_tier=args.min_isolation)
                if code_tasks
                else None
            )
            scores = score_tasks(
                validation.validated,
                predictions.outputs,
                registry=registry,
                allow_code_exec=args.allow_code_exec,
                sandbox=sandbox,
                jobs=args.jobs,
                progress=_progress if sys.stderr.isatty() else None,
            )
    except Interrupted as stop:
        print(
            f"\nevalspec: stopped by {stop.signal_name}: every sandboxed run was ended "
            "and cleaned up; no report was written",
            file=sys.stderr,
        )
        return stop.exit_status
    dataset = args.dataset or os.path.splitext(os.path.basename(args.tasks))[0]
    report = build_report(
        validation.validated,
        scores,
        dataset=dataset,
        seed=args.seed,
        bootstrap=args.bootstrap,
        registry=registry,
        invalid_tasks=validation.invalid,
        prediction_problems=predictions.problems,
        tasks_sha256=hashlib.sha256(tasks_bytes).hexdigest(),
        predictions_sha256=hashlib.sha256(predictions_bytes).hexdigest(),
        notes=notes,
    )
    text = format_report(report, args.format)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"evalspec: error: cannot write {args.output}: {reason}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.write(text)
    return EXIT_PROBLEMS if predictions.problems or not validation.validated else EXIT_OK
