"""Oracle for the ``f1`` metric: the official SQuAD v1.1 evaluation functions.

Source: "Official evaluation script for v1.1 of the SQuAD dataset"
(``evaluate-v1.1.py``, Rajpurkar et al.; vendored as
``huggingface/evaluate: metrics/squad/compute_score.py``). These are its
``normalize_answer``, ``f1_score`` and ``metric_max_over_ground_truths``, kept
in the script's own structure and order of operations (nested helpers, the
generator-based punctuation filter, ``re.sub`` for articles, an ``int`` 0 when
nothing is shared) as documented in shared/research/anchors_reliability.md
section 3.1, with type hints added. evalspec's implementation
(``evalspec_plugins.metrics``) is written differently on purpose (a
``str.translate`` table, a precompiled pattern, the prediction normalised
once), so agreement between the two is evidence, not an echo.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def metric_max_over_ground_truths(
    metric_fn: Callable[[str, str], float], prediction: str, ground_truths: Sequence[str]
) -> float:
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)
