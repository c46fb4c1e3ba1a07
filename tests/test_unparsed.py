"""Unparsed outputs: detectors declared on the rules agree with the rules they describe."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from evalspec import PostProcessRule, TaskSpec, build_report, hookimpl, score_tasks
from evalspec.registry import Registry, build_registry
from evalspec.unparsed import extracts, unparsed
from evalspec.versions import AddCategory, AddPostProcess, Migration

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


# -- a third-party extracting rule is counted like a built-in one -------------------------


def _after(text: str) -> str:
    """The text after the first ``=>``, or ``""``."""
    _, sep, tail = text.partition("=>")
    return tail.strip() if sep else ""


class ArrowPlugin:
    """A plugin defined here, not in evalspec: an extracting rule and its category."""

    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        register(
            Migration(
                2,
                1,
                "arrows",
                (
                    AddPostProcess("after_arrow", "the text after =>"),
                    AddCategory("arrow_qa", ("exact_match",), ("after_arrow",), ("x.jsonl",)),
                ),
            )
        )

    @hookimpl
    def evalspec_register_post_processors(
        self, register: Callable[[PostProcessRule], None]
    ) -> None:
        register(
            PostProcessRule(
                "after_arrow", _after, "text after =>", unparsed=lambda raw: "=>" not in raw
            )
        )

    @hookimpl
    def evalspec_register_categories(self, register: Callable[[object], None]) -> None:
        from evalspec import Category

        register(Category("arrow_qa"))


def test_a_plugin_rule_returning_empty_counts_as_unparsed() -> None:
    reg = build_registry([ArrowPlugin()], entry_points=False)
    tasks = [
        TaskSpec("a1", "arrow_qa", "q", ["4"], "exact_match", "after_arrow"),
        TaskSpec("a2", "arrow_qa", "q", ["4"], "exact_match", "after_arrow"),
    ]
    scores = score_tasks(tasks, {"a1": "so => 4", "a2": "four"}, registry=reg)
    assert [s.unparsed for s in scores] == [False, True]
    report = build_report(tasks, scores, registry=reg, bootstrap=0)
    assert report["unparsed"] == {"arrow_qa": {"after_arrow": 1}}
    assert report["rows"][1]["unparsed"] is True
