"""Shared fixtures and hypothesis profiles.

Profiles: ``quick`` (the default: 20 derandomized examples, no deadline, so the
README's test command stays quick), ``ci`` (60 examples: what ``-m slow`` reruns every
property suite with, in tests/testing/test_property_profiles.py) and ``thorough`` (2000;
``HYPOTHESIS_PROFILE=thorough python -m pytest``).
"""

from __future__ import annotations

import os

import evalspec_plugins
import example_plugin  # tests/example_plugin: the worked example of a spec migration (v2)
import pytest
from hypothesis import HealthCheck, settings

from evalspec import PostProcessRule, Registry, build_registry

pytest_plugins = ["pytester"]

# name: (examples, derandomize)
for _name, (_examples, _fixed) in {
    "quick": (20, True),
    "ci": (60, True),
    "thorough": (2000, False),
}.items():
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,
        derandomize=_fixed,
        suppress_health_check=[HealthCheck.too_slow],
    )
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@pytest.fixture(scope="session")
def builtin_plugins() -> list[object]:
    """The built-in plugin modules, imported directly (no entry points)."""
    return evalspec_plugins.load()


@pytest.fixture(scope="session")
def registry(builtin_plugins: list[object]) -> Registry:
    """A registry of the built-in plugins only, at the newest spec version."""
    return build_registry(builtin_plugins, entry_points=False)


def property_registries() -> list[Registry]:
    """Registries whose rules and metrics the property suites fuzz.

    The installed registry (built-in plus every installed plugin) always; test
    plugins add theirs here, so a rule a plugin adds is fuzzed with no extra
    test code.
    """
    from evalspec import default_registry

    # The worked example (tests/example_plugin) adds rule collapse_whitespace.
    example = build_registry([*evalspec_plugins.load(), example_plugin], entry_points=False)
    return [default_registry(), example]


@pytest.fixture(scope="session")
def all_rules() -> list[PostProcessRule]:
    """Every post-process rule of every registry under test, once per name and owner."""
    seen: dict[tuple[str, int], PostProcessRule] = {}
    for reg in property_registries():
        for rule in reg.post_processors.values():
            seen.setdefault((rule.name, id(rule.function)), rule)
    return list(seen.values())


@pytest.fixture(scope="session")
def example_registry(builtin_plugins: list[object]) -> Registry:
    """The built-ins plus the worked example plugin, at spec version 2.

    Version 2 adds category ``translation``, metric ``chrf`` and post-process
    rule ``collapse_whitespace`` (see ``tests/example_plugin``).
    """
    return build_registry([*builtin_plugins, example_plugin], entry_points=False)
