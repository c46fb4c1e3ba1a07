"""Each lint rule: a layout that breaks it, and the same layout fixed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalspec.evals.layout import Layout
from evalspec.evals.lint import lint_layout, offered_options
from evalspec.evals.lintrules import LINT_RULES
from evalspec.evals.scaffold import scaffold

Edit = Callable[[Path], None]


def _tasks(root: Path) -> list[dict[str, Any]]:
    text = (root / "datasets" / "example.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _write_tasks(root: Path, tasks: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks)
    (root / "datasets" / "example.jsonl").write_text(text, encoding="utf-8")


def _edit_task(i: int, **changes: Any) -> Edit:
    def edit(root: Path) -> None:
        tasks = _tasks(root)
        tasks[i].update(changes)
        _write_tasks(root, tasks)

    return edit


def _append_task(**changes: Any) -> Edit:
    def edit(root: Path) -> None:
        tasks = _tasks(root)
        tasks.append({**tasks[0], **changes})
        _write_tasks(root, tasks)

    return edit


def _card(old: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        path = root / "datasets" / "example.card.md"
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return edit


def _write(rel: str, text: str) -> Edit:
    def edit(root: Path) -> None:
        (root / rel).write_text(text, encoding="utf-8")

    return edit


def _remove(rel: str) -> Edit:
    def edit(root: Path) -> None:
        (root / rel).unlink()

    return edit


def _noop(root: Path) -> None:
    pass


def _both(*edits: Edit) -> Edit:
    def edit(root: Path) -> None:
        for e in edits:
            e(root)

    return edit


LFS = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 12345\n"
)

MCQ = "Pick one.\n(A) red\n(B) blue\nAnswer with the letter only."

# rule -> (an edit of the clean scaffold that breaks the rule, a similar edit that does not)
HUMANEVAL_CHECK = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
CASES: dict[str, tuple[Edit, Edit]] = {
    "lfs_pointer": (_write("datasets/example.jsonl", LFS), _noop),
    "card_missing": (_remove("datasets/example.card.md"), _noop),
    "card_syntax": (_card("---\ndataset", "dataset"), _card("# example", "# Example set")),
    "card_field": (
        _card('owner: "@eval-owner"', "owner: [1, 2]"),
        _card("seed: 20240601", "seed: 7"),
    ),
    "version_missing": (_card("version: 1 ", "release: 1 "), _card("version: 1 ", "version: 2 ")),
    "seed_missing": (_card("seed: 20240601", "rng: 20240601"), _card("seed: 20240601", "seed: 0")),
    "labels_missing": (_remove("config/labels.yaml"), _noop),
    "config_invalid": (
        _write("config/labels.yaml", "labels:\n  difficulty: easy\n"),
        _write(
            "config/labels.yaml", "labels:\n  difficulty: [easy, hard]\nrequired: [difficulty]\n"
        ),
    ),
    "missing_label": (
        _edit_task(0, metadata={"difficulty": "easy"}),
        _edit_task(0, metadata={"difficulty": "easy", "source": "shadow"}),
    ),
    "illegal_label": (
        _edit_task(0, metadata={"difficulty": "medium", "source": "shadow"}),
        _edit_task(0, metadata={"difficulty": "hard", "source": "shadow"}),
    ),
    "conflicting_targets": (
        _append_task(task_id="copy", targets=["42"]),
        _append_task(
            task_id="copy", prompt="Compute the result. Question: 17 + 25\nAnswer:", targets=["42"]
        ),
    ),
    "duplicate_prompt": (
        _append_task(task_id="copy"),
        _append_task(task_id="copy", few_shot_examples=[]),
    ),
    "few_shot_leak": (
        _edit_task(
            1,
            few_shot_examples=[
                {"prompt": "Compute the result.  Question: 17 + 24\nAnswer:", "completion": "41"}
            ],
        ),
        _edit_task(
            1,
            few_shot_examples=[
                {"prompt": "Compute the result. Question: 1 + 1\nAnswer:", "completion": "2"}
            ],
        ),
    ),
    "mcq_option_missing": (
        _edit_task(2, prompt=MCQ, targets=["C"]),
        _edit_task(2, prompt=MCQ, targets=["B"]),
    ),
    "id_collision": (
        _append_task(
            task_id="EXAMPLE_ARITH_001",
            prompt="Question: 1 + 1\nAnswer:",
            targets=["2"],
            few_shot_examples=[],
        ),
        _append_task(
            task_id="example_arith_001b",
            prompt="Question: 1 + 1\nAnswer:",
            targets=["2"],
            few_shot_examples=[],
        ),
    ),
    "id_control_character": (
        _append_task(
            task_id="example_arith_\u0000",
            prompt="Question: 1 + 1\nAnswer:",
            targets=["2"],
            few_shot_examples=[],
        ),
        _append_task(
            task_id="example_arith_\u00e9",
            prompt="Question: 1 + 1\nAnswer:",
            targets=["2"],
            few_shot_examples=[],
        ),
    ),
    "test_never_calls_program": (
        _append_task(
            task_id="example_code_001",
            category="code_exec",
            prompt="Write add(a, b).",
            targets=[HUMANEVAL_CHECK],
            metric_name="code_exec",
            post_process="extract_code_block",
            few_shot_examples=[],
        ),
        _append_task(
            task_id="example_code_001",
            category="code_exec",
            prompt="Write add(a, b).",
            targets=[HUMANEVAL_CHECK + "check(add)\n"],
            metric_name="code_exec",
            post_process="extract_code_block",
            few_shot_examples=[],
        ),
    ),
    "unused_suppression": (
        _card(
            'owner: "@eval-owner"\n',
            'owner: "@eval-owner"\nsuppress:\n  - {id: example_arith_001, rules: '
            "[duplicate_prompt], reason: asked twice}\n",
        ),
        _both(
            _append_task(task_id="example_arith_001_again"),
            _card(
                'owner: "@eval-owner"\n',
                'owner: "@eval-owner"\nsuppress:\n  - {id: example_arith_001_again, rules: '
                "[duplicate_prompt], reason: asked twice}\n",
            ),
        ),
    ),
    "owner_not_codeowner": (
        _card('owner: "@eval-owner"', 'owner: "@someone-else"'),
        _card('owner: "@eval-owner"', 'owner: "@EVAL-OWNER"'),
    ),
}


def _rules(root: Path, **kwargs: Any) -> list[str]:
    report = lint_layout(Layout(root), **kwargs)
    assert not report.io_errors
    return [p.error.rule for p in report.problems()]


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "evals"
    scaffold(root)
    return root


def test_every_lint_rule_has_a_case() -> None:
    assert set(CASES) | {"version_not_bumped"} == set(LINT_RULES)


def test_the_scaffold_lints_clean(layout: Path) -> None:
    report = lint_layout(Layout(layout), check_git=False)
    assert report.ok, [p.to_dict() for p in report.problems()]
    assert report.datasets[0].content_hash is not None
    assert report.datasets[0].tasks == 4


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fails_on_the_broken_layout(layout: Path, rule: str) -> None:
    CASES[rule][0](layout)
    assert rule in _rules(layout, check_git=False)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_passes_on_the_fixed_layout(layout: Path, rule: str) -> None:
    CASES[rule][1](layout)
    assert _rules(layout, check_git=False) == []


def test_lfs_pointer_is_one_problem_not_a_screen_of_json_errors(layout: Path) -> None:
    CASES["lfs_pointer"][0](layout)
    report = lint_layout(Layout(layout), check_git=False)
    problems = [p.error for p in report.problems()]
    assert [p.rule for p in problems] == ["lfs_pointer"]
    assert "git lfs pull" in problems[0].message


def test_validator_rules_are_reported_with_file_and_line(layout: Path) -> None:
    _append_task(task_id="example_arith_001", prompt="other", targets=["1"])(layout)
    _edit_task(0, metric_name="bleu")(layout)
    problems = [p for p in lint_layout(Layout(layout), check_git=False).problems()]
    found = {(p.file.rsplit("/", 1)[-1], p.error.line, p.error.rule) for p in problems}
    assert ("example.jsonl", 1, "unknown_metric") in found
    assert ("example.jsonl", 5, "duplicate_task_id") not in found  # line 1 is invalid now
    assert ("example.jsonl", 5, "id_collision") not in found


def test_validation_uses_the_cards_spec_version(layout: Path) -> None:
    _card("spec_version: 1", "spec_version: 99")(layout)
    problems = [p.error for p in lint_layout(Layout(layout), check_git=False).problems()]
    assert [(p.rule, p.field) for p in problems] == [("card_field", "spec_version")]
    assert "99" in problems[0].message


def test_card_problems_point_at_the_card_line(layout: Path) -> None:
    _card("seed: 20240601", "seed: twelve")(layout)
    [problem] = list(lint_layout(Layout(layout), check_git=False).problems())
    assert problem.file.endswith("example.card.md")
    assert (problem.error.line, problem.error.rule, problem.error.field) == (
        5,
        "card_field",
        "seed",
    )


def test_content_hash_ignores_key_order_and_whitespace(layout: Path) -> None:
    before = lint_layout(Layout(layout), check_git=False).datasets[0].content_hash
    tasks = _tasks(layout)
    text = "".join(
        json.dumps(dict(reversed(t.items())), indent=None, separators=(" , ", " : ")) + "\n\n"
        for t in tasks
    )
    (layout / "datasets" / "example.jsonl").write_text(text, encoding="utf-8")
    after = lint_layout(Layout(layout), check_git=False).datasets[0].content_hash
    assert before == after
    _edit_task(0, targets=["40"])(layout)
    assert lint_layout(Layout(layout), check_git=False).datasets[0].content_hash != before


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _git_repo(root: Path) -> None:
    _git(root, "init", "-q")
    _git(root, "config", "user.name", "Eval Tester")
    _git(root, "config", "user.email", "eval@example.invalid")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "scaffold")


def test_version_not_bumped_fails_without_a_bump(layout: Path) -> None:
    _git_repo(layout)
    _edit_task(0, targets=["40"])(layout)
    problems = [p.error for p in lint_layout(Layout(layout)).problems()]
    assert [p.rule for p in problems] == ["version_not_bumped"]
    assert problems[0].line == 3


def test_version_not_bumped_passes_with_a_bump(layout: Path) -> None:
    _git_repo(layout)
    _edit_task(0, targets=["40"])(layout)
    _card("version: 1 ", "version: 2 ")(layout)
    assert _rules(layout) == []


def test_reformatting_a_dataset_needs_no_bump(layout: Path) -> None:
    _git_repo(layout)
    tasks = _tasks(layout)
    (layout / "datasets" / "example.jsonl").write_text(
        "".join(json.dumps(t, sort_keys=True, indent=None) + "\n" for t in tasks), encoding="utf-8"
    )
    assert _rules(layout) == []


def test_option_letters_are_read_at_line_starts() -> None:
    prompt = "Q?\nA. one\n  B) two\n(C) three\nD.no space is not an option\nanswer E. no"
    assert offered_options(prompt) == ["A", "B", "C"]


def test_semantic_findings_stream_and_keep_their_order(layout: Path) -> None:
    """lint keeps no task, yet a few-shot example leaking a *later* task's prompt is
    found, and the findings of one line come in the order of the checks."""
    tasks = _tasks(layout)
    later = tasks[-1]
    tasks[0]["few_shot_examples"] = [
        {"prompt": "  " + later["prompt"].replace(" ", "   "), "completion": "x"}
    ]
    tasks.append({**tasks[0], "task_id": "Dup"})
    tasks.append({**tasks[0], "task_id": "DUP"})
    _write_tasks(layout, tasks)
    report = lint_layout(Layout(layout), check_git=False)
    assert not report.io_errors
    found = [(p.error.line, p.error.rule) for p in report.problems()]
    n = len(tasks)
    assert found == [
        (1, "few_shot_leak"),
        (n - 1, "duplicate_prompt"),
        (n - 1, "few_shot_leak"),
        (n, "duplicate_prompt"),
        (n, "few_shot_leak"),
        (n, "id_collision"),
    ]
    leak = next(p.error for p in report.problems() if p.error.rule == "few_shot_leak")
    assert f"(line {n - 2})" in leak.message


def test_a_card_a_symlink_sends_out_of_the_repository_is_refused_unread(
    tmp_path: Path,
) -> None:
    # The card's values would be printed back in problems, the labels file's too.
    repo = tmp_path / "repo"
    scaffold(repo / "evals")
    (repo / ".git").mkdir()
    outside = tmp_path / "outside.card.md"
    card = repo / "evals" / "datasets" / "example.card.md"
    outside.write_text(
        card.read_text().replace(
            'owner: "@eval-owner"\n', 'owner: "@eval-owner"\nsuppress: token_abc123\n'
        )
    )
    card.unlink()
    card.symlink_to(outside)
    report = lint_layout(Layout(repo / "evals"), check_git=False)
    [error] = report.io_errors
    assert "example.card.md" in error and "outside the repository" in error
    assert not any("token_abc123" in p.error.message for p in report.problems())
