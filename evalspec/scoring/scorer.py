"""Scoring: a model's raw output through the task's post-process rule, then its metric.

The pipeline is fixed and has nothing in between: ``rule(output)`` is handed
to ``metric(prediction, targets)``. A metric that runs the prediction as code
(``Metric.sandboxed``) is refused unless the caller opted in, and then runs in
:mod:`evalspec.sandbox`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import attrs

from evalspec.errors import ScoringError
from evalspec.model import Metric, SandboxedScorer, Scorer, TaskSpec
from evalspec.registry.build import Registry, default_registry
from evalspec.scoring.samples import SANDBOX_ERROR, SampleScore
from evalspec.scoring.unparsed import unparsed

Progress = Callable[[int, int], None]
"""``progress(done, total)``, called after each scored task."""

Prediction = str | Sequence[str]
"""A task's raw output, or its n samples (a list or tuple of raw outputs)."""


@attrs.frozen
class TaskScore:
    """The score of one task, with what the report needs to explain it.

    ``prediction`` is the post-processed output (``None`` when the task had no
    prediction: it then scores 0 and counts as missing). ``unparsed`` says the
    task's extracting rule found nothing to extract in the raw output.
    ``detail`` holds what a sandboxed metric observed (the isolation tier,
    each test's status, the run's ``status`` and its one-line ``failure``),
    else ``None``.

    A task scored on n samples has ``samples`` (one :class:`SampleScore`
    each, in order); ``score`` is then the mean over samples, ``prediction``
    the first sample's, ``unparsed`` true when any sample was unparsed, and
    ``binary`` says whether the metric is right-or-wrong (pass@k applies).

    ``score`` is ``None`` when the sandbox could not run the task's program
    (or one of its samples'): a ``sandbox_error`` says nothing about the
    program, so the task has no score, stays out of every mean and of
    pass@k, and is counted instead (``sandbox_errors``).
    """

    task_id: str
    category: str
    metric: str
    post_process: str
    score: float | None
    prediction: str | None
    unparsed: bool = False
    detail: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    samples: tuple[SampleScore, ...] | None = None
    binary: bool = False

    @property
    def missing(self) -> bool:
        return self.prediction is None

    @property
    def n(self) -> int:
        """Samples scored: 0 when missing, 1 for a single output."""
        if self.samples is not None:
            return len(self.samples)
        return 0 if self.missing else 1

    @property
    def correct(self) -> int:
        """Samples that scored 1.0."""
        if self.samples is not None:
            return sum(1 for s in self.samples if s.score == 1.0)
        return int(not self.missing and self.score == 1.0)

    @property
    def sandbox_errors(self) -> int:
        """Outputs (samples, or the one output) the sandbox could not run."""
        if self.samples is not None:
            return sum(1 for s in self.samples if s.sandbox_error)
        return int(self.detail is not None and self.detail.get("status") == SANDBOX_ERROR)

    def to_dict(self) -> dict[str, Any]:
        """The report row of this task."""
        return {
            "task_id": self.task_id,
            "category": self.category,
            "metric": self.metric,
            "post_process": self.post_process,
            "score": self.score,
            "prediction": self.prediction,
            "missing": self.missing,
            "unparsed": self.unparsed,
            "detail": None if self.detail is None else dict(self.detail),
            # Only for sampled tasks, so a single-output report keeps its rows.
            **({} if self.samples is None else self._sample_keys()),
        }

    def _sample_keys(self) -> dict[str, Any]:
        assert self.samples is not None
        keys: dict[str, Any] = {"n": self.n}
        if self.binary:
            keys["correct"] = self.correct
        keys["samples"] = [s.to_dict() for s in self.samples]
        return keys


