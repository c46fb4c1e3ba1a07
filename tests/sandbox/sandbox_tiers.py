"""The isolation tiers this machine offers, for the sandbox test modules."""

from __future__ import annotations

import warnings

from evalspec.sandbox import TIERS, Limits, Sandbox, SandboxUnavailable, WeakIsolationWarning


def sandbox_at(tier: str, limits: Limits | None = None, **options: bool) -> Sandbox:
    """A sandbox at exactly ``tier`` (the warning about rlimits-only as root silenced);
    ``options`` go to :class:`Sandbox` (``trust_custom_types``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakIsolationWarning)
        return Sandbox(limits, tier=tier, **options)


def available_tiers() -> list[str]:
    """Every tier that runs a trivial program here, strongest first."""
    found = []
    for tier in TIERS:
        try:
            sandbox_at(tier)
        except SandboxUnavailable:
            continue
        found.append(tier)
    return found
