"""Building the closed registry from plugins."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import attrs
import evalspec_plugins
import pytest

from evalspec import (
    Category,
    DuplicateNameError,
    Metric,
    PluginError,
    PostProcessRule,
    Registry,
    UndeclaredNameError,
    UnimplementedNameError,
    build_registry,
    default_registry,
    hookimpl,
)
from evalspec.errors import RegistryError, RegistryProblems, UnknownNameError
from evalspec.versions import AddCategory, AddMetric, AddPostProcess, Migration


def plugin(name: str, **hooks: Callable[..., None]) -> types.ModuleType:
    """A plugin module built in the test, like a third-party package's module."""
    mod = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(mod, hook_name, hookimpl(fn))
    return mod


def builtins() -> list[object]:
    return evalspec_plugins.load()


def test_builtin_registry_holds_spec_v1(registry: Registry) -> None:
    registry = registry.at_version(1)
    assert registry.version == 1
    assert list(registry.categories) == ["arithmetic", "mcq", "code_exec", "classification",
                                         "summary"]  # fmt: skip
    assert set(registry.metrics) == {"exact_match", "f1", "bleu_4", "rouge_l", "accuracy",
                                     "code_exec"}  # fmt: skip
    assert set(registry.post_processors) == {"none", "strip_whitespace", "lower",
                                             "extract_letter", "extract_code_block",
                                             "extract_first_line"}  # fmt: skip
    assert registry.owners[("post_process", "lower")] == "builtin-post-process"


def test_builtin_registry_holds_spec_v2_by_default(registry: Registry) -> None:
    assert registry.version == 2
    assert set(registry.metrics) - set(registry.at_version(1).metrics) == {"numeric_match"}
    assert set(registry.post_processors) - set(registry.at_version(1).post_processors) == {
        "mcq", "extract_number", "normalize_label",
    }  # fmt: skip
    assert list(registry.spec.fields) == ["preamble", "code_protocol"]
    assert registry.owners[("post_process", "mcq")] == "builtin-post-process"


def test_entry_points_find_the_builtin_plugins() -> None:
    reg = build_registry()
    assert set(reg.categories) >= {"arithmetic", "summary"}
    assert reg.owners[("category", "mcq")] == "builtin-categories"
    assert reg.plugins["builtin-metrics"] is not None  # a version from the distribution


def test_registry_is_frozen(registry: Registry) -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        registry.spec = registry.spec  # type: ignore[misc]
    with pytest.raises(TypeError):
        registry.post_processors["x"] = registry.post_processors["none"]  # type: ignore[index]
    with pytest.raises(TypeError):
        registry.spec.categories["x"] = registry.spec.categories["mcq"]  # type: ignore[index]


def test_same_name_twice_names_both_plugins() -> None:
    def rules(register: Callable[[PostProcessRule], None]) -> None:
        register(PostProcessRule("lower", str.upper))

    rogue = plugin("rogue_plugin", evalspec_register_post_processors=rules)
    with pytest.raises(DuplicateNameError) as info:
        build_registry([*builtins(), rogue], entry_points=False)
    assert info.value.owners == ("builtin-post-process", "rogue_plugin")
    assert "builtin-post-process" in str(info.value)
    assert "rogue_plugin" in str(info.value)


def test_undeclared_name_is_an_error() -> None:
    def rules(register: Callable[[PostProcessRule], None]) -> None:
        register(PostProcessRule("shout", str.upper))

    extra = plugin("shouting", evalspec_register_post_processors=rules)
    with pytest.raises(UndeclaredNameError, match="'shout' is implemented by plugin 'shouting'"):
        build_registry([*builtins(), extra], entry_points=False)


def test_declared_but_unimplemented_name_is_an_error() -> None:
    without_metrics = [m for m in builtins() if m.__name__ != "evalspec_plugins.metrics"]
    with pytest.raises(RegistryProblems) as info:
        build_registry(without_metrics, entry_points=False, builtins=False)
    problems = info.value.problems
    assert all(isinstance(p, UnimplementedNameError) for p in problems)
    assert {p.name for p in problems if isinstance(p, UnimplementedNameError)} == {
        "exact_match", "f1", "bleu_4", "rouge_l", "accuracy", "code_exec", "numeric_match",
    }  # fmt: skip


