"""One vocabulary per kind of problem, and the docs in step with each.

Each layer reports problems from one closed table; the docs list each table's codes in
one place (docs/spec.md, docs/codes.md, docs/score-report.md). Every test here reads
the codes the docs name there and compares them with the table, both ways (the lint
table: tests/evals/test_lintrules.py): a code added to a table without docs, or
documented without existing, fails.
"""

from __future__ import annotations

import re
from pathlib import Path

from evalspec.evals.lintrules import LINT_RULES
from evalspec.manifest.problems import PROBLEM_CODES
from evalspec.rules import RULES
from evalspec.scoring.predictions import PREDICTION_RULES

ROOT = Path(__file__).resolve().parents[1]
SPEC = (ROOT / "docs" / "spec.md").read_text("utf-8")
CODES = (ROOT / "docs" / "codes.md").read_text("utf-8")
CODE = re.compile(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+)`")


def between(text: str, start: str, end: str) -> str:
    begin = text.index(start)
    stop = text.find(end, begin + len(start))
    return text[begin : stop if stop != -1 else len(text)]


def named(text: str) -> set[str]:
    """The backticked codes in ``text``."""
    return set(CODE.findall(text))


def test_the_validator_stages_list_exactly_the_validator_rules() -> None:
    stages = between(SPEC, "1. **parse**", "\n\n")
    # The stage list also names fields and examples in backticks (`field`, `targets`):
    # every rule is listed, and every snake_case code it names is a rule.
    codes = {c for c in named(stages) if "_" in c}
    assert set(RULES) <= named(stages)
    assert codes - set(RULES) <= {"few_shot_examples", "post_process"}


def test_the_manifest_table_lists_exactly_the_manifest_codes() -> None:
    table = between(CODES, "| code | meaning |", "\n\n")
    first_column = [row.split("|")[1] for row in table.splitlines()[2:]]
    assert sorted(c for cell in first_column for c in named(cell)) == sorted(PROBLEM_CODES)


def test_the_prediction_rules_paragraph_lists_exactly_the_prediction_rules() -> None:
    text = (ROOT / "docs" / "score-report.md").read_text("utf-8")
    paragraph = between(text, "## Prediction problem rules\n\n", "\n\n")
    codes = {c for c in named(paragraph) if "_" in c}
    assert codes == {c for c in PREDICTION_RULES if "_" in c}


def test_the_vocabularies_do_not_share_codes_where_one_output_mixes_them() -> None:
    # lint prints validator and lint codes side by side, so they must not collide.
    assert not set(LINT_RULES) & set(RULES)
    # The prediction reader reuses the parse and uniqueness codes of the validator,
    # with the same meaning; its own codes are new.
    assert set(PREDICTION_RULES) & set(RULES) <= {
        "invalid_json",
        "duplicate_key",
        "not_object",
        "missing_field",
        "wrong_type",
        "duplicate_task_id",
    }
