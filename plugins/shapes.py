"""Hypothesis strategies of model outputs shaped for the built-in post-process rules.

Declared on the rules as ``shaped_outputs`` (see :mod:`evalspec_plugins.postprocess`)
and imported only when a strategy is drawn, so registering the rules never
needs hypothesis.
"""

from __future__ import annotations

from hypothesis import strategies as st

from evalspec.testing.strategies import WHITESPACE, any_text


def letters() -> st.SearchStrategy[str]:
    """Letters in answer templates (``Answer: C``), lower case and non-letters among them."""
    letter = st.sampled_from(sorted("ABCDEabcdeFXZ"))
    noise = st.text(st.sampled_from(sorted(" \n\t:.()[]*-")), max_size=3)
    templates = st.sampled_from(
        ["{}", "Answer: {}", "The answer is ({}).", "**{}**", "{}. because", "I think {}\n"]
    )
    shaped = st.tuples(templates, letter, noise).map(lambda t: t[0].format(t[1]) + t[2])
    return shaped | st.text(st.sampled_from(sorted("ABCDEabcdeXYZ :\n.()")), max_size=20)


def code_blocks() -> st.SearchStrategy[str]:
    """Fenced code blocks with prose around them, closed or not, and text with no fence."""
    lang = st.sampled_from(["", "python", "py", "js", " python"])
    body = st.text(st.characters(codec="utf-8", exclude_characters="`"), max_size=60)
    newline = st.sampled_from(["\n", "\r\n"])
    close = st.sampled_from(["```", ""])  # "" is an unclosed fence
    prose = any_text(max_size=20)
    fenced = st.tuples(prose, lang, newline, body, newline, close, prose).map(
        lambda p: f"{p[0]}```{p[1]}{p[2]}{p[3]}{p[4]}{p[5]}{p[6]}"
    )
    return fenced | any_text(max_size=40) | st.just("```")


def multi_line() -> st.SearchStrategy[str]:
    """Lines split by every line break ``str.splitlines`` knows, blank lines included."""
    breaks = st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\x0b", "\x1c", "\x85"])
    blank = st.text(st.sampled_from(WHITESPACE), max_size=3)
    line = any_text(max_size=20) | blank
    return st.lists(st.tuples(line, breaks), max_size=6).map(
        lambda parts: "".join(a + b for a, b in parts)
    )


def padded() -> st.SearchStrategy[str]:
    """Text padded with every kind of ``str.isspace`` whitespace."""
    pad = st.text(st.sampled_from(WHITESPACE), max_size=4)
    return st.tuples(pad, any_text(max_size=30), pad).map(lambda p: p[0] + p[1] + p[2])


def numbers() -> st.SearchStrategy[str]:
    """Numbers in answer sentences: signs, currency, separators, units, ``#### N`` lines."""
    number = st.tuples(
        st.sampled_from(["", "-", "+", "\u2212", "$", "-$", "€"]),
        st.integers(min_value=0, max_value=10**9).map(lambda n: f"{n:,}" if n % 2 else str(n)),
        st.sampled_from(["", ".5", ".25", ".0"]),
    ).map("".join)
    templates = st.sampled_from(
        ["{}", "The answer is {}.", "#### {}", "So {} km/h", "{}%", "Total: {} apples\n#### {}"]
    )
    shaped = st.tuples(templates, number).map(lambda t: t[0].replace("{}", t[1]))
    return shaped | st.text(st.sampled_from(sorted("0123456789,.-+$# \nabc")), max_size=24)
