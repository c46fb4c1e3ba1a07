"""The worked example, kept as a test: spec version 3 adds category ``translation``.

``tests/example_plugin`` contributes the migration (category ``translation``,
metric ``chrf``, post-process rule ``collapse_whitespace``, one fixture) and
the implementations. The README's "Adding a category" walks through it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import example_plugin
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.authoring.check import SpecReport, check_project
from evalspec.hookspecs import hookimpl
from evalspec.model import Category, Metric, PostProcessRule
from evalspec.registry.build import Registry
from evalspec.registry.project import Project
from evalspec.validation.validator import validate_file
from evalspec.versions import AddCategory, Migration
from evalspec.versions.lock import lock_chain

FIXTURE = example_plugin.FIXTURES / "translation.jsonl"


class Variant:
    """The example plugin with its migration replaced (implementations unchanged)."""

    def __init__(self, migration: Migration) -> None:
        self.migration = migration

    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        register(self.migration)

    @hookimpl
    def evalspec_register_categories(self, register: Callable[[Category], None]) -> None:
        example_plugin.evalspec_register_categories(register)

    @hookimpl
    def evalspec_register_metrics(self, register: Callable[[Metric], None]) -> None:
        example_plugin.evalspec_register_metrics(register)

    @hookimpl
    def evalspec_register_post_processors(
        self, register: Callable[[PostProcessRule], None]
    ) -> None:
        example_plugin.evalspec_register_post_processors(register)


def without(kind: str, name: str) -> Migration:
    """The example's v3 with one entry taken out of the migration."""
    ops = []
    for op in example_plugin.V3.operations:
        if isinstance(op, AddCategory):
            op = AddCategory(
                op.name,
                metrics=[m for m in op.metrics if (kind, m) != ("metric", name)],
                post_processes=[r for r in op.post_processes if (kind, r) != ("rule", name)],
                fixtures=[f for f in op.fixtures if (kind, f) != ("fixture", name)],
                description=op.description,
            )
        elif getattr(op, "name", None) == name:
            continue
        ops.append(op)
    return attrs.evolve(example_plugin.V3, operations=tuple(ops))


def check(
    builtin_plugins: list[object], migration: Migration, lock: Path | None = None
) -> SpecReport:
    project = Project(root=None) if lock is None else Project(root=lock.parent, lock=lock)
    return check_project(
        project, plugins=[*builtin_plugins, Variant(migration)], entry_points=False
    )


def test_v2_validates_the_translation_fixture(example_registry: Registry) -> None:
    assert example_registry.version == 3
    result = validate_file(FIXTURE, registry=example_registry)
    assert result.ok and result.valid == 2


def test_v1_rejects_it_saying_when_translation_was_added(example_registry: Registry) -> None:
    result = validate_file(FIXTURE, registry=example_registry, spec_version=1)
    assert result.invalid == 2
    first = result.errors[0]
    assert first.rule == "unknown_category"
    assert first.message == (
        'category "translation" is not in spec version 1; it was added in spec version 3 '
        "(validate with --spec-version 3)"
    )


def test_the_example_passes_spec_check_and_is_pending(builtin_plugins: list[object]) -> None:
    report = check(builtin_plugins, example_plugin.V3)
    assert report.ok, report.problems
    assert report.released == 2 and report.head == 3
    assert report.notes[0].startswith("spec version 3 (plugin ")


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        (
            "metric",
            "chrf",
            "migration 3 (from plugin {owner}): fixture 'translation.jsonl' line 1 does not "
            "validate under spec version 3: unknown_metric metric_name",
        ),
        (
            "rule",
            "collapse_whitespace",
            "migration 3 (from plugin {owner}): fixture 'translation.jsonl' line 1 does not "
            "validate under spec version 3: unknown_post_process post_process",
        ),
        (
            "fixture",
            "translation.jsonl",
            "migration 3 (from plugin {owner}): category 'translation' is added without a "
            "fixture: list at least one file of its tasks in fixtures=(...)",
        ),
    ],
)
def test_removing_a_piece_is_refused_precisely(
    builtin_plugins: list[object], kind: str, name: str, message: str
) -> None:
    variant = without(kind, name)
    report = check(builtin_plugins, variant)
    assert not report.ok
    owner = report.migrations[-1].origin.removeprefix("plugin ")
    messages = [p.message for p in report.problems]
    assert any(m.startswith(message.format(owner=owner)) for m in messages), messages
    if kind != "fixture":  # the implementation outlives its declaration: also an error
        label = "metric" if kind == "metric" else "post_process"
        assert (
            f"{label} {name!r} is implemented by plugin {owner!r} but no spec version declares it"
        ) in " ".join(messages)


def test_removing_the_metric_and_its_binding_names_the_category(
    builtin_plugins: list[object],
) -> None:
    stripped = without("metric", "chrf")
    ops = tuple(
        attrs.evolve(op, metrics=()) if isinstance(op, AddCategory) else op
        for op in stripped.operations
    )
    report = check(builtin_plugins, attrs.evolve(stripped, operations=ops))
    assert any(
        p.message.endswith(
            "category 'translation' is added without a metric: bind at least one in metrics=(...)"
        )
        for p in report.problems
    )


def test_editing_the_locked_example_is_caught(
    builtin_plugins: list[object], example_registry: Registry, tmp_path: Path
) -> None:
    lock = tmp_path / "evalspec.lock"
    lock.write_text(lock_chain(example_registry.chain, "evalspec.lock").to_json())
    assert check(builtin_plugins, example_plugin.V3, lock).ok
    edited = attrs.evolve(example_plugin.V3, message="Add category translation (reworded)")
    report = check(builtin_plugins, edited, lock)
    (problem,) = report.problems
    assert problem.check == "lock" and problem.version == 3
    assert "spec version 3 (plugin " in problem.message
    assert "was edited after release" in problem.message


def test_the_property_suite_fuzzes_the_example_rule(all_rules: list[PostProcessRule]) -> None:
    """conftest's property_registries include the example, so tests/scoring/test_postprocess.py's
    properties (total, deterministic, across hash seeds, adversarial input) cover it."""
    assert "collapse_whitespace" in {r.name for r in all_rules}


@given(text=st.text())
def test_collapse_whitespace_is_idempotent(text: str) -> None:
    once = example_plugin.collapse_whitespace(text)
    assert example_plugin.collapse_whitespace(once) == once
    assert "  " not in once and once == once.strip()


@given(text=st.text(), targets=st.lists(st.text(), min_size=1, max_size=3))
def test_chrf_is_a_score_in_the_unit_interval(text: str, targets: list[str]) -> None:
    score = example_plugin.chrf(text, targets)
    assert 0.0 <= score <= 1.0
    assert example_plugin.chrf(targets[0], targets) == 1.0
