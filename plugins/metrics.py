"""The six metrics of spec v1, each faithful to the reference the field cites.

- ``exact_match`` / ``accuracy``: plain string equality with any target, after
  the task's post-process rule and nothing else (no SQuAD normalisation: it
  would turn the MCQ letter ``"A"`` into ``""``).
- ``f1``: SQuAD v1.1's token F1 (the official evaluation script's
  ``normalize_answer`` and ``f1_score``), the best target wins.
- ``rouge_l``: Google's ``rouge-score`` package itself,
  ``RougeScorer(['rougeL'], use_stemmer=False)``, F-measure, the best target wins.
- ``bleu_4``: ``sacrebleu`` itself, ``sentence_bleu(prediction, targets).score / 100``
  per item (13a tokenizer, exp smoothing, effective order); the dataset-level
  figure is ``corpus_bleu`` over the same items, also divided by 100.
- ``code_exec``: 1.0 only when the sandbox reports that every target test passed.
- ``numeric_match`` (spec v2): numbers compared as numbers (``"12"``, ``"12.0"``
  and ``"$12"`` are equal), see :func:`numeric_match`.

``rouge-score`` and ``sacrebleu`` come with the ``score`` extra and are imported
only when their metric scores something.
"""

from __future__ import annotations

import functools
import importlib
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from evalspec.errors import MissingDependencyError
from evalspec.hookspecs import hookimpl
from evalspec.model import Metric

from .answers import as_number

EXTRA = "score"
"""The extra that installs the reference packages."""


def _require(module: str, package: str, metric: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"metric {metric!r}", package, EXTRA) from exc


def no_rouge_tokens(targets: Sequence[str]) -> bool:
    """No target has an ASCII letter or digit: rouge-score's default tokenizer keeps only those."""
    return not any(ch.isascii() and ch.isalnum() for t in targets for ch in t)


def _clamp(value: float) -> float:
    """Pull float noise back into [0, 1].

    sacreBLEU's score can exceed 100 by rounding (``sentence_bleu("the cat   ",
    ["the cat"])`` is ``100.00000000000004``); the metric contract is [0, 1], and
    the correction is below 1e-12, far inside the 1e-9 parity tolerance.
    """
    return min(1.0, max(0.0, value))


# -- exact match ---------------------------------------------------------------


def exact_match(prediction: str, targets: Sequence[str]) -> float:
    """1.0 when the prediction equals any target exactly, else 0.0."""
    return 1.0 if any(prediction == t for t in targets) else 0.0


# -- SQuAD v1.1 F1 --------------------------------------------------------------

