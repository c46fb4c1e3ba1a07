"""The scoring pipeline and its Python API (evalspec/scoring/scorer.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalspec
from evalspec import (
    Metric,
    Registry,
    ScoringError,
    TaskSpec,
    UnknownNameError,
    build_registry,
    default_registry,
    hookimpl,
    load_fixtures,
    post_process,
    score,
    score_task,
    score_tasks,
)
from evalspec.versions import AddMetric, Migration

PLAIN_FIXTURES = [t for t in load_fixtures().tasks if t.metric_name != "code_exec"]


def mcq(task_id: str = "q1", rule: str = "extract_letter") -> TaskSpec:
    return TaskSpec(task_id, "mcq", "Pick one.", ["B"], "exact_match", rule)


def registry_with(name: str, scorer: Callable[[str, Sequence[str]], object] | None) -> Registry:
    """The installed registry plus a plugin metric ``name`` with the given scorer."""
    version = default_registry().head + 1

    class Plugin:
        @hookimpl
        def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
            register(Migration(version, version - 1, f"add {name}", (AddMetric(name),)))

        @hookimpl
        def evalspec_register_metrics(self, register: Callable[[Metric], None]) -> None:
            register(Metric(name, "", scorer))  # type: ignore[arg-type]

    return build_registry([Plugin()])


def test_score_is_exported_lazily_from_the_package() -> None:
    assert evalspec.score is score
    assert "score_tasks" in dir(evalspec)


def test_score_task_post_processes_then_scores() -> None:
    result = score_task(mcq(), "The answer is B.")
    assert result.prediction == "B"
    assert result.score == 1.0
    assert not result.missing
    assert not result.unparsed
    assert result.to_dict()["detail"] is None


def test_an_output_the_rule_cannot_parse_scores_zero_and_is_flagged() -> None:
    result = score_task(mcq(), "the answer is b")
    assert result.prediction == ""
    assert result.score == 0.0
    assert result.unparsed


def test_a_rule_that_does_not_extract_never_flags() -> None:
    result = score_task(mcq(rule="strip_whitespace"), "no letter here")
    assert result.score == 0.0
    assert not result.unparsed


def test_a_missing_output_scores_zero_and_counts_as_missing() -> None:
    result = score_task(mcq(), None)
    assert result.score == 0.0
    assert result.missing
    assert result.prediction is None


@pytest.mark.parametrize("task", PLAIN_FIXTURES, ids=lambda t: t.task_id)
@given(output=st.text(max_size=120))
def test_nothing_happens_between_the_rule_and_the_metric(task: TaskSpec, output: str) -> None:
    result = score_task(task, output)
    prediction = post_process(task.post_process, output)
    assert result.prediction == prediction
    assert result.score == score(task.metric_name, prediction, task.targets)


def test_score_tasks_keeps_task_order_and_reports_progress() -> None:
    tasks = PLAIN_FIXTURES
    outputs = {t.task_id: t.targets[0] for t in tasks[1:]}
    seen: list[tuple[int, int]] = []
    results = score_tasks(tasks, outputs, progress=lambda d, n: seen.append((d, n)))
    assert [r.task_id for r in results] == [t.task_id for t in tasks]
    assert results[0].missing
    assert seen == [(i, len(tasks)) for i in range(1, len(tasks) + 1)]
    assert all(r.score == 1.0 for r in results[1:])


def test_score_tasks_refuses_zero_jobs() -> None:
    with pytest.raises(ValueError, match="jobs"):
        score_tasks([], {}, jobs=0)


def test_unknown_metric_is_an_unknown_name() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'exact_match'"):
        score("exact_mach", "a", ["a"])


def test_empty_targets_cannot_be_scored() -> None:
    with pytest.raises(ScoringError, match="targets is empty"):
        score("f1", "a", [])


def test_targets_must_not_be_one_string() -> None:
    with pytest.raises(TypeError, match="not one string"):
        score("f1", "a", "a")


def test_a_metric_without_a_scorer_is_refused() -> None:
    reg = registry_with("nameonly", None)
    with pytest.raises(ScoringError, match="without a scorer"):
        score("nameonly", "a", ["a"], registry=reg)
    scored: list[tuple[int, int]] = []
    tasks = [
        TaskSpec("ok", "mcq", "Pick.", ["B"], "exact_match", "none"),
        TaskSpec("no", "mcq", "Pick.", ["B"], "nameonly", "none"),
    ]
    with pytest.raises(ScoringError, match="nameonly"):
        score_tasks(
            tasks, {"ok": "B", "no": "B"}, registry=reg, progress=lambda d, n: scored.append((d, n))
        )
    assert scored == []  # refused before any task was scored


@pytest.mark.parametrize(
    ("value", "why"),
    [(1.5, "outside"), (-0.1, "outside"), (float("nan"), "outside"), (True, "bool"), ("1", "str")],
)
def test_a_plugin_scorer_breaking_the_contract_is_an_error(value: object, why: str) -> None:
    reg = registry_with("broken", lambda p, t: value)
    with pytest.raises(ScoringError, match=why):
        score("broken", "a", ["a"], registry=reg)


def test_a_plugin_metric_scores_through_the_same_pipeline() -> None:
    reg = registry_with("length_ratio", lambda p, t: min(1.0, len(p) / max(1, len(t[0]))))
    assert score("length_ratio", "ab", ["abcd"], registry=reg) == 0.5
    assert type(score("length_ratio", "ab", ["abcd"], registry=reg)) is float
