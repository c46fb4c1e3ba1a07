"""Where lint meets the large-file manifest: entries whose file is present are datasets.

The manifest itself (format, ``add``, ``verify``, ``fetch``) lives in
:mod:`evalspec.manifest`; this module only asks it which listed files are
present locally. It is looked up at run time so that lint works, with no
manifest entries, where that module is not installed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from evalspec.errors import EvalspecError
from evalspec.evals.gitrepo import toplevel


class ManifestUnreadable(EvalspecError):
    """The layout has a manifest that cannot be read."""


def _module() -> Any:
    try:
        return importlib.import_module("evalspec.manifest")
    except ModuleNotFoundError as exc:
        if exc.name not in ("evalspec.manifest", "evalspec"):
            raise  # the module exists but something it imports does not
        return None


# What ``evalspec manifest`` calls a layout's manifest (its ``DEFAULT_MANIFEST``; a test
# holds the two equal). The files are looked for first: importing the manifest module
# (urllib, http, ssl) costs more than finding none, which is the common case.
DEFAULT_MANIFEST = "datasets/manifest.json"


def manifest_paths(root: Path) -> list[Path]:
    """Where a layout's manifest may be: ``datasets/manifest.json`` of the layout, and of
    the repository root (``evalspec manifest``'s default), existing ones only (none
    where the manifest module is not installed)."""
    candidates = [root / DEFAULT_MANIFEST]
    top = toplevel(root)
    if top is not None:
        candidates.append(top / DEFAULT_MANIFEST)
    found: dict[Path, Path] = {}
    for path in candidates:
        if path.is_file():
            found.setdefault(path.resolve(), path)
    if not found or _module() is None:
        return []
    return list(found.values())


def present_manifest_files(root: Path) -> list[Path]:
    """Files listed by the manifests of the layout at ``root`` that exist locally.

    :raises ManifestUnreadable: a manifest exists but is not a valid manifest.
    """
    paths = manifest_paths(root)
    if not paths:
        return []
    module = _module()
    files: list[Path] = []
    for path in paths:
        try:
            manifest = module.load_manifest(path)
        except module.ManifestError as exc:
            raise ManifestUnreadable(f"{exc} (run `evalspec manifest verify`)") from None
        files.extend(Path(local.path) for local in module.present_entries(manifest))
    return files
