"""A mkdocs hook: the reST roles of evalspec's docstrings read as plain code.

The docstrings are written for Sphinx-style readers (``:class:`Migration```,
``:mod:`~evalspec.versions.lock```); mkdocstrings renders the role's name as text
before the code span. This drops the role and, as Sphinx does for ``~``, keeps only
the last component of a dotted name.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|mod|data|meth|attr|exc|obj|const):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match[str]) -> str:
    tilde, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_plain, html)
