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


class ManifestUnreadable(EvalspecError):
    """The layout has a manifest that cannot be read."""


def _module() -> Any:
    try:
        return importlib.import_module("evalspec.manifest")
    except ModuleNotFoundError as exc:
        if exc.name not in ("evalspec.manifest", "evalspec"):
            raise  # the module exists but something it imports does not
        return None


def manifest_path(root: Path) -> Path | None:
    """The layout's manifest file (``datasets/manifest.json``), if manifests are supported."""
    module = _module()
    if module is None:
        return None
    return root / str(module.DEFAULT_MANIFEST)


def present_manifest_files(root: Path) -> list[Path]:
    """Files listed by the manifest of the layout at ``root`` that exist locally.

    :raises ManifestUnreadable: the manifest exists but is not a valid manifest.
    """
    module = _module()
    path = manifest_path(root)
    if module is None or path is None or not path.is_file():
        return []
    try:
        manifest = module.load_manifest(path)
    except module.ManifestError as exc:
        raise ManifestUnreadable(f"{exc} (run `evalspec manifest verify`)") from None
    return [Path(local.path) for local in module.present_entries(manifest)]