class _RecordingSandbox:
    """Hands a sandboxed scorer the real sandbox and keeps what it reported."""

    def __init__(self, sandbox: Any) -> None:
        self._sandbox = sandbox
        self.results: list[Any] = []

    @property
    def tier(self) -> str:
        return str(self._sandbox.tier)

    def run_tests(self, code: str, tests: Sequence[str]) -> Any:
        result = self._sandbox.run_tests(code, tests)
        self.results.append(result)
        return result


def _registry(registry: Registry | None) -> Registry:
    return default_registry() if registry is None else registry


def _check_targets(targets: Sequence[str]) -> tuple[str, ...]:
    if isinstance(targets, str):
        msg = "targets must be a sequence of strings, not one string"
        raise TypeError(msg)
    out = tuple(targets)
    if not out:
        msg = "targets is empty: a prediction is scored against at least one target"
        raise ScoringError(msg)
    return out


def _checked(metric: Metric, value: object) -> float:
    # A plugin's scorer is code we do not control: hold it to the [0, 1] contract
    # here rather than let a NaN or a 0-100 scale slip into an aggregate.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"metric {metric.name!r} returned {type(value).__name__}, not a float"
        raise ScoringError(msg)
    result = float(value)
    if not (math.isfinite(result) and 0.0 <= result <= 1.0):
        msg = f"metric {metric.name!r} returned {result!r}, outside [0, 1]"
        raise ScoringError(msg)
    if metric.binary and result not in (0.0, 1.0):
        # pass@k counts correct samples: a partial score has no place in it.
        msg = f"metric {metric.name!r} is declared binary but returned {result!r}"
        raise ScoringError(msg)
    return result


def _apply(metric: Metric, prediction: str, targets: tuple[str, ...], sandbox: Any) -> float:
    if metric.scorer is None:
        msg = f"metric {metric.name!r} is registered without a scorer, so it cannot score"
        raise ScoringError(msg)
    if metric.sandboxed:
        return _checked(metric, cast(SandboxedScorer, metric.scorer)(prediction, targets, sandbox))
    return _checked(metric, cast(Scorer, metric.scorer)(prediction, targets))


def open_sandbox(
    allow_code_exec: bool, *, limits: Any = None, minimum_tier: str | None = None
) -> Any:
    """A sandbox for code-executing metrics, or the refusal when the caller did not opt in.

    :raises CodeExecNotAllowed: ``allow_code_exec`` is false.
    :raises SandboxUnavailable: the sandbox cannot reach ``minimum_tier``.
    """
    # Imported here: the sandbox is needed only when code runs.
    from evalspec.sandbox import Limits, Sandbox, require_opt_in

    require_opt_in(allow_code_exec)
    return Sandbox(Limits() if limits is None else limits, minimum_tier=minimum_tier)


def score(
    metric_name: str,
    prediction: str,
    targets: Sequence[str],
    *,
    registry: Registry | None = None,
    allow_code_exec: bool = False,
    sandbox: Any = None,
) -> float:
    """Score one already post-processed prediction with a registered metric.

    :param allow_code_exec: required for a metric that runs the prediction
        (``code_exec``); without it such a metric is refused.
    :param sandbox: the :class:`evalspec.sandbox.Sandbox` to run code in
        (default: a new one with default limits).
    :raises UnknownNameError: no metric of that name is in force.
    :raises ScoringError: the metric has no scorer, ``targets`` is empty, or the
        scorer broke its [0, 1] contract.
    :raises CodeExecNotAllowed: a code-executing metric without ``allow_code_exec``.
    """
    metric = _registry(registry).metric(metric_name)
    checked = _check_targets(targets)
    box = _sandbox_for(allow_code_exec, sandbox) if metric.sandboxed else None
    return _apply(metric, prediction, checked, box)


def _sandbox_for(allow_code_exec: bool, sandbox: Any) -> Any:
    """The caller's sandbox once the opt-in is checked, or a new default one."""
    if sandbox is None:
        return open_sandbox(allow_code_exec)
    from evalspec.sandbox import require_opt_in

    require_opt_in(allow_code_exec)
    return sandbox


