"""Exceptions of the manifest API (problems *in* a manifest are values, not these)."""

from __future__ import annotations

from evalspec.errors import EvalspecError, MissingDependencyError


class ManifestError(EvalspecError):
    """A manifest operation cannot proceed (bad argument, unreadable manifest, ...)."""


class ManifestFormatError(ManifestError):
    """The manifest file is not readable as an evalspec manifest at all."""


class MissingExtraError(ManifestError, MissingDependencyError):
    """An optional dependency needed for this URI scheme is not installed."""

    def __init__(self, message: str, package: str = "fsspec", extra: str = "manifest") -> None:
        MissingDependencyError.__init__(self, "", package, extra, message=message)
