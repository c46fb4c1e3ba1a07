"""The five categories of spec v1."""

from __future__ import annotations

from collections.abc import Callable

from evalspec import Category, hookimpl


@hookimpl
def evalspec_register_categories(register: Callable[[Category], None]) -> None:
    register(Category("arithmetic", "a numeric question with one exact answer"))
    register(Category("mcq", "multiple choice; the target is one letter A-E"))
    register(Category("code_exec", "a program, checked by running test programs"))
    register(
        Category(
            "classification",
            "a label from a closed set",
            aliases=("sentiment*", "intent*", "nli", "topic*", "label*", "toxicity"),
            alias_hint="the label is the target (post_process lower or strip_whitespace)",
        )
    )
    register(Category("summary", "free text compared with reference texts"))
