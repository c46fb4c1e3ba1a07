"""The worked example: a plugin that adds spec version 3, category ``translation``.

Not installed with evalspec; tests register it explicitly
(``build_registry([*builtin_plugins, example_plugin], entry_points=False)``)
or list it in a temporary project's ``[tool.evalspec] plugins``. It
contributes both halves: the migration that declares the names, and the
implementations of those names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from evalspec.hookspecs import hookimpl
from evalspec.model import Category, Metric, PostProcessRule
from evalspec.versions import AddCategory, AddMetric, AddPostProcess, Migration

FIXTURES = Path(__file__).parent / "fixtures"

V3 = Migration(
    version=3,
    parent=2,
    message="Add category translation",
    operations=(
        AddMetric("chrf", "character n-gram F-score (chrF, n<=6, beta=2); best target wins"),
        AddPostProcess("collapse_whitespace", "runs of whitespace become one space; ends trimmed"),
        AddCategory(
            "translation",
            metrics=("chrf", "exact_match"),
            post_processes=("collapse_whitespace", "strip_whitespace"),
            fixtures=("translation.jsonl",),
            description="translate a text; compared with reference translations",
        ),
    ),
    fixture_dir=FIXTURES,
)


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace (``str.isspace``) becomes one space; both ends are trimmed."""
    return " ".join(text.split())


def _ngrams(text: str, n: int) -> Counter[str]:
    return Counter(text[i : i + n] for i in range(len(text) - n + 1))


def chrf(prediction: str, targets: Sequence[str], max_n: int = 6, beta: float = 2.0) -> float:
    """chrF: character n-gram F-beta averaged over n = 1..max_n, whitespace ignored."""

    def one(hyp: str, ref: str) -> float:
        hyp, ref = "".join(hyp.split()), "".join(ref.split())
        if not hyp or not ref:
            return float(hyp == ref)
        precision = recall = 0.0
        orders = 0
        for n in range(1, max_n + 1):
            h, r = _ngrams(hyp, n), _ngrams(ref, n)
            if not h or not r:
                break
            common = sum((h & r).values())
            precision += common / sum(h.values())
            recall += common / sum(r.values())
            orders += 1
        precision, recall = precision / orders, recall / orders
        if precision + recall == 0:
            return 0.0
        b2 = beta * beta
        return (1 + b2) * precision * recall / (b2 * precision + recall)

    return max((one(prediction, t) for t in targets), default=0.0)


@hookimpl
def evalspec_register_migrations(register: Callable[[Migration], None]) -> None:
    register(V3)


@hookimpl
def evalspec_register_categories(register: Callable[[Category], None]) -> None:
    register(Category("translation", "translate a text into another language"))


@hookimpl
def evalspec_register_metrics(register: Callable[[Metric], None]) -> None:
    register(Metric("chrf", "character n-gram F-score", chrf))


@hookimpl
def evalspec_register_post_processors(register: Callable[[PostProcessRule], None]) -> None:
    register(PostProcessRule("collapse_whitespace", collapse_whitespace, "collapse whitespace"))
