"""Parity of the built-in metrics with their references (plugins/metrics.py).

The oracles are the reference packages themselves, installed by the ``score``
extra (sacrebleu 2.6.0, rouge-score 0.1.2), and the official SQuAD v1.1
functions (tests/squad_v11_oracle.py). Every comparison is to 1e-9.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence

import pytest
import sacrebleu
import squad_v11_oracle as squad
from evalspec_plugins import metrics
from hypothesis import example, given
from hypothesis import strategies as st
from rouge_score import rouge_scorer

import evalspec
from evalspec import MissingDependencyError

TOL = 1e-9
FULLWIDTH_PARIS = "\uff30\uff41\uff52\uff49\uff53"
ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def ref_bleu(prediction: str, targets: Sequence[str]) -> float:
    return float(sacrebleu.sentence_bleu(prediction, list(targets)).score) / 100


def ref_rouge(prediction: str, targets: Sequence[str]) -> float:
    return max(float(ROUGE.score(t, prediction)["rougeL"].fmeasure) for t in targets)


def ref_f1(prediction: str, targets: Sequence[str]) -> float:
    return float(squad.metric_max_over_ground_truths(squad.f1_score, prediction, targets))


REFERENCES = {"bleu_4": ref_bleu, "rouge_l": ref_rouge, "f1": ref_f1}

LONG = " ".join(f"word{i % 97} tok{i % 13}" for i in range(600))
# (prediction, targets): the awkward cases the issue names, and a few classics.
HAND_PICKED: list[tuple[str, list[str]]] = [
    ("the cat is on the mat", ["the cat sat on the mat"]),
    ("The Eiffel Tower!", ["eiffel tower"]),
    ("Denver Broncos", ["Broncos"]),
    ("“Paris”", ["Paris"]),
    ("café naïve", ["café naïve", "cafe naive"]),
    ("我爱北京天安门", ["我爱北京天安门"]),
    ("สวัสดีครับ", ["สวัสดี"]),
    (FULLWIDTH_PARIS, ["paris"]),
    ("İstanbul", ["i̇stanbul"]),
    ("!!!", ["!!!"]),
    ("...", ["?!"]),
    ("", ["a reference"]),
    ("a prediction", [""]),
    ("", [""]),
    ("the", [""]),
    ("   ", ["the cat"]),
    ("the cat   ", ["the cat"]),
    ("the the the the the the", ["the cat the cat the cat"]),
    ("a a a a b b b b", ["a b a b a b"]),
    ("to be or not to be to be", ["to be or not to be", "not to be", "be"]),
    (LONG, [LONG]),
    (LONG, [LONG[: len(LONG) // 2], LONG[len(LONG) // 3 :]]),
    ("It costs $3.50, ok.", ["It costs $ 3.50 , ok ."]),
    ("e-mail 3-4", ["e-mail 3 - 4", "email 34"]),
    ("line one\nline two", ["line one line two"]),
    ("a-b", ["ab"]),
    ("theater", ["the ater"]),
    ("&amp; &lt;tag&gt;", ["& <tag>"]),
    ("3.14", ["3 14"]),
    ("running dogs", ["run dog"]),
    ("The Cat", ["the cat"]),
    ("hello", ["hello", "hello there", "hi"]),
    ("\u2028sep\u00a0nbsp\u200bzw", ["sep nbsp zw"]),
    ("emoji 🙂 text", ["emoji text 🙂"]),
]


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize(("prediction", "targets"), HAND_PICKED)
def test_hand_picked_cases_match_the_reference(
    name: str, prediction: str, targets: list[str]
) -> None:
    ours = evalspec.score(name, prediction, targets)
    assert ours == pytest.approx(REFERENCES[name](prediction, targets), abs=TOL)


TEXT = st.text(max_size=80)
WORDS = st.lists(
    st.sampled_from(["the", "a", "cat", "Cat", "sat", "on", "mat", "42", "3.5", ",", "é", "猫"]),
    max_size=14,
).map(" ".join)
ANY_TEXT = TEXT | WORDS


@given(ANY_TEXT, st.lists(ANY_TEXT, min_size=1, max_size=4))
@example("", [""])
@example("the", ["", "the"])
def test_bleu_4_equals_sacrebleu_sentence_bleu(prediction: str, targets: list[str]) -> None:
    assert metrics.bleu_4(prediction, targets) == pytest.approx(
        ref_bleu(prediction, targets), abs=TOL
    )


@given(ANY_TEXT, st.lists(ANY_TEXT, min_size=1, max_size=4))
@example("!!!", ["!!!"])
def test_rouge_l_equals_rouge_score(prediction: str, targets: list[str]) -> None:
    assert metrics.rouge_l(prediction, targets) == pytest.approx(
        ref_rouge(prediction, targets), abs=TOL
    )


@given(ANY_TEXT, st.lists(ANY_TEXT, min_size=1, max_size=4))
@example("the", [""])
@example("A", ["a"])
def test_f1_equals_official_squad_v11(prediction: str, targets: list[str]) -> None:
    assert metrics.f1(prediction, targets) == ref_f1(prediction, targets)


@given(ANY_TEXT)
def test_squad_normalize_equals_official_normalize_answer(text: str) -> None:
    assert metrics.squad_normalize(text) == squad.normalize_answer(text)


@given(
    st.lists(
        st.tuples(ANY_TEXT, st.lists(ANY_TEXT, min_size=1, max_size=3)), min_size=1, max_size=6
    )
)
def test_corpus_bleu_4_equals_sacrebleu_corpus_bleu(items: list[tuple[str, list[str]]]) -> None:
    predictions = [p for p, _ in items]
    targets = [t for _, t in items]
    # The oracle's own reading of variable reference counts: one BLEU object,
    # its corpus statistics summed segment by segment from sentence-level stats.
    bleu = sacrebleu.BLEU()
    stats = [bleu._extract_corpus_statistics([p], [[r] for r in t])[0] for p, t in items]
    totals = [sum(column) for column in zip(*stats, strict=True)]
    expected = float(bleu._compute_score_from_stats(totals).score) / 100
    assert metrics.corpus_bleu_4(predictions, targets) == pytest.approx(min(1.0, expected), abs=TOL)


def test_corpus_bleu_4_with_equal_reference_counts_is_plain_corpus_bleu() -> None:
    predictions = ["the cat is on the mat", "hello"]
    targets = [["the cat sat on the mat"], ["hello there"]]
    expected = sacrebleu.corpus_bleu(predictions, [[t[0] for t in targets]]).score / 100
    assert metrics.corpus_bleu_4(predictions, targets) == pytest.approx(expected, abs=TOL)


# -- reference values (shared/research/anchors_reliability.md, section 3) --------


@pytest.mark.parametrize(
    ("prediction", "target", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower", 1.0),
        ("Denver Broncos", "Broncos", 2 / 3),
        ("“Paris”", "Paris", 0.0),
        ("the", "", 0.0),  # v1.1: nothing shared is 0, even when both sides are empty
        ("theater", "the ater", 0.0),
        (FULLWIDTH_PARIS, "paris", 0.0),
    ],
)
def test_f1_reference_values(prediction: str, target: str, expected: float) -> None:
    assert evalspec.score("f1", prediction, [target]) == pytest.approx(expected, abs=1e-4)


def test_f1_takes_the_best_target() -> None:
    assert evalspec.score("f1", "Denver Broncos", ["Broncos", "Denver Broncos"]) == 1.0


@pytest.mark.parametrize(
    ("prediction", "targets", "expected"),
    [
        ("the cat is on the mat", ["the cat sat on the mat"], 0.379918),
        ("hello", ["hello"], 1.0),
        ("the cat", ["the cat sat on the mat"], 0.135335),
        ("a b c", ["a b d"], 0.550321),
        ("", ["the cat"], 0.0),
        ("The Cat", ["the cat"], 0.0),
        ("the cat   ", ["the cat"], 1.0),
    ],
)
def test_bleu_4_reference_values(prediction: str, targets: list[str], expected: float) -> None:
    assert evalspec.score("bleu_4", prediction, targets) == pytest.approx(expected, abs=1e-6)


def test_bleu_4_corpus_reference_values() -> None:
    predictions = ["the cat is on the mat", "hello"]
    targets = [["the cat sat on the mat"], ["hello there"]]
    assert metrics.corpus_bleu_4(predictions, targets) == pytest.approx(0.33167, abs=1e-5)
    mean = sum(metrics.bleu_4(p, t) for p, t in zip(predictions, targets, strict=True)) / 2
    assert mean == pytest.approx(0.373899, abs=1e-6)
    assert metrics.corpus_bleu_4(["hello"], [["hello"]]) == 0.0


def test_bleu_4_clamps_float_noise_above_one() -> None:
    raw = sacrebleu.sentence_bleu("the cat   ", ["the cat"]).score / 100
    assert raw > 1.0  # the reference itself overshoots by rounding
    assert raw - 1.0 < 1e-12
    assert evalspec.score("bleu_4", "the cat   ", ["the cat"]) == 1.0


@pytest.mark.parametrize(
    ("target", "prediction", "expected"),
    [
        ("The cat sat on the mat.", "the cat sat on the mat", 1.0),
        ("the cat sat on the mat", "the cat is on the mat", 5 / 6),
        ("a b c d", "a b", 2 / 3),
        ("a b c", "c b a", 1 / 3),
        ("any text", "", 0.0),
        ("!!!", "!!!", 0.0),
        ("我爱北京", "我爱北京", 0.0),
        ("สวัสดี", "สวัสดี", 0.0),
        ("café", "cafe", 0.0),
        ("café naïve", "café naïve", 1.0),
        ("running dogs", "run dog", 0.0),
        ("3.14", "3 14", 1.0),
    ],
)
def test_rouge_l_reference_values(target: str, prediction: str, expected: float) -> None:
    assert evalspec.score("rouge_l", prediction, [target]) == pytest.approx(expected, abs=1e-9)


def test_exact_match_is_plain_equality_with_any_target() -> None:
    assert evalspec.score("exact_match", "B", ["A", "B"]) == 1.0
    assert evalspec.score("exact_match", "b", ["B"]) == 0.0
    assert evalspec.score("exact_match", "B ", ["B"]) == 0.0
    # No SQuAD normalisation: the letter "A" is an article there, not here.
    assert evalspec.score("exact_match", "A", ["a"]) == 0.0
    assert evalspec.score("exact_match", "", [""]) == 1.0


def test_accuracy_scores_an_item_as_exact_match() -> None:
    for prediction, targets in HAND_PICKED:
        assert evalspec.score("accuracy", prediction, targets) == evalspec.score(
            "exact_match", prediction, targets
        )


@pytest.mark.parametrize(
    ("blocked", "metric", "package"),
    [("sacrebleu", "bleu_4", "sacrebleu"), ("rouge_score", "rouge_l", "rouge-score")],
)
def test_missing_reference_package_names_the_extra(blocked: str, metric: str, package: str) -> None:
    # A real interpreter in which the package cannot be imported.
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "import evalspec\n"
        "try:\n"
        f"    evalspec.score({metric!r}, 'a', ['a'])\n"
        "except evalspec.MissingDependencyError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == (
        f"metric {metric!r} needs the {package!r} package, which is not installed: "
        "pip install 'evalspec-contract[score]'"
    )
    assert issubclass(MissingDependencyError, evalspec.EvalspecError)


def test_importing_evalspec_does_not_import_the_reference_packages() -> None:
    code = (
        "import sys, evalspec, evalspec_plugins.metrics\n"
        "evalspec.score('f1', 'a', ['a'])\n"
        "print(sorted(m for m in ('sacrebleu', 'rouge_score', 'nltk', 'numpy') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_scores_are_plain_floats() -> None:
    for name in REFERENCES:
        value = evalspec.score(name, "the cat", ["the cat sat"])
        assert type(value) is float
        assert math.isfinite(value)


def test_bleu_4_is_not_a_best_target_metric() -> None:
    # Why bleu_4 does not declare best_target_wins: a reference closer in
    # length to the prediction changes the brevity penalty and can lower BLEU.
    assert metrics.bleu_4("a b c d", ["a b", "x y z w q"]) < metrics.bleu_4("a b c d", ["a b"])
    assert not evalspec.default_registry().metric("bleu_4").best_target_wins
