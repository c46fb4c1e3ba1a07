"""n samples per task: each sample's score, and pass@k over tasks for the report.

A task predicted with ``"outputs": [...]`` has one :class:`SampleScore` per
sample; its row score is the mean over samples (for a binary metric that is
pass@1). For binary metrics the report adds pass@k for each asked ``k``: per
task from ``n`` and the number of correct samples ``c``, then the mean over
tasks per metric, category and label, with bootstrap intervals over tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from evalspec.scoring.intervals import summarize
from evalspec.scoring.passatk import PassAtKError, metric_name, pass_at_k

SANDBOX_ERROR = "sandbox_error"
"""The status of a run the sandbox could not set up (the machine's fault, not the program's)."""


@attrs.frozen
class SampleScore:
    """The score of one sample of a task: post-processed output, score, what ran.

    ``score`` is ``None`` when the sandbox could not run the sample's program
    (``detail["status"] == "sandbox_error"``): that says nothing about the
    program, so it has no score rather than a 0.
    """

    prediction: str
    score: float | None
    unparsed: bool = False
    detail: Mapping[str, Any] | None = attrs.field(default=None, eq=False)

    @property
    def sandbox_error(self) -> bool:
        """True when the machine, not the program, ended the sample's run."""
        return self.detail is not None and self.detail.get("status") == SANDBOX_ERROR

    def to_dict(self) -> dict[str, Any]:
        return {
            "prediction": self.prediction,
            "score": self.score,
            "unparsed": self.unparsed,
            "detail": None if self.detail is None else dict(self.detail),
        }


def check_ks(ks: Sequence[int], counts: Mapping[str, int]) -> None:
    """Refuse a ``k`` above the samples of any predicted task (task id -> n).

    :raises PassAtKError: naming the first such task and its n.
    """
    if not ks or not counts:
        return
    k = max(ks)
    short = [(tid, n) for tid, n in counts.items() if n < k]
    if short:
        tid, n = short[0]
        more = f" (and {len(short) - 1} more tasks)" if len(short) > 1 else ""
        msg = (
            f"pass@{k} needs at least {k} samples per task, but task {tid!r} has {n}{more}; "
            "ask for a smaller k or generate more samples"
        )
        raise PassAtKError(msg)


@attrs.frozen
class TaskSamples:
    """What pass@k needs of one binary-metric task: its groups, n and c (n = 0: missing).

    A task with a ``sandbox_error`` sample is never one of these: it has no pass@k."""

    task_id: str
    metric: str
    category: str
    labels: tuple[tuple[str, str], ...]
    n: int
    correct: int

    def pass_at(self, k: int) -> float:
        # A task without a prediction scores 0, as it does in every other aggregate.
        return 0.0 if self.n == 0 else pass_at_k(self.n, self.correct, k)


def _stats(groups: Mapping[str, list[float]], seed: int, resamples: int, prefix: str) -> Any:
    return {
        name: summarize(groups[name], seed=seed, key=f"{prefix}/{name}", resamples=resamples)
        for name in sorted(groups)
    }


def pass_at_aggregates(
    items: Sequence[TaskSamples], ks: Sequence[int], *, seed: int, resamples: int
) -> dict[str, Any]:
    """``{"pass@K": {"all", "by_metric", "by_category", "by_label"}}`` over binary tasks.

    Each figure is the mean over tasks of the per-task estimate, with a
    percentile-bootstrap interval over tasks seeded per group (group names
    ``pass@K/all``, ``pass@K/metric/NAME``, ``pass@K/category/NAME``,
    ``pass@K/label/LABEL/VALUE``).
    """
    out: dict[str, Any] = {}
    for k in ks:
        name = metric_name(k)
        values = [t.pass_at(k) for t in items]
        by_metric: dict[str, list[float]] = {}
        by_category: dict[str, list[float]] = {}
        by_label: dict[str, dict[str, list[float]]] = {}
        for t, v in zip(items, values, strict=True):
            by_metric.setdefault(t.metric, []).append(v)
            by_category.setdefault(t.category, []).append(v)
            for label, value in t.labels:
                by_label.setdefault(label, {}).setdefault(value, []).append(v)
        out[name] = {
            "all": summarize(values, seed=seed, key=f"{name}/all", resamples=resamples),
            "by_metric": _stats(by_metric, seed, resamples, f"{name}/metric"),
            "by_category": _stats(by_category, seed, resamples, f"{name}/category"),
            "by_label": {
                label: _stats(by_label[label], seed, resamples, f"{name}/label/{label}")
                for label in sorted(by_label)
            },
        }
    return out


__all__ = [
    "SANDBOX_ERROR",
    "PassAtKError",
    "SampleScore",
    "TaskSamples",
    "check_ks",
    "pass_at_aggregates",
]
