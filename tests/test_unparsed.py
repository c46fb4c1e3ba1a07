"""The unparsed-output checks agree with the frozen rules they describe (evalspec/unparsed.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalspec import post_process
from evalspec.unparsed import CHECKS, unparsed

# Text rich in the characters the rules look for.
TEXT = st.text(alphabet=st.sampled_from("ABEFab `\n\r \t\u2028x"), max_size=40) | st.text()


@given(TEXT)
def test_no_letter_exactly_when_extract_letter_returns_empty(raw: str) -> None:
    assert unparsed("extract_letter", raw) == (post_process("extract_letter", raw) == "")


@given(TEXT)
def test_only_blank_lines_exactly_when_extract_first_line_returns_empty(raw: str) -> None:
    assert unparsed("extract_first_line", raw) == (post_process("extract_first_line", raw) == "")


@given(TEXT)
def test_no_fence_exactly_when_extract_code_block_returns_the_text_unchanged(raw: str) -> None:
    # With a fence the rule drops at least the fence itself, so the output differs.
    assert unparsed("extract_code_block", raw) == (post_process("extract_code_block", raw) == raw)


def test_rules_that_do_not_extract_never_count_as_unparsed() -> None:
    for rule in ("none", "strip_whitespace", "lower"):
        assert rule not in CHECKS
        assert not unparsed(rule, "")


def test_examples() -> None:
    assert unparsed("extract_letter", "the answer is b")
    assert not unparsed("extract_letter", "Answer: C")
    assert unparsed("extract_code_block", "def f(): pass")
    assert not unparsed("extract_code_block", "```\n```")
    assert unparsed("extract_first_line", " \n\t\n")
    assert not unparsed("extract_first_line", "\n 1\n")
