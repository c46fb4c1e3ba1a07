"""The ``score`` pipeline: validate the tasks, read the predictions, apply the
refusal policy and the pass@k checks, choose the sandbox, score, and build the
report. The command line reads the inputs and prints; this module decides."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from collections.abc import Callable
from typing import Any

import attrs

from evalspec.errors import EvalspecError
from evalspec.io.exitcodes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from evalspec.io.inputs import STDIN, input_name, stdin_binary
from evalspec.io.wording import counted, one_line
from evalspec.model import ErrorRecord
from evalspec.registry.build import Registry
from evalspec.sandbox.interrupt import Interrupted, ending_runs_on_signals
from evalspec.sandbox.limits import Limits
from evalspec.scoring.intervals import DEFAULT_RESAMPLES
from evalspec.scoring.passatk import PassAtKError, normalize_ks
from evalspec.scoring.predictions import PredictionProblem
from evalspec.scoring.report import build_report
from evalspec.scoring.runlogs import RunLogError, read_run_predictions
from evalspec.scoring.samples import check_ks
from evalspec.scoring.scorer import open_sandbox, score_tasks
from evalspec.validation.messages import format_error
from evalspec.validation.validator import validate_file


@attrs.frozen(slots=True)
class ScoreOptions:
    """What a score run was asked for (the ``evalspec score`` options)."""

    allow_bad_tasks: bool = False
    allow_code_exec: bool = False
    min_isolation: str | None = None
    jobs: int | None = None
    pass_at: list[int] | None = None
    executor: str = "local"
    ray_address: str | None = None
    seed: int = 0
    bootstrap: int = DEFAULT_RESAMPLES
    dataset: str | None = None
    limits: Limits | None = None
    """Each sandboxed program's limits (``None``: the sandbox's defaults)."""
    labels: tuple[str, ...] | None = None
    """The metadata keys to group by (the layout's declared labels); ``None``: the
    report's bounded set of low-cardinality keys."""
    predictions_format: str = "evalspec"
    id_template: str | None = None


@attrs.frozen(slots=True)
class ScoreOutcome:
    """The exit status of a score run and its report, None when none was built."""

    exit_code: int
    report: dict[str, Any] | None = None


def format_prediction_problem(path: str, p: PredictionProblem) -> str:
    return f"{path}:{p.line}: {p.rule} — {p.message}"


def score_inputs(
    tasks_bytes: bytes,
    predictions_bytes: bytes,
    *,
    tasks_path: str,
    tasks_name: str,
    predictions_name: str,
    registry: Registry,
    options: ScoreOptions,
    say: Callable[[str], None],
    progress: Callable[[int, int], None] | None = None,
    first_error_hint: Callable[[ErrorRecord | None], str | None] | None = None,
) -> ScoreOutcome:
    """Score ``predictions_bytes`` against ``tasks_bytes``; every diagnostic line
    goes to ``say`` in the order it arises (before, during and after scoring)."""
    tasks_from_stdin = tasks_path == "-"
    # Both files are validated from the bytes that are hashed, so the
    # checksums in the report are of exactly what was scored.
    validation = validate_file(io.BytesIO(tasks_bytes), registry=registry)
    invalid_ids = [e.task_id for e in validation.errors if e.task_id is not None]
    try:
        predictions = read_run_predictions(
            options.predictions_format,
            predictions_bytes,
            [t.task_id for t in validation.validated],
            invalid_task_ids=invalid_ids,
            id_template=options.id_template,
        )
    except RunLogError as exc:
        say(f"evalspec: error: {predictions_name}: {exc}")
        return ScoreOutcome(EXIT_USAGE)
    for e in validation.errors:
        say(format_error(tasks_name, e))
    for p in predictions.problems:
        say(format_prediction_problem(predictions_name, p))
    first_error = validation.errors[0] if validation.errors else None
    hint = None if first_error_hint is None else first_error_hint(first_error)
    if hint is not None:
        say(hint)
    if validation.errors and not options.allow_bad_tasks:
        say(
            f"evalspec: refusing to score: {validation.invalid} of "
            f"{counted(validation.total, 'task')} {'is' if validation.invalid == 1 else 'are'} "
            "invalid (fix them, or pass --allow-bad-tasks to score the valid ones)",
        )
        return ScoreOutcome(EXIT_PROBLEMS)
    code_tasks = [
        t
        for t in validation.validated
        if registry.metric(t.metric_name).sandboxed and t.task_id in predictions.outputs
    ]
    if code_tasks and not options.allow_code_exec:
        say(
            f"evalspec: refusing to score: {counted(len(code_tasks), 'task')} "
            f"{'uses' if len(code_tasks) == 1 else 'use'} a metric that executes "
            f"the model's output as code ({', '.join(sorted({t.metric_name for t in code_tasks}))})"
            "; pass --allow-code-exec to run them in the sandbox",
        )
        return ScoreOutcome(EXIT_USAGE)
    if options.ray_address is not None and options.executor != "ray":
        say("evalspec: error: --ray-address needs --executor ray")
        return ScoreOutcome(EXIT_USAGE)
    pass_at = None
    if options.pass_at is not None:
        binary = {
            t.task_id: len(predictions.samples[t.task_id])
            for t in validation.validated
            if registry.metric(t.metric_name).binary and t.task_id in predictions.samples
        }
        try:
            pass_at = normalize_ks(options.pass_at)
            # Refused before anything runs: k above a task's n is no estimate.
            check_ks(pass_at, binary)
        except PassAtKError as exc:
            say(f"evalspec: error: {exc}")
            return ScoreOutcome(EXIT_USAGE)
    notes = []
    if not validation.validated:
        # An empty dataset is a problem, not a score: its aggregates are all null.
        say(f"evalspec: {tasks_name} holds no valid task to score")
        notes.append("the tasks file holds no valid task")
    if predictions.for_invalid_tasks:
        notes.append(
            f"{predictions.for_invalid_tasks} predictions name invalid tasks and were not scored"
        )
    # SIGINT/SIGTERM end every sandboxed run at once and leave nothing behind
    # (the probe's runs included).
    guard = ending_runs_on_signals() if code_tasks else contextlib.nullcontext()
    try:
        # Opened before scoring, so a sandbox that cannot reach the asked tier
        # stops the run before any task is scored.
        with guard, contextlib.ExitStack() as stack:
            sandbox: Any = None
            if code_tasks and options.executor == "ray":
                from evalspec.cluster.ray import open_ray_sandbox, stdout_kept_for_reports

                stack.enter_context(stdout_kept_for_reports())
                sandbox = open_ray_sandbox(
                    options.allow_code_exec,
                    address=options.ray_address,
                    limits=options.limits,
                    minimum_tier=options.min_isolation,
                )
                stack.callback(sandbox.close)
            elif code_tasks:
                sandbox = open_sandbox(
                    options.allow_code_exec,
                    limits=options.limits,
                    minimum_tier=options.min_isolation,
                )
            scores = score_tasks(
                validation.validated,
                predictions.for_scoring(),
                registry=registry,
                allow_code_exec=options.allow_code_exec,
                sandbox=sandbox,
                jobs=options.jobs,
                progress=progress,
            )
    except Interrupted as stop:
        say(
            f"\nevalspec: stopped by {stop.signal_name}: every sandboxed run was ended "
            "and cleaned up; no report was written",
        )
        return ScoreOutcome(stop.exit_status)
    stem = "stdin" if tasks_from_stdin else os.path.splitext(os.path.basename(tasks_path))[0]
    dataset = options.dataset or stem
    report = build_report(
        validation.validated,
        scores,
        dataset=dataset,
        seed=options.seed,
        bootstrap=options.bootstrap,
        registry=registry,
        invalid_tasks=validation.invalid,
        prediction_problems=predictions.problems,
        tasks_sha256=hashlib.sha256(tasks_bytes).hexdigest(),
        predictions_sha256=hashlib.sha256(predictions_bytes).hexdigest(),
        notes=notes,
        pass_at=pass_at,
        executor=sandbox.provenance() if hasattr(sandbox, "provenance") else None,
        limits=attrs.asdict(sandbox.limits) if hasattr(sandbox, "limits") else None,
        labels=options.labels,
        predictions_format=options.predictions_format,
    )
    errored = report["counts"]["sandbox_errors"]
    if errored:
        say(
            f"evalspec: {counted(errored, 'task')} had sandbox_error (the sandbox could not "
            "run them; the machine's failure, not the program's): the report leaves them out "
            "of every mean and of pass@k; repeat the run for them"
        )
    problems = predictions.problems or not validation.validated or errored
    return ScoreOutcome(EXIT_PROBLEMS if problems else EXIT_OK, report)


class UnreadableInput(EvalspecError):
    """A score input that cannot be read whole: an I/O error, or a line past the limit."""


def read_input(path: str, *, lines: bool = True) -> bytes:
    """All of ``path`` (``-``: standard input), as the score run hashes and reads it.

    :raises UnreadableInput: it cannot be read, or (a JSON Lines file: ``lines``) a
        line runs past :func:`~evalspec.io.linelimit.max_line_bytes` (a file without
        line breaks must not fill memory; an inspect ``.eval`` log is a zip archive
        and has no lines to limit).
    """
    from evalspec.io.linelimit import max_line_bytes, overlong_message
    from evalspec.io.repository import OutsideRootError, open_for_reading, repository_of

    limit = max_line_bytes()
    parts: list[bytes] = []
    run = 0  # bytes since the last line break
    try:
        with contextlib.ExitStack() as stack:
            # Opened once and checked on the descriptor: a task file inside the
            # repository that a symlink sends out (or that is swapped for one) is refused.
            f = (
                stdin_binary()
                if path == STDIN
                else stack.enter_context(open_for_reading(path, repository_of(os.getcwd())))
            )
            while chunk := f.read(1 << 20):
                parts.append(chunk)
                cut = chunk.rfind(b"\n")
                run = len(chunk) - cut - 1 if cut >= 0 else run + len(chunk)
                if lines and run > limit:
                    raise UnreadableInput(f"{input_name(path)}: {overlong_message(limit)}")
    except OutsideRootError as exc:
        raise UnreadableInput(
            f"refusing to read {one_line(input_name(path))}: {one_line(str(exc))}"
        ) from None
    except OSError as exc:
        reason = exc.strerror or exc
        raise UnreadableInput(f"cannot read {one_line(input_name(path))}: {reason}") from None
    return b"".join(parts)
