"""Shared fixtures and hypothesis profiles.

Profiles: ``ci`` (the default: fast and derandomized, no deadline),
``thorough`` (many examples; ``HYPOTHESIS_PROFILE=thorough pytest``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import evalspec_plugins
from evalspec import Registry, build_registry

pytest_plugins = ["pytester"]

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