def _is_samples(output: object) -> bool:
    return isinstance(output, (list, tuple))


def _check_samples(task_id: str, output: Sequence[str]) -> tuple[str, ...]:
    samples = tuple(output)
    if not samples:
        msg = f"task {task_id!r}: an empty list of samples (leave the task out instead)"
        raise ScoringError(msg)
    if not all(isinstance(o, str) for o in samples):
        msg = f"task {task_id!r}: every sample must be a string"
        raise ScoringError(msg)
    return samples


def _scored_text(task: TaskSpec, prediction: str) -> str:
    """What the metric scores: the prediction, or, in the completion protocol (spec
    v2's ``code_protocol``), the program the task's prompt and the prediction make."""
    if task.code_protocol == "completion":
        return task.prompt + prediction
    return prediction


def _score_one(
    task: TaskSpec,
    output: str,
    reg: Registry,
    allow_code_exec: bool,
    sandbox: Any,
) -> SampleScore:
    """One raw output through the task's rule and metric."""
    metric = reg.metric(task.metric_name)
    box: Any = None
    if metric.sandboxed:
        box = _RecordingSandbox(_sandbox_for(allow_code_exec, sandbox))
    rule = reg.post_processor(task.post_process)
    prediction = rule(output)
    value: float | None = _apply(
        metric, _scored_text(task, prediction), _check_targets(task.targets), box
    )
    detail = None if box is None else _sandbox_detail(box)
    if detail is not None and detail["status"] == SANDBOX_ERROR:
        value = None  # the machine failed, not the program: no score, never a 0
    return SampleScore(prediction, value, unparsed(rule, output), detail)


def _assemble(
    task: TaskSpec, metric: Metric, parts: Sequence[SampleScore], sampled: bool
) -> TaskScore:
    """The task's score from its samples' (one part for a single output)."""
    first = parts[0]
    if not sampled:
        return TaskScore(
            task.task_id,
            task.category,
            metric.name,
            task.post_process,
            first.score,
            first.prediction,
            first.unparsed,
            first.detail,
            binary=metric.binary,
        )
    detail: dict[str, Any] | None = None
    if first.detail is not None and "isolation_tier" in first.detail:
        detail = {"isolation_tier": first.detail["isolation_tier"], **_samples_summary(parts)}
    values = [p.score for p in parts]
    return TaskScore(
        task.task_id,
        task.category,
        metric.name,
        task.post_process,
        # One sample without a verdict leaves the task without one (its mean is pass@1).
        None if None in values else math.fsum(v for v in values if v is not None) / len(parts),
        first.prediction,
        any(p.unparsed for p in parts),
        detail,
        samples=tuple(parts),
        binary=metric.binary,
    )


def score_task(
    task: TaskSpec,
    output: Prediction | None,
    *,
    registry: Registry | None = None,
    allow_code_exec: bool = False,
    sandbox: Any = None,
) -> TaskScore:
    """Post-process ``output`` with the task's rule, then score it with the task's metric.

    ``output`` is the model's raw output, or a list of n raw outputs (samples),
    each scored on its own; ``None`` means the task has no prediction, which
    scores 0.0 and is reported as missing (nothing runs). Keyword arguments as
    for :func:`score`.
    """
    reg = _registry(registry)
    metric = reg.metric(task.metric_name)
    if output is None:
        return TaskScore(
            task.task_id,
            task.category,
            metric.name,
            task.post_process,
            0.0,
            None,
            binary=metric.binary,
        )
    if _is_samples(output):
        samples = _check_samples(task.task_id, output)
        parts = [_score_one(task, o, reg, allow_code_exec, sandbox) for o in samples]
        return _assemble(task, metric, parts, True)
    if not isinstance(output, str):
        msg = f"task {task.task_id!r}: an output is a string or a list of strings (samples)"
        raise ScoringError(msg)
    return _assemble(task, metric, [_score_one(task, output, reg, allow_code_exec, sandbox)], False)


