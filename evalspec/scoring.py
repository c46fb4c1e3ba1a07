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
from evalspec.registry import Registry, default_registry
from evalspec.unparsed import unparsed

Progress = Callable[[int, int], None]
"""``progress(done, total)``, called after each scored task."""


@attrs.frozen
class TaskScore:
    """The score of one task, with what the report needs to explain it.

    ``prediction`` is the post-processed output (``None`` when the task had no
    prediction: it then scores 0 and counts as missing). ``unparsed`` says the
    task's extracting rule found nothing to extract in the raw output.
    ``detail`` holds what a sandboxed metric observed (each test's status and
    the isolation tier), else ``None``.
    """

    task_id: str
    category: str
    metric: str
    post_process: str
    score: float
    prediction: str | None
    unparsed: bool = False
    detail: Mapping[str, Any] | None = attrs.field(default=None, eq=False)

    @property
    def missing(self) -> bool:
        return self.prediction is None

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
        }


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


def score_task(
    task: TaskSpec,
    output: str | None,
    *,
    registry: Registry | None = None,
    allow_code_exec: bool = False,
    sandbox: Any = None,
) -> TaskScore:
    """Post-process ``output`` with the task's rule, then score it with the task's metric.

    ``output`` is the model's raw output; ``None`` means the task has no
    prediction, which scores 0.0 and is reported as missing (nothing runs).
    Keyword arguments as for :func:`score`.
    """
    reg = _registry(registry)
    metric = reg.metric(task.metric_name)
    if output is None:
        return TaskScore(task.task_id, task.category, metric.name, task.post_process, 0.0, None)
    box: Any = None
    if metric.sandboxed:
        box = _RecordingSandbox(_sandbox_for(allow_code_exec, sandbox))
    rule = reg.post_processor(task.post_process)
    prediction = rule(output)
    value = _apply(metric, prediction, _check_targets(task.targets), box)
    detail = None if box is None else _sandbox_detail(task.task_id, box)
    return TaskScore(
        task.task_id,
        task.category,
        metric.name,
        task.post_process,
        value,
        prediction,
        unparsed(rule, output),
        detail,
    )


def _sandbox_detail(task_id: str, box: _RecordingSandbox) -> dict[str, Any]:
    statuses = [str(run.status) for result in box.results for run in result.results]
    if "sandbox_error" in statuses:
        # A sandbox that could not set itself up is an error, never a silent 0.
        msg = f"task {task_id!r}: the sandbox failed to run the tests (status sandbox_error)"
        raise ScoringError(msg)
    return {"isolation_tier": box.tier, "statuses": statuses}


def score_tasks(
    tasks: Iterable[TaskSpec],
    predictions: Mapping[str, str],
    *,
    registry: Registry | None = None,
    allow_code_exec: bool = False,
    sandbox: Any = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> list[TaskScore]:
    """Score every task against ``predictions`` (task id -> raw output), in task order.

    A task without a prediction scores 0.0 and is marked missing. When any task
    uses a code-executing metric, the opt-in is checked before anything is
    scored, one sandbox is opened for the run, and those tasks' programs run
    ``jobs`` at a time.
    """
    if jobs < 1:
        msg = f"jobs must be at least 1, got {jobs}"
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
    sandboxed = [
        i
        for i, t in enumerate(task_list)
        if reg.metric(t.metric_name).sandboxed and predictions.get(t.task_id) is not None
    ]
    if sandboxed:
        sandbox = _sandbox_for(allow_code_exec, sandbox)
    total = len(task_list)
    results: list[TaskScore | None] = [None] * total
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    plain = set(range(total)) - set(sandboxed)
    for i in sorted(plain):
        task = task_list[i]
        results[i] = score_task(task, predictions.get(task.task_id), registry=reg)
        tick()
    if sandboxed:

        def run(i: int) -> TaskScore:
            task = task_list[i]
            return score_task(
                task,
                predictions[task.task_id],
                registry=reg,
                allow_code_exec=allow_code_exec,
                sandbox=sandbox,
            )

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for i, result in zip(sandboxed, pool.map(run, sandboxed), strict=True):
                results[i] = result
                tick()
    return [r for r in results if r is not None]
