"""Which spec versions a CHANGELOG.md records.

The format ``spec check`` recognises: a line that starts with ``Spec version
N`` (after optional list bullet or heading marks), anywhere in the file::

    ## [Unreleased]
    ### Added
    - Spec version 2: category `translation` (metric `chrf`, rule `collapse_whitespace`).
"""

from __future__ import annotations

import re

SPEC_ENTRY = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+)?Spec version (\d+)\b", re.MULTILINE)
"""A changelog line recording spec version N."""


def spec_versions_in(text: str) -> set[int]:
    """The spec versions a changelog's text has an entry for."""
    return {int(m.group(1)) for m in SPEC_ENTRY.finditer(text)}


def entry_line(version: int, adds: str) -> str:
    """The changelog line ``spec new`` suggests for a version."""
    return f"- Spec version {version}: {adds}"
