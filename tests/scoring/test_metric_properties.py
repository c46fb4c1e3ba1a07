"""Properties every registered metric must have, checked over the registry.

The metrics come from the installed plugins (entry points, so a third-party
metric is covered the moment it is installed) plus a plugin defined here that
adds a metric in a new spec version, to show a plugin metric is held to the
same contract through the same code path.

Sandboxed metrics (``code_exec``) are left out of these generic loops for one
reason: scoring them runs the prediction as a program, which needs the
sandbox and opting in; tests/scoring/test_score_code_exec.py tests them with the real
sandbox, and a test below pins that ``code_exec`` is the only such metric, so
a new sandboxed metric cannot slip past both.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalspec
from evalspec import Metric, Registry, build_registry, default_registry, hookimpl
from evalspec.versions import AddMetric, Migration

TEST_METRIC = "token_jaccard"


def token_jaccard(prediction: str, targets: Sequence[str]) -> float:
    """Jaccard overlap of whitespace tokens; the best target wins."""
    pred = set(prediction.split())

    def one(target: str) -> float:
        gold = set(target.split())
        union = pred | gold
        return len(pred & gold) / len(union) if union else 1.0

    return max(one(t) for t in targets)


class TokenJaccardPlugin:
    """A third-party style plugin: one metric, declared by its own spec version."""

    def __init__(self, version: int) -> None:
        self.version = version

    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        register(
            Migration(
                self.version,
                self.version - 1,
                "add the token_jaccard metric",
                (AddMetric(TEST_METRIC, "Jaccard overlap of whitespace tokens"),),
            )
        )

    @hookimpl
    def evalspec_register_metrics(self, register: Callable[[Metric], None]) -> None:
        register(Metric(TEST_METRIC, "token Jaccard", token_jaccard, best_target_wins=True))


def _registry_with_plugin() -> Registry:
    head = default_registry().head
    return build_registry([TokenJaccardPlugin(head + 1)])


REGISTRY = _registry_with_plugin()
ALL_METRICS = sorted(REGISTRY.metrics)
# code_exec is excluded here (it needs the sandbox); see the module docstring.
PLAIN = [name for name in ALL_METRICS if not REGISTRY.metrics[name].sandboxed]
BEST_TARGET = [name for name in PLAIN if REGISTRY.metrics[name].best_target_wins]


def _score(name: str, prediction: str, targets: Sequence[str]) -> float:
    return evalspec.score(name, prediction, targets, registry=REGISTRY)


def test_the_loops_cover_the_builtin_and_the_plugin_metrics() -> None:
    assert {"exact_match", "accuracy", "f1", "rouge_l", "bleu_4", TEST_METRIC} <= set(PLAIN)
    assert {"exact_match", "accuracy", "f1", "rouge_l", TEST_METRIC} <= set(BEST_TARGET)


def test_code_exec_is_the_only_sandboxed_metric() -> None:
    assert [n for n in ALL_METRICS if REGISTRY.metrics[n].sandboxed] == ["code_exec"]


TEXT = st.text(max_size=60) | st.lists(
    st.sampled_from(["the", "cat", "Cat", "sat", "a", "mat", "on", "42", ".", "é", "猫", ""]),
    max_size=10,
).map(" ".join)
TARGETS = st.lists(TEXT, min_size=1, max_size=4)

ARTICLES = {"a", "an", "the"}
WORD = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=8).filter(
    lambda w: w.lower() not in ARTICLES
)
# Non-degenerate text: every metric's tokenizer finds tokens in it (ASCII
# letters and digits, not only articles), with some punctuation attached.
PLAIN_TEXT = st.lists(
    st.tuples(WORD, st.sampled_from(["", ",", ".", "!"])).map("".join), min_size=1, max_size=12
).map(" ".join)


@pytest.mark.parametrize("name", PLAIN)
@given(prediction=TEXT, targets=TARGETS)
def test_every_metric_is_deterministic(name: str, prediction: str, targets: list[str]) -> None:
    assert _score(name, prediction, targets) == _score(name, prediction, list(targets))


@pytest.mark.parametrize("name", PLAIN)
@given(prediction=TEXT, targets=TARGETS)
def test_every_metric_returns_a_float_in_the_unit_interval(
    name: str, prediction: str, targets: list[str]
) -> None:
    value = _score(name, prediction, targets)
    assert type(value) is float
    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize("name", PLAIN)
@given(target=PLAIN_TEXT, others=st.lists(TEXT, max_size=3), position=st.integers(0, 3))
def test_prediction_identical_to_a_target_scores_one(
    name: str, target: str, others: list[str], position: int
) -> None:
    targets = list(others)
    targets.insert(min(position, len(targets)), target)
    assert _score(name, target, targets) == 1.0


@pytest.mark.parametrize("name", BEST_TARGET)
@given(prediction=TEXT, targets=TARGETS, extra=TEXT, position=st.integers(0, 4))
def test_adding_a_target_never_lowers_a_best_target_metric(
    name: str, prediction: str, targets: list[str], extra: str, position: int
) -> None:
    more = list(targets)
    more.insert(min(position, len(more)), extra)
    assert _score(name, prediction, more) >= _score(name, prediction, targets)


@pytest.mark.parametrize("name", BEST_TARGET)
@given(prediction=TEXT, targets=TARGETS)
def test_a_best_target_metric_scores_its_best_single_target(
    name: str, prediction: str, targets: list[str]
) -> None:
    assert _score(name, prediction, targets) == max(_score(name, prediction, [t]) for t in targets)
