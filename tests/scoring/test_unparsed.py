"""Unparsed outputs: detectors declared on the rules agree with the rules they describe."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalspec import PostProcessRule
from evalspec.registry.build import Registry
from evalspec.scoring.unparsed import extracts, unparsed

# Text rich in the characters the rules look for.
TEXT = st.text(alphabet=st.sampled_from("ABEFab `\n\r \t\u2028x"), max_size=40) | st.text()


def _rule(registry: Registry, name: str) -> PostProcessRule:
    return registry.post_processor(name)


@given(raw=TEXT)
def test_no_letter_exactly_when_extract_letter_returns_empty(raw: str) -> None:
    from evalspec_plugins.postprocess import extract_letter, no_letter

    assert no_letter(raw) == (extract_letter(raw) == "")


@given(raw=TEXT)
def test_only_blank_lines_exactly_when_extract_first_line_returns_empty(raw: str) -> None:
    from evalspec_plugins.postprocess import extract_first_line, only_blank_lines

    assert only_blank_lines(raw) == (extract_first_line(raw) == "")


@given(raw=TEXT)
def test_no_fence_exactly_when_extract_code_block_returns_the_text_unchanged(raw: str) -> None:
    from evalspec_plugins.postprocess import extract_code_block, no_fence

    # With a fence the rule drops at least the fence itself, so the output differs.
    assert no_fence(raw) == (extract_code_block(raw) == raw)


def test_rules_that_do_not_extract_never_count_as_unparsed(registry: Registry) -> None:
    for name in ("none", "strip_whitespace", "lower"):
        rule = _rule(registry, name)
        assert not extracts(rule)
        assert not unparsed(rule, "")


def test_examples(registry: Registry) -> None:
    assert unparsed(_rule(registry, "extract_letter"), "the answer is b")
    assert not unparsed(_rule(registry, "extract_letter"), "Answer: C")
    assert unparsed(_rule(registry, "extract_code_block"), "def f(): pass")
    assert not unparsed(_rule(registry, "extract_code_block"), "```\n```")
    assert unparsed(_rule(registry, "extract_first_line"), " \n\t\n")
    assert not unparsed(_rule(registry, "extract_first_line"), "\n 1\n")


# A third-party extracting rule is counted like a built-in one: see
# tests/registry/test_plugin_first_class.py
# (test_a_plugin_metric_is_reported_with_its_declared_knowledge).
