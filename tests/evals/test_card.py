"""The data-card parser: declarations read exactly, every problem with its card line."""

from __future__ import annotations

from pathlib import Path

from evalspec.evals.card import card_path, parse_card

GOOD = """---
dataset: main
version: "12"
spec_version: 1
seed: 42
sources: [shadow, dispute]
owner: ["@org/evals", "lead@example.com"]
mix: {shadow: 0.6, dispute: 0.4}
---
Free prose, with --- inside it.
"""


def test_a_good_card_is_read() -> None:
    card, problems = parse_card(GOOD)
    assert problems == []
    assert card is not None
    assert (card.version, card.spec_version, card.seed) == ("12", 1, 42)
    assert card.sources == ("shadow", "dispute")
    assert card.owners == ("@org/evals", "lead@example.com")
    assert card.line_of("seed") == 5
    assert card.extra["mix"] == {"shadow": 0.6, "dispute": 0.4}


def test_no_front_matter_is_one_problem() -> None:
    card, problems = parse_card("# main\n\nversion: 1\n")
    assert card is None
    assert [(p.line, p.rule) for p in problems] == [(1, "card_syntax")]


def test_unclosed_front_matter() -> None:
    _, problems = parse_card("---\nversion: 1\n")
    assert [p.rule for p in problems] == ["card_syntax"]
    assert "never closed" in problems[0].message


def test_yaml_error_points_at_the_card_line() -> None:
    _, problems = parse_card("---\nversion: 1\nseed: [1,\n---\n")
    assert [p.rule for p in problems] == ["card_syntax"]
    assert problems[0].line >= 3


def test_duplicate_key_is_an_error_not_last_wins() -> None:
    _, problems = parse_card("---\nversion: 1\nversion: 2\n---\n")
    assert [(p.line, p.rule) for p in problems] == [(3, "card_syntax")]


def test_every_missing_declaration_is_reported() -> None:
    _, problems = parse_card("---\ndataset: x\n---\n")
    assert sorted((p.rule, p.field) for p in problems) == [
        ("card_field", "owner"),
        ("card_field", "sources"),
        ("card_field", "spec_version"),
        ("seed_missing", "seed"),
        ("version_missing", "version"),
    ]


def test_a_float_version_must_be_quoted() -> None:
    text = GOOD.replace('version: "12"', "version: 1.10")
    _, problems = parse_card(text)
    assert [(p.line, p.rule, p.field) for p in problems] == [(3, "card_field", "version")]
    assert "quote it" in problems[0].message


def test_bad_owner_and_bad_seed() -> None:
    text = GOOD.replace('owner: ["@org/evals", "lead@example.com"]', "owner: eval team")
    text = text.replace("seed: 42", "seed: true")
    _, problems = parse_card(text)
    assert sorted((p.line, p.field) for p in problems) == [(5, "seed"), (7, "owner")]


def test_card_path_is_beside_the_dataset() -> None:
    assert card_path(Path("datasets/main_v12.jsonl")) == Path("datasets/main_v12.card.md")


SUPPRESSING = GOOD.replace(
    "mix:",
    """suppress:
  - id: main_017
    rules: [duplicate_prompt, few_shot]
    reason: "  asked twice on purpose  "
  - {id: main_018, rules: card_field, reason: legacy}
mix:""",
)


def test_suppress_entries_are_read_with_their_lines() -> None:
    card, problems = parse_card(SUPPRESSING)
    assert problems == [] and card is not None
    first, second = card.suppressions
    assert (first.task_id, first.rules, first.reason) == (
        "main_017",
        ("duplicate_prompt", "few_shot"),
        "asked twice on purpose",
    )
    assert (first.line, first.field) == (9, "suppress[0]")
    assert (second.task_id, second.rules, second.line) == ("main_018", ("card_field",), 12)
    assert "suppress" not in card.extra


def test_a_suppression_needs_an_id_rules_and_a_reason() -> None:
    text = GOOD.replace(
        "mix:",
        "suppress:\n  - {id: a, rules: [duplicate_prompt]}\n  - {id: b, rules: [], reason: x}\n"
        "  - {rules: [card], reason: ' ', why: x}\n  - just_an_id\nmix:",
    )
    card, problems = parse_card(text)
    assert card is not None and card.suppressions == ()  # the declarations still hold
    assert card.version == "12"
    assert [(p.line, p.rule, p.field) for p in problems] == [
        (9, "card_field", "suppress[0].reason"),
        (10, "card_field", "suppress[1].rules"),
        (11, "card_field", "suppress[2].why"),
        (11, "card_field", "suppress[2].id"),
        (11, "card_field", "suppress[2].reason"),
        (12, "card_field", "suppress[3]"),
    ]
    _, [problem] = parse_card(GOOD.replace("mix:", "suppress: {id: a}\nmix:"))
    assert (problem.line, problem.field) == (8, "suppress")
    _, [problem] = parse_card(
        GOOD.replace("mix:", "suppress: [{id: a, rules: [x], reason: no}]\nmix:")
    )
    assert problem.message.endswith("; quote it in YAML")  # YAML reads `no` as false
