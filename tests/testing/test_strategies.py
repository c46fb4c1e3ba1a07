"""The public strategies reach what they promise: every pair, the few-shot limit, unicode."""

from __future__ import annotations

from typing import Any

import pytest
from evalspec_plugins.postprocess import extract_code_block, extract_first_line, extract_letter
from hypothesis import find, given, settings

from evalspec import Registry
from evalspec.rules import MAX_FEW_SHOT
from evalspec.testing.strategies import StrategyError, broken_tasks, model_outputs, valid_tasks

SEARCH = settings(max_examples=2000, database=None, deadline=None)


def _pairs(registry: Registry) -> list[tuple[str, str, str]]:
    return [
        (name, metric, rule)
        for name, cat in sorted(registry.spec.categories.items())
        for metric in cat.metrics
        for rule in cat.post_processes
    ]


def _seen(registry: Registry, examples: int) -> list[dict[str, Any]]:
    """What valid_tasks draws in a fixed, derandomized run (no shrinking involved)."""
    drawn: list[dict[str, Any]] = []

    @settings(max_examples=examples, database=None, deadline=None, derandomize=True)
    @given(valid_tasks(registry))
    def collect(task: dict[str, Any]) -> None:
        drawn.append(task)

    collect()
    return drawn


def test_valid_tasks_reach_every_category_and_legal_pair(registry: Registry) -> None:
    tasks = _seen(registry, 2500)  # spec v2 allows 42 triples, some rare in the draw order
    reached = {(t["category"], t["metric_name"], t["post_process"]) for t in tasks}
    assert reached == set(_pairs(registry))


@pytest.mark.slow  # a search of up to 3000 examples per condition: tens of seconds
def test_valid_tasks_reach_the_few_shot_limit_and_unicode(registry: Registry) -> None:
    # find() searches until an example satisfies the condition, so each line states
    # "the strategy can produce this", independent of generation order.
    wide = settings(max_examples=3000, database=None, deadline=None)
    strategy = valid_tasks(registry)
    conditions = [
        lambda t: len(t.get("few_shot_examples", [])) == MAX_FEW_SHOT,
        lambda t: "few_shot_examples" not in t,
        lambda t: not t["task_id"].isascii(),
        lambda t: not t["prompt"].isascii(),
        lambda t: "\n" in t["prompt"],
        lambda t: bool(t.get("metadata")),
    ]
    for condition in conditions:
        find(strategy, condition, settings=wide)


def test_valid_tasks_draw_the_optional_fields_of_their_version(registry: Registry) -> None:
    # Spec v2's preamble (any category) and code_protocol (code_exec only, one of its
    # choices) can be drawn, and such tasks are ones the validator admits; v1 has none.
    from evalspec import validate_task

    v2 = registry.at_version(2)
    strategy = valid_tasks(v2)
    found = [
        find(strategy, lambda t: "preamble" in t, settings=SEARCH),
        find(strategy, lambda t: t.get("code_protocol") == "completion", settings=SEARCH),
        find(strategy, lambda t: t.get("code_protocol") == "program", settings=SEARCH),
    ]
    drawn = [t for t in _seen(v2, 300) if "preamble" in t or "code_protocol" in t]
    assert drawn
    for task in [*found, *drawn]:
        admitted, errors = validate_task(task, registry=v2)
        assert errors == [] and admitted is not None, errors
    assert all(t["category"] == "code_exec" for t in drawn if "code_protocol" in t)
    v1 = registry.at_version(1)
    assert not any("preamble" in t or "code_protocol" in t for t in _seen(v1, 200))


def test_unknown_rules_and_categories_are_refused(registry: Registry) -> None:
    with pytest.raises(StrategyError, match="unknown rule"):
        broken_tasks("no_such_rule", registry)
    with pytest.raises(StrategyError, match="not a category"):
        valid_tasks(registry, categories=["no_such_category"])


def test_model_outputs_are_shaped_for_their_rule() -> None:
    code = find(
        model_outputs("extract_code_block"),
        lambda s: "```" in s and "\n" in extract_code_block(s),
        settings=SEARCH,
    )
    assert code.count("```") >= 1
    letter = find(
        model_outputs("extract_letter"),
        lambda s: len(s) > 3 and extract_letter(s) in ("A", "B", "C", "D", "E"),
        settings=SEARCH,
    )
    assert extract_letter(letter)
    lines = find(
        model_outputs("extract_first_line"),
        lambda s: len(s.splitlines()) > 2 and extract_first_line(s) != s.splitlines()[0],
        settings=SEARCH,
    )
    assert len(lines.splitlines()) > 2
    find(
        model_outputs("none"), lambda s: any("\ud800" <= c <= "\udfff" for c in s), settings=SEARCH
    )
