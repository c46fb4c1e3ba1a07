"""evalspec tasks on inspect_ai: one validated task file, the same prompts and the same scores.

``task(PATH)`` returns an inspect :class:`~inspect_ai.Task` whose samples carry
evalspec's rendered prompt (:func:`evalspec.render`, the single rendering path),
the task's targets and its metadata, and whose scorer is evalspec's: the task's
own post-process rule and metric, through the same
:func:`~evalspec.scoring.scorer.score_task` that ``evalspec score`` runs, with
code_exec in evalspec's sandbox (never inspect's default exec). So a score from
``inspect eval`` equals ``evalspec score`` on the same outputs, per task and per
metric (docs/harnesses.md shows both on one file).

The ``tasks`` task of :mod:`evalspec.integrations.inspect_registry` (declared
as evalspec's ``inspect_ai`` entry point) makes a file runnable by name::

    inspect eval evalspec/tasks -T path=tasks.jsonl --model ...

inspect_ai is the ``inspect`` extra; this module is imported only when asked for
(``import evalspec`` never imports it). It is not named ``inspect.py``: inspect
puts a task file's directory on ``sys.path``, where such a module would stand in
for the standard library's ``inspect`` and break every import after it.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
from collections.abc import Mapping
from typing import Any

try:
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
    from inspect_ai.solver import TaskState, generate
except ModuleNotFoundError as missing:  # the extra is not installed: say how to get it
    if missing.name is None or missing.name.split(".")[0] != "inspect_ai":
        raise
    raise ModuleNotFoundError(
        "evalspec.integrations.inspect_adapter needs inspect_ai: "
        "pip install 'evalspec-contract[inspect]'",
        name="inspect_ai",
    ) from None

from evalspec.errors import EvalspecError
from evalspec.model import TaskSpec
from evalspec.registry.build import Registry, default_registry
from evalspec.scoring.render import render
from evalspec.scoring.scorer import open_sandbox, score_task
from evalspec.validation.messages import format_error
from evalspec.validation.validator import validate_file

__all__ = [
    "CodeExecRefused",
    "InvalidTaskFile",
    "by_category",
    "by_metric",
    "evalspec_scorer",
    "task",
    "unparsed",
]


class InvalidTaskFile(EvalspecError):
    """The task file has lines the validator rejects; inspect never runs a partial file."""

    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        shown = "\n".join(lines[:20])
        more = f"\n... and {len(lines) - 20} more" if len(lines) > 20 else ""
        super().__init__(f"{path} has {len(lines)} invalid task line(s):\n{shown}{more}")


class CodeExecRefused(EvalspecError):
    """The file holds tasks whose metric runs the model's output, and code_exec was not allowed."""


@metric
def by_metric() -> Metric:
    """The mean score of each evalspec metric, as ``evalspec score`` reports it
    (``aggregates.overall.<metric>.mean``): tasks of different metrics are not averaged together."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        groups: dict[str, list[float]] = {}
        for s in scores:
            meta = s.score.metadata or {}
            groups.setdefault(str(meta.get("metric")), []).append(float(s.score.as_float()))
        return {name: sum(values) / len(values) for name, values in sorted(groups.items())}

    return compute


@metric
def by_category() -> Metric:
    """The mean score of each category, named ``category:NAME``
    (``aggregates.by_category.<name>.mean``): a category may share a metric's name."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        groups: dict[str, list[float]] = {}
        for s in scores:
            meta = s.score.metadata or {}
            name = f"category:{meta.get('category')}"
            groups.setdefault(name, []).append(float(s.score.as_float()))
        return {name: sum(values) / len(values) for name, values in sorted(groups.items())}

    return compute


@metric
def unparsed() -> Metric:
    """How many outputs the task's rule could not decide (``evalspec score``'s unparsed count)."""

    def compute(scores: list[SampleScore]) -> int:
        return sum(1 for s in scores if (s.score.metadata or {}).get("unparsed"))

    return compute


