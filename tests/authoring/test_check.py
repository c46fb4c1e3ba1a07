"""check_project: every problem of a project's spec, from one call."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import example_plugin

from evalspec.authoring.check import check_project, summarize
from evalspec.hookspecs import hookimpl
from evalspec.registry.project import Project
from evalspec.versions import Migration


class MigrationOnly:
    """A plugin that declares a migration but implements nothing."""

    def __init__(self, migration: Migration) -> None:
        self.migration = migration

    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        register(self.migration)


class Broken:
    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        raise RuntimeError("boom")


def test_declared_but_unimplemented_names_are_listed(builtin_plugins: list[object]) -> None:
    report = check_project(
        Project(root=None),
        plugins=[*builtin_plugins, MigrationOnly(example_plugin.V3)],
        entry_points=False,
    )
    found = {p.message for p in report.problems if p.check == "implementation"}
    assert found == {
        "category 'translation' is declared by spec version 3 but no installed plugin "
        "implements it",
        "metric 'chrf' is declared by spec version 3 but no installed plugin implements it",
        "post_process 'collapse_whitespace' is declared by spec version 3 but no installed plugin "
        "implements it",
    }


def test_two_plugins_claiming_one_version_are_both_named(builtin_plugins: list[object]) -> None:
    rival = attrs.evolve(example_plugin.V3, origin="plugin rival")
    report = check_project(
        Project(root=None),
        plugins=[*builtin_plugins, example_plugin, MigrationOnly(rival)],
        entry_points=False,
    )
    assert [p.message for p in report.problems] == [
        "duplicate version 3: from plugin example_plugin and plugin rival; two migrations "
        "cannot share a version"
    ]
    assert not report.chain_ok


def test_a_failing_plugin_is_a_config_problem(builtin_plugins: list[object]) -> None:
    report = check_project(
        Project(root=None), plugins=[*builtin_plugins, Broken()], entry_points=False
    )
    (problem,) = report.problems
    assert problem.check == "config"
    assert "failed in evalspec_register_migrations: RuntimeError: boom" in problem.message


def test_summarize_lists_what_a_migration_adds() -> None:
    assert summarize(example_plugin.V3) == {
        "categories": ["translation"],
        "metrics": ["chrf"],
        "post_processes": ["collapse_whitespace"],
        "fields": [],
        "binds": [],
        "waives": [],
        "deprecates": [],
    }
