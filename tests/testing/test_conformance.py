"""The conformance kit catches each kind of misbehaving rule and metric."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import attrs
import pytest

from evalspec import PostProcessRule, Registry
from evalspec.testing.conformance import (
    ConformanceFailure,
    check_registry,
    conformance_cases,
    corpus,
    metric_cases,
    rule_cases,
)


def test_builtin_registry_conforms(registry: Registry) -> None:
    check_registry(registry, max_examples=40)


def test_every_builtin_rule_gets_its_contract_and_idempotence_cases(registry: Registry) -> None:
    ids = {case.id for case in conformance_cases(registry)}
    for rule in ("extract_letter", "extract_first_line", "strip_whitespace"):
        assert f"post_process:{rule}:contract" in ids
    for rule in ("none", "strip_whitespace", "lower", "extract_first_line"):
        assert f"post_process:{rule}:idempotent" in ids
    for rule in registry.post_processors:
        assert {f"post_process:{rule}:total", f"post_process:{rule}:deterministic"} <= ids
    assert f"registry:v{registry.version}:fresh_interpreter" in ids


def _counter_suffix() -> Callable[[str], str]:
    counter = itertools.count()
    return lambda s: s + str(next(counter))


BAD_RULES: list[tuple[str, Callable[[str], str], str]] = [
    ("extract_letter", lambda s: s[:1], "contract"),
    ("extract_first_line", lambda s: s.strip(), "contract"),
    ("strip_whitespace", lambda s: s.lstrip(), "contract"),
    ("lower", lambda s: s.lower() + "x", "idempotent"),
    ("none", _counter_suffix(), "deterministic"),
    ("my_rule", lambda s: s.encode("utf-8").decode("utf-8"), "total"),  # lone surrogates
]


@pytest.mark.parametrize(
    ("name", "fn", "prop"), BAD_RULES, ids=[b[2] + "-" + b[0] for b in BAD_RULES]
)
def test_a_rule_breaking_a_property_fails_that_case(
    name: str, fn: Callable[[str], str], prop: str, registry: Registry
) -> None:
    # The broken function under the built-in rule's declarations (contract, idempotence).
    known = registry.post_processors.get(name)
    rule = PostProcessRule(name, fn) if known is None else attrs.evolve(known, function=fn)
    [case] = [c for c in rule_cases(rule, max_examples=100) if c.prop == prop]
    with pytest.raises(ConformanceFailure, match=name):
        case.run()


def _random_score() -> Callable[[str, Sequence[str]], float]:
    counter = itertools.count()
    return lambda p, t: (next(counter) % 7) / 7


BAD_METRICS: list[tuple[Callable[[str, Sequence[str]], float], str]] = [
    (lambda p, t: 1, "range"),  # an int is not a float
    (lambda p, t: float(len(p)), "range"),
    (lambda p, t: t[1] == p, "range"),  # raises IndexError on one target
    (_random_score(), "deterministic"),
]


@pytest.mark.parametrize(("scorer", "prop"), BAD_METRICS)
def test_a_metric_breaking_a_property_fails_that_case(
    scorer: Callable[[str, Sequence[str]], float], prop: str
) -> None:
    [case] = [c for c in metric_cases("m", scorer, max_examples=100) if c.prop == prop]
    with pytest.raises(ConformanceFailure, match="metric m"):
        case.run()


def test_a_well_behaved_metric_passes() -> None:
    for case in metric_cases("exact", lambda p, t: float(p in t), max_examples=50):
        case.run()


def test_the_fresh_interpreter_corpus_holds_lone_surrogates_and_is_stable() -> None:
    texts = corpus()
    assert any("\ud800" <= ch <= "\udfff" for t in texts for ch in t)
    assert texts == corpus()


def test_a_metric_declaring_best_target_wins_is_held_to_it() -> None:
    def last_target_only(prediction: str, targets: Sequence[str]) -> float:
        return float(prediction == targets[-1])

    cases = metric_cases("last", last_target_only, max_examples=100, best_target_wins=True)
    [case] = [c for c in cases if c.prop == "best_target_wins"]
    with pytest.raises(ConformanceFailure, match="best_target_wins"):
        case.run()
    plain = metric_cases("last", last_target_only, max_examples=10)
    assert "best_target_wins" not in {c.prop for c in plain}


def test_sandboxed_metrics_are_never_fed_random_text(registry: Registry) -> None:
    sandboxed = [name for name, m in registry.metrics.items() if m.sandboxed]
    assert sandboxed  # code_exec
    ids = {case.id for case in conformance_cases(registry)}
    assert not any(case_id.startswith(f"metric:{name}:") for name in sandboxed for case_id in ids)
    scored = [n for n, m in registry.metrics.items() if m.scorer is not None and not m.sandboxed]
    for name in scored:
        assert {f"metric:{name}:range", f"metric:{name}:deterministic"} <= ids
