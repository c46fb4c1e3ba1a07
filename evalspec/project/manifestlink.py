"""Where lint meets the large-file manifest: entries whose file is present are datasets.

The manifest itself (format, ``add``, ``verify``, ``fetch``) lives in
:mod:`evalspec.manifest`. Until that module is installed, no manifest entries
exist as far as lint is concerned.
"""

from __future__ import annotations

import importlib
from pathlib import Path


def present_manifest_files(root: Path) -> list[Path]:
    """Files listed by the manifest of the layout at ``root`` that exist locally."""
    try:
        manifest = importlib.import_module("evalspec.manifest")
    except ModuleNotFoundError:
        return []
    present = manifest.present_files(root)
    return [Path(p) for p in present]