def _sandbox_detail(box: _RecordingSandbox) -> dict[str, Any]:
    """What the sandbox reported for one output: the tier, each test's status, the
    output's status (``pass``, the first other status, ``sandbox_error`` when any
    run was one) and the one-line ``failure`` of the first run that did not pass."""
    runs = [run for result in box.results for run in result.results]
    statuses = [str(run.status) for run in runs]
    failed = [run for run in runs if run.status != "pass"]
    status: str | None = "pass"
    if not runs:
        status = None  # the metric ran nothing: its score is all there is
    elif SANDBOX_ERROR in statuses:
        status = SANDBOX_ERROR
    elif failed:
        status = str(failed[0].status)
    elif not all(result.passed for result in box.results):
        status = SANDBOX_ERROR  # fewer runs than tests, all passed: the rest never ran
    failure = None
    if status not in ("pass", None):
        first = next((r for r in failed if r.status == status), failed[0] if failed else None)
        failure = _one_line_failure(str(status), "" if first is None else str(first.detail))
    return {"isolation_tier": box.tier, "statuses": statuses, "status": status, "failure": failure}


FAILURE_CHARS = 300
"""The longest failure detail a report row carries (a program's message may be huge)."""


def _one_line_failure(status: str, detail: str) -> str:
    """``status: detail`` on one line, at most :data:`FAILURE_CHARS` characters."""
    text = " ".join(f"{status}: {detail}".split()) if detail else status
    return text if len(text) <= FAILURE_CHARS else text[: FAILURE_CHARS - 1] + "…"


def _samples_summary(parts: Sequence[SampleScore]) -> dict[str, Any]:
    """A sampled task's count of ``sandbox_error`` samples and one-line failure summary."""
    errors = sum(1 for p in parts if p.sandbox_error)
    not_passed = [
        (i, p.detail) for i, p in enumerate(parts, 1) if p.detail and p.detail.get("failure")
    ]
    failure = None
    if not_passed:
        i, detail = not_passed[0]
        failure = (
            f"{len(not_passed)} of {len(parts)} samples did not pass; "
            f"first, sample {i}: {detail['failure']}"
        )
    return {"sandbox_errors": errors, "failure": failure}


def score_tasks(
    tasks: Iterable[TaskSpec],
    predictions: Mapping[str, Prediction],
    *,
    registry: Registry | None = None,
    allow_code_exec: bool = False,
    sandbox: Any = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    executor: str = "local",
    ray_address: str | None = None,
) -> list[TaskScore]:
    """Score every task against ``predictions`` (task id -> raw output, or a list of n
    samples), in task order.

    A task without a prediction scores 0.0 and is marked missing. When any task
    uses a code-executing metric, the opt-in is checked before anything is
    scored, one sandbox is opened for the run, and those programs (one per
    sample) run ``jobs`` at a time (default 1; with the Ray executor, the
    cluster's CPU count). ``executor="ray"`` (the ``ray`` extra) runs each
    sandboxed program as a Ray task on the cluster at ``ray_address``; a
    ``sandbox`` passed in is used as it is. ``progress(done, total)`` counts
    samples (a single output, or a missing one, is one).
    """
    if jobs is not None and jobs < 1:
        msg = f"jobs must be at least 1, got {jobs}"
        raise ValueError(msg)
    if executor not in EXECUTORS:
        msg = f"unknown executor {executor!r} (choose from {', '.join(EXECUTORS)})"
        raise ValueError(msg)
    reg = _registry(registry)
    task_list = list(tasks)
    # Checked up front, so a run does not stop halfway on a metric that cannot score.
    unscorable = sorted(
        {t.metric_name for t in task_list if reg.metric(t.metric_name).scorer is None}
    )
    if unscorable:
        names = ", ".join(unscorable)
        msg = f"metric(s) {names} are registered without a scorer, so they cannot score"
        raise ScoringError(msg)
    # One unit of work per sample: (task index, raw output).
    outputs: list[tuple[str, ...] | None] = []
    for t in task_list:
        raw = predictions.get(t.task_id)
        if raw is None:
            outputs.append(None)
        elif _is_samples(raw):
            outputs.append(_check_samples(t.task_id, raw))
        elif isinstance(raw, str):
            outputs.append((raw,))
        else:
            msg = f"task {t.task_id!r}: an output is a string or a list of strings (samples)"
            raise ScoringError(msg)
    units = [(i, o) for i, outs in enumerate(outputs) if outs is not None for o in outs]
    sandboxed = [u for u in units if reg.metric(task_list[u[0]].metric_name).sandboxed]
    opened: Any = None
    if sandboxed and sandbox is None and executor == "ray":
        from evalspec.cluster.ray import open_ray_sandbox

        sandbox = opened = open_ray_sandbox(allow_code_exec, address=ray_address)
    elif sandboxed:
        sandbox = _sandbox_for(allow_code_exec, sandbox)
    try:
        return _score_units(
            task_list,
            predictions,
            outputs,
            units,
            sandboxed,
            reg,
            allow_code_exec,
            sandbox,
            jobs,
            progress,
        )
    finally:
        if opened is not None:
            opened.close()  # a cluster connection this call made is this call's to end


