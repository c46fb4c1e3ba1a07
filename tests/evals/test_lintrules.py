"""The lint rule vocabulary is closed and documented in the README."""

from __future__ import annotations

import re
from pathlib import Path

from evalspec.evals.lintrules import LINT_RULES
from evalspec.rules import RULES

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_lists_exactly_the_lint_rules() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Evals as code\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert documented == list(LINT_RULES)


def test_lint_codes_do_not_reuse_validator_codes() -> None:
    assert not set(LINT_RULES) & set(RULES)
