"""A data card suppresses lint findings on single tasks, with a reason; a
suppression that suppresses nothing is itself a problem (as ruff's RUF100)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalspec.evals.layout import Layout
from evalspec.evals.lint import RuleSelection, lint_layout
from evalspec.evals.lint.report import statistics
from evalspec.evals.scaffold import scaffold

OWNER = 'owner: "@eval-owner"\n'


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """The scaffold with its first task asked twice more (two duplicate_prompt)."""
    root = tmp_path / "evals"
    scaffold(root)
    path = root / "datasets" / "example.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    extra = [json.dumps({**first, "task_id": f"again_{i}"}) for i in (1, 2)]
    path.write_text(path.read_text() + "\n".join(extra) + "\n")
    return root


def _suppress(root: Path, entries: str) -> None:
    card = root / "datasets" / "example.card.md"
    text = card.read_text()
    assert OWNER in text
    card.write_text(text.replace(OWNER, OWNER + "suppress:\n" + entries, 1))


def test_a_suppressed_finding_is_counted_not_lost(layout: Path) -> None:
    _suppress(layout, "  - {id: again_1, rules: [duplicate_prompt], reason: asked twice}\n")
    report = lint_layout(Layout(layout), check_git=False)
    problems = [(p.error.rule, p.error.task_id) for p in report.problems()]
    assert problems == [("duplicate_prompt", "again_2")]  # the other task still fails
    [suppressed] = report.suppressed()
    assert (suppressed.problem.error.task_id, suppressed.reason) == ("again_1", "asked twice")
    assert statistics(report, suppressed=True) == [("duplicate_prompt", 1)]
    data = report.to_dict()
    assert data["datasets"][0]["suppressed"] == 1 and data["datasets"][0]["problems"] == 1
    assert data["suppressed"][0]["reason"] == "asked twice"
    assert data["suppressed"][0]["rule"] == "duplicate_prompt"


def test_every_task_suppressed_lints_clean_by_word_prefix(layout: Path) -> None:
    _suppress(
        layout,
        "  - {id: again_1, rules: [duplicate], reason: asked twice}\n"
        "  - {id: again_2, rules: [duplicate_prompt], reason: asked thrice}\n",
    )
    report = lint_layout(Layout(layout), check_git=False)
    assert report.ok and len(list(report.suppressed())) == 2


def test_a_suppression_that_matches_nothing_is_reported_at_its_card_line(layout: Path) -> None:
    _suppress(
        layout,
        "  - {id: again_1, rules: [duplicate_prompt, few_shot_leak], reason: asked twice}\n"
        "  - {id: no_such_task, rules: [missing_label], reason: stale}\n"
        "  - {id: again_2, rules: [duplicat_prompt], reason: typo}\n",
    )
    report = lint_layout(Layout(layout), check_git=False)
    found = sorted(
        (p.error.line, p.error.rule, p.error.field or "", p.error.message.split(" (")[0])
        for p in report.problems()
        if p.file.endswith(".card.md")
    )
    assert found == [
        (
            9,
            "unused_suppression",
            "suppress[0]",
            "suppresses few_shot_leak for task 'again_1', which has no such problem: remove "
            "it, so it cannot hide a later one",
        ),
        (
            10,
            "unused_suppression",
            "suppress[1]",
            "suppresses missing_label for task 'no_such_task', which has no such problem: "
            "remove it, so it cannot hide a later one",
        ),
        (11, "card_field", "suppress[2].rules", "unknown rule code 'duplicat_prompt'"),
    ]
    # the typo suppressed nothing: again_2's problem is still reported
    assert ("duplicate_prompt", "again_2") in {
        (p.error.rule, p.error.task_id) for p in report.problems()
    }


def test_a_suppression_is_judged_before_the_rule_selection(layout: Path) -> None:
    # --ignore duplicate_prompt must not make a used suppression look unused
    _suppress(layout, "  - {id: again_1, rules: [duplicate_prompt], reason: asked twice}\n")
    selection = RuleSelection(ignore=("duplicate_prompt",))
    report = lint_layout(Layout(layout), check_git=False, selection=selection)
    assert report.ok and list(report.suppressed()) == []  # not selected: neither shown nor counted


def test_a_suppression_never_hides_a_problem_of_the_card_itself(layout: Path) -> None:
    _suppress(layout, "  - {id: again_1, rules: [owner_not_codeowner], reason: not mine}\n")
    card = layout / "datasets" / "example.card.md"
    card.write_text(card.read_text().replace(OWNER, 'owner: "@someone-else"\n'))
    rules = [p.error.rule for p in lint_layout(Layout(layout), check_git=False).problems()]
    assert "owner_not_codeowner" in rules and "unused_suppression" in rules


def test_a_task_spec_rule_cannot_be_suppressed(layout: Path) -> None:
    path = layout / "datasets" / "example.jsonl"
    lines = path.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["task_id"], bad["colour"] = "again_3", "red"  # unknown_field: the spec rejects it
    path.write_text("\n".join([*lines, json.dumps(bad)]) + "\n")
    _suppress(layout, "  - {id: again_3, rules: [unknown_field], reason: legacy}\n")
    report = lint_layout(Layout(layout), check_git=False)
    found = {(p.error.rule, p.error.field, p.error.task_id) for p in report.problems()}
    assert ("unknown_field", "colour", "again_3") in found  # still reported
    assert ("card_field", "suppress[0].rules", None) in found
    [message] = [p.error.message for p in report.problems() if p.error.rule == "card_field"]
    assert message.startswith("unknown_field is a task-spec rule, which no suppression lifts")
    assert list(report.suppressed()) == []