def _score_units(
    task_list: list[TaskSpec],
    predictions: Mapping[str, Prediction],
    outputs: list[tuple[str, ...] | None],
    units: list[tuple[int, str]],
    sandboxed: list[tuple[int, str]],
    reg: Registry,
    allow_code_exec: bool,
    sandbox: Any,
    jobs: int | None,
    progress: Progress | None,
) -> list[TaskScore]:
    """Score every unit (one sample of one task), sandboxed ones ``jobs`` at a time."""
    n_jobs = jobs if jobs is not None else int(getattr(sandbox, "default_jobs", 1))
    missing = sum(1 for o in outputs if o is None)
    total = len(units) + missing
    parts: list[list[SampleScore]] = [[] for _ in task_list]
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    # A sandbox that paces its runs (evalspec.sandbox.Sandbox.paced) prepares
    # the next runs while ``n_jobs`` programs execute: twice the threads, never
    # more programs at once.
    paced = getattr(sandbox, "paced", None)
    runner = paced(n_jobs) if sandboxed and callable(paced) else sandbox
    threads = 2 * n_jobs if runner is not sandbox else n_jobs

    def run(unit: tuple[int, str]) -> SampleScore:
        i, raw = unit
        return _score_one(task_list[i], raw, reg, allow_code_exec, runner)

    for _ in range(missing):
        tick()
    plain = [u for u in units if not reg.metric(task_list[u[0]].metric_name).sandboxed]
    for unit in plain:
        parts[unit[0]].append(run(unit))
        tick()
    if sandboxed:
        pool = ThreadPoolExecutor(max_workers=threads)
        try:
            # map keeps input order, so each task's samples stay in order.
            for unit, result in zip(sandboxed, pool.map(run, sandboxed), strict=True):
                parts[unit[0]].append(result)
                tick()
        except BaseException:
            # An exception (a signal, a broken metric) ends the run: programs not
            # started yet never start. A sandbox_error is no exception: it is a row.
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    out = []
    for task, raw_value, task_parts in zip(
        task_list, (predictions.get(t.task_id) for t in task_list), parts, strict=True
    ):
        metric = reg.metric(task.metric_name)
        if not task_parts:
            out.append(score_task(task, None, registry=reg))
        else:
            out.append(_assemble(task, metric, task_parts, _is_samples(raw_value)))
    return out


EXECUTORS = ("local", "ray")
"""Where sandboxed programs run: this machine's thread pool, or a Ray cluster."""