def test_single_unimplemented_name_raises_that_error() -> None:
    def metrics(register: Callable[[Metric], None]) -> None:
        for name in ("exact_match", "f1", "bleu_4", "rouge_l", "accuracy", "numeric_match"):
            register(Metric(name))

    plugins = [m for m in builtins() if m.__name__ != "evalspec_plugins.metrics"]
    partial = plugin("partial_metrics", evalspec_register_metrics=metrics)
    with pytest.raises(UnimplementedNameError, match="'code_exec' is declared by spec version 1"):
        build_registry([*plugins, partial], entry_points=False, builtins=False)


def test_plugin_exception_is_attributed_to_the_plugin() -> None:
    def broken(register: Callable[[Category], None]) -> None:
        raise ZeroDivisionError("oops")

    bad = plugin("broken_plugin", evalspec_register_categories=broken)
    with pytest.raises(PluginError, match=r"broken_plugin.*ZeroDivisionError: oops") as info:
        build_registry([*builtins(), bad], entry_points=False)
    assert info.value.plugin == "broken_plugin"


def test_register_with_a_wrong_type_is_a_plugin_error() -> None:
    def wrong(register: Callable[[Any], None]) -> None:
        register("lower")

    bad = plugin("wrong_type_plugin", evalspec_register_post_processors=wrong)
    with pytest.raises(PluginError, match="expects PostProcessRule, got str"):
        build_registry([*builtins(), bad], entry_points=False)


def test_register_after_the_hook_returned_is_refused() -> None:
    kept: list[Callable[[PostProcessRule], None]] = []

    def keep(register: Callable[[PostProcessRule], None]) -> None:
        kept.append(register)

    build_registry([*builtins(), plugin("keeper", evalspec_register_post_processors=keep)],
                   entry_points=False)  # fmt: skip
    with pytest.raises(RegistryError, match="after its hook returned"):
        kept[0](PostProcessRule("late", str.strip))


def test_misspelt_hook_name_is_caught() -> None:
    typo = types.ModuleType("typo_plugin")
    typo.evalspec_register_rules = hookimpl(lambda register: None)  # type: ignore[attr-defined]
    with pytest.raises(PluginError, match="typo_plugin"):
        build_registry([*builtins(), typo], entry_points=False)


def test_a_plugin_extends_the_vocabulary_through_a_migration() -> None:
    v3 = Migration(
        version=3,
        parent=2,
        message="add translation",
        operations=(
            AddMetric("chrf"),
            AddPostProcess("collapse_whitespace"),
            AddCategory("translation", ("chrf",), ("collapse_whitespace",), ("t.jsonl",)),
        ),
    )

    def migrations(register: Callable[[Migration], None]) -> None:
        register(v3)

    def categories(register: Callable[[Category], None]) -> None:
        register(Category("translation"))

    def metrics(register: Callable[[Metric], None]) -> None:
        register(Metric("chrf"))

    def rules(register: Callable[[PostProcessRule], None]) -> None:
        register(PostProcessRule("collapse_whitespace", lambda s: " ".join(s.split())))

    ext = plugin(
        "translation_plugin",
        evalspec_register_migrations=migrations,
        evalspec_register_categories=categories,
        evalspec_register_metrics=metrics,
        evalspec_register_post_processors=rules,
    )
    reg = build_registry([*builtins(), ext], entry_points=False)
    assert reg.version == reg.head == 3
    assert reg.post_processor("collapse_whitespace")("a \n b") == "a b"
    v2 = reg.at_version(2)
    assert "translation" not in v2.categories
    assert "collapse_whitespace" not in v2.post_processors
    assert v2.spec.added_in_later("category", "translation") == 3
    assert build_registry([*builtins(), ext], entry_points=False, spec_version=2).spec == v2.spec


def test_lookup_of_an_unknown_name_suggests(registry: Registry) -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'exact_match'"):
        registry.metric("exact_mach")
    with pytest.raises(KeyError):
        registry.category("nope")


def test_default_registry_is_cached() -> None:
    assert default_registry() is default_registry()
    assert default_registry(1).version == 1
