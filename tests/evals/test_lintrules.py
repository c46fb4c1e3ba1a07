"""The lint rule vocabulary is closed and documented in docs/codes.md."""

from __future__ import annotations

import re
from pathlib import Path

from evalspec.evals.lintrules import LINT_RULES
from evalspec.rules import RULES

CODES = Path(__file__).resolve().parents[2] / "docs" / "codes.md"


def test_the_docs_table_lists_exactly_the_lint_rules() -> None:
    text = CODES.read_text(encoding="utf-8")
    start = text.index("\n## Lint rules\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert documented == list(LINT_RULES)


def test_lint_codes_do_not_reuse_validator_codes() -> None:
    assert not set(LINT_RULES) & set(RULES)