# The official script drops the 32 ASCII characters of ``string.punctuation``
# (Unicode punctuation such as curly quotes is kept) and replaces the articles
# a/an/the, matched with a Unicode ``\b``, by a space.
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 ``normalize_answer``: lower, drop punctuation, drop articles, fix spaces.

    The order matters and is the official one: ``"A-B"`` loses its hyphen
    before articles are removed, giving ``"ab"``.
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _token_f1(prediction_tokens: list[str], target_tokens: list[str]) -> float:
    # The official f1_score, operation for operation (so the floats are identical):
    # no shared token -- both sides empty included -- is 0.
    common = Counter(prediction_tokens) & Counter(target_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(target_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1(prediction: str, targets: Sequence[str]) -> float:
    """SQuAD v1.1 token F1 against each target; the best target wins."""
    prediction_tokens = squad_normalize(prediction).split()
    return max(_token_f1(prediction_tokens, squad_normalize(t).split()) for t in targets)


# -- ROUGE-L (rouge-score) -----------------------------------------------------


@functools.cache
def _rouge_scorer() -> Any:
    module = _require("rouge_score.rouge_scorer", "rouge-score", "rouge_l")
    return module.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(prediction: str, targets: Sequence[str]) -> float:
    """rouge-score's ROUGE-L F-measure (target first, as its API takes it); best target wins.

    Its tokenizer keeps only ASCII letters and digits, so text with none of
    them (CJK, Thai, punctuation only) scores 0: that is the reference's
    behaviour, reproduced, not fixed.
    """
    scorer = _rouge_scorer()
    return max(float(scorer.score(t, prediction)["rougeL"].fmeasure) for t in targets)


# -- BLEU-4 (sacrebleu) --------------------------------------------------------


def _sacrebleu() -> Any:
    return _require("sacrebleu", "sacrebleu", "bleu_4")


def bleu_4(prediction: str, targets: Sequence[str]) -> float:
    """``sacrebleu.sentence_bleu(prediction, targets).score / 100`` (its sentence defaults)."""
    score = _sacrebleu().sentence_bleu(prediction, list(targets)).score
    return _clamp(float(score) / 100)


def corpus_bleu_4(predictions: Sequence[str], targets: Sequence[Sequence[str]]) -> float:
    """``sacrebleu.corpus_bleu`` over all items / 100 (its corpus defaults).

    Items may have different numbers of targets: sacrebleu takes reference
    *streams*, and a ``None`` in a stream means "this item has no reference
    here", which is how it supports a variable number of references.
    """
    width = max(len(t) for t in targets)
    streams = [[t[i] if i < len(t) else None for t in targets] for i in range(width)]
    score = _sacrebleu().corpus_bleu(list(predictions), streams).score
    return _clamp(float(score) / 100)


# -- numbers (spec v2) -------------------------------------------------------------


def numeric_match(prediction: str, targets: Sequence[str]) -> float:
    """1.0 when the prediction equals a target as a number, or as a string.

    A side is a number when all of it is one, as rule ``extract_number`` reads
    numbers (sign, currency, thousands separators, decimals; surrounding
    whitespace allowed): ``"12"``, ``"12.00"`` and ``" $12 "`` are equal, and
    are compared as exact decimals, never as floats. When either side is not
    a number (``"twelve"``), the two are equal only as identical strings.
    """
    predicted = as_number(prediction)
    for target in targets:
        expected = as_number(target)
        if predicted is not None and expected is not None:
            if predicted == expected:
                return 1.0
        elif prediction == target:
            return 1.0
    return 0.0


# -- code execution --------------------------------------------------------------


def code_exec(prediction: str, targets: Sequence[str], sandbox: Any) -> float:
    """1.0 when the extracted code followed by each target test passes in the sandbox."""
    return 1.0 if sandbox.run_tests(prediction, targets).passed else 0.0


@hookimpl
def evalspec_register_metrics(register: Callable[[Metric], None]) -> None:
    register(
        Metric(
            "exact_match",
            "1.0 when the prediction equals any target exactly",
            exact_match,
            best_target_wins=True,
            binary=True,
        )
    )
    register(Metric("f1", "SQuAD v1.1 token F1; the best target wins", f1, best_target_wins=True))
    register(
        Metric(
            "bleu_4",
            "sacreBLEU sentence BLEU / 100 against all targets; corpus BLEU for the dataset",
            bleu_4,
            corpus_scorer=corpus_bleu_4,
            reference_packages=("sacrebleu",),
        )
    )
    register(
        Metric(
            "rouge_l",
            "rouge-score ROUGE-L F-measure (no stemming); the best target wins",
            rouge_l,
            best_target_wins=True,
            reference_packages=("rouge-score",),
            target_check=no_rouge_tokens,
            caveat="no target has an ASCII letter or digit, so rouge-score's tokenizer finds "
            "no tokens and the task scores 0 whatever the output (non-Latin text needs another "
            "metric)",
        )
    )
    register(
        Metric(
            "accuracy",
            "exact match per item; the mean is reported as accuracy",
            exact_match,
            best_target_wins=True,
            binary=True,
        )
    )
    register(
        Metric(
            "numeric_match",
            "1.0 when the prediction equals a target as a number (12 = 12.0 = $12)",
            numeric_match,
            best_target_wins=True,
            binary=True,
        )
    )
    register(
        Metric(
            "code_exec",
            "1.0 when the extracted code passes every target test in the sandbox",
            code_exec,
            sandboxed=True,
            binary=True,
            aliases=("pass@*", "pass_at_*", "pass_at", "execution*", "unit_test*"),
            alias_hint="pass@k is code_exec scored on n samples per task: "
            "`evalspec score --pass-at K`",
        )
    )