@scorer(metrics=[by_metric(), by_category(), unparsed()])
def evalspec_scorer(
    tasks: Mapping[str, TaskSpec],
    *,
    registry: Registry,
    allow_code_exec: bool = False,
    min_isolation: str | None = None,
    jobs: int = 1,
) -> Scorer:
    """Score each sample's output with its task's rule and metric, exactly as ``evalspec score``.

    Sandboxed metrics run ``jobs`` programs at a time in one evalspec sandbox,
    opened on the first program (so a file without code tasks never probes it).
    """
    runs = asyncio.Semaphore(jobs)
    sandbox: list[Any] = []

    def _score(spec: TaskSpec, output: str) -> Any:
        box = None
        if registry.metric(spec.metric_name).sandboxed:
            if not sandbox:
                sandbox.append(open_sandbox(allow_code_exec, minimum_tier=min_isolation))
            box = sandbox[0]
        return score_task(
            spec, output, registry=registry, allow_code_exec=allow_code_exec, sandbox=box
        )

    async def score(state: TaskState, target: Target) -> Score:
        spec = tasks[str(state.sample_id)]
        async with runs:
            result = await asyncio.to_thread(_score, spec, state.output.completion)
        return Score(
            value=result.score,
            answer=result.prediction,
            explanation=_explanation(result.detail),
            metadata={
                "task_id": spec.task_id,
                "metric": result.metric,
                "category": result.category,
                "post_process": result.post_process,
                "unparsed": result.unparsed,
            },
        )

    return score


def _explanation(detail: Mapping[str, Any] | None) -> str | None:
    if not detail:
        return None
    return "; ".join(f"{k}: {v}" for k, v in sorted(detail.items()))


def task(
    path: str | os.PathLike[str],
    *,
    spec_version: int | None = None,
    allow_code_exec: bool = False,
    min_isolation: str | None = None,
    jobs: int = 1,
    registry: Registry | None = None,
) -> Task:
    """An inspect Task built from the evalspec task file at ``path``.

    Every line is validated first: a file with any invalid line is refused
    (:class:`InvalidTaskFile`, listing each as ``evalspec validate`` does),
    and a file with code-executing tasks is refused unless ``allow_code_exec``.

    :raises OSError: the file cannot be read.
    """
    reg = default_registry(spec_version) if registry is None else registry
    name = os.fspath(path)
    with open(name, "rb") as f:
        data = f.read()
    validation = validate_file(io.BytesIO(data), registry=reg)
    if validation.errors:
        raise InvalidTaskFile(name, [format_error(name, e) for e in validation.errors])
    specs = list(validation.validated)
    code = sorted({t.metric_name for t in specs if reg.metric(t.metric_name).sandboxed})
    if code and not allow_code_exec:
        msg = (
            f"{name} holds tasks whose metric executes the model's output as code "
            f"({', '.join(code)}); pass allow_code_exec=True (inspect eval: "
            "-T allow_code_exec=true) to run them in evalspec's sandbox"
        )
        raise CodeExecRefused(msg)
    digest = hashlib.sha256(data).hexdigest()
    samples = [
        Sample(
            input=render(t),
            target=list(t.targets),
            id=t.task_id,
            metadata={
                "task_id": t.task_id,
                "category": t.category,
                "metric_name": t.metric_name,
                "post_process": t.post_process,
                "spec_version": reg.version,
                "tasks_sha256": digest,
                **({"metadata": dict(t.metadata)} if t.metadata else {}),
            },
        )
        for t in specs
    ]
    stem = os.path.splitext(os.path.basename(name))[0]
    return Task(
        dataset=MemoryDataset(samples, name=stem),
        solver=generate(),
        scorer=evalspec_scorer(
            {t.task_id: t for t in specs},
            registry=reg,
            allow_code_exec=allow_code_exec,
            min_isolation=min_isolation,
            jobs=jobs,
        ),
        name=stem,
        metadata={"evalspec_spec_version": reg.version, "tasks_sha256": digest},
    )
