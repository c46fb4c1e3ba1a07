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


# Tests that run programs in the sandbox (time limits, uid slots, cgroups, the
# per-user run directories) run one after another on one xdist worker: two of them
# at once would share those resources and bend each other's wall-clock bounds.
# A scheduler of our own, not xdist_group marks: on pytest 9.2 --dist loadgroup
# silently stops grouping (pytest-dev/pytest-xdist#1386).
_SANDBOX_MODULES = (
    "tests/sandbox/",
    "tests/scoring/test_sandbox_errors.py",
    "tests/scoring/test_score_code_exec.py",
    "tests/cli/test_score_limits.py",
)


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: absent under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class SandboxTestsTogether(LoadScopeScheduling):  # type: ignore[misc]
        """Every test is its own unit of work, but the sandbox tests are one unit."""

        def _split_scope(self, nodeid: str) -> str:
            return "sandbox" if nodeid.startswith(_SANDBOX_MODULES) else nodeid

    return SandboxTestsTogether(config, log)
