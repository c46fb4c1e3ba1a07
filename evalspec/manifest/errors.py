"""Exceptions of the manifest API (problems *in* a manifest are values, not these)."""

from __future__ import annotations

from evalspec.errors import EvalspecError


class ManifestError(EvalspecError):
    """A manifest operation cannot proceed (bad argument, unreadable manifest, ...)."""


class ManifestFormatError(ManifestError):
    """The manifest file is not readable as an evalspec manifest at all."""


class MissingExtraError(ManifestError):
    """An optional dependency needed for this URI scheme is not installed."""
