"""Shared fixtures and hypothesis profiles.

Profiles: ``ci`` (the default: fast and derandomized, no deadline),
``thorough`` (many examples; ``HYPOTHESIS_PROFILE=thorough pytest``).
"""

from __future__ import annotations

import os

import evalspec_plugins
import example_plugin  # tests/example_plugin: the worked example of a spec migration (v2)
import pytest
from hypothesis import HealthCheck, settings

from evalspec import Registry, build_registry

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def builtin_plugins() -> list[object]:
    """The built-in plugin modules, imported directly (no entry points)."""
    return evalspec_plugins.load()


@pytest.fixture(scope="session")
def registry(builtin_plugins: list[object]) -> Registry:
    """A registry of the built-in plugins only, at the newest spec version."""
    return build_registry(builtin_plugins, entry_points=False)


@pytest.fixture(scope="session")
def example_registry(builtin_plugins: list[object]) -> Registry:
    """The built-ins plus the worked example plugin, at spec version 2.

    Version 2 adds category ``translation``, metric ``chrf`` and post-process
    rule ``collapse_whitespace`` (see ``tests/example_plugin``).
    """
    return build_registry([*builtin_plugins, example_plugin], entry_points=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes ``post_process_rule`` runs once per rule name of every plugin.

    The names come from the built-ins and the worked example, so a property
    test written this way fuzzes ``collapse_whitespace`` with no extra code.
    """
    if "post_process_rule" in metafunc.fixturenames:
        registry = build_registry([*evalspec_plugins.load(), example_plugin], entry_points=False)
        metafunc.parametrize("post_process_rule", sorted(registry.post_processors))
