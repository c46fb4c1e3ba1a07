"""``evalspec lint`` text output folds repeated problems; --no-group and JSON list each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalspec.cli.dispatch import main
from evalspec.evals.lint.grouping import SHOWN
from evalspec.evals.scaffold import scaffold


def _task(i: int, **metadata: str) -> str:
    task = {
        "task_id": f"t{i:02}",
        "category": "arithmetic",
        "prompt": f"Q: {i} + 1\nA:",
        "targets": [str(i + 1)],
        "metric_name": "exact_match",
        "post_process": "strip_whitespace",
        "metadata": {"source": "constructed", **metadata},
    }
    return json.dumps(task)


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A layout whose 30-task ``suite.jsonl`` lacks the difficulty label on every task."""
    root = tmp_path / "evals"
    scaffold(root)
    datasets = root / "datasets"
    (datasets / "suite.jsonl").write_text("".join(_task(i) + "\n" for i in range(30)))
    card = (datasets / "example.card.md").read_text().replace("dataset: example", "dataset: suite")
    (datasets / "suite.card.md").write_text(card)
    monkeypatch.chdir(root)
    return root


FOLD = re.compile(
    r"^datasets/suite\.jsonl:(\d+): missing_label metadata\.difficulty — (\d+) more like this "
    r"\(lines ([\d, ]+) and (\d+) more\); --no-group prints each$"
)


def test_thirty_alike_problems_print_the_first_few_and_one_fold_line(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", "--no-git", "--quiet"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == SHOWN + 1
    assert all(" — metadata has no 'difficulty' label" in line for line in lines[:SHOWN])
    match = FOLD.match(lines[SHOWN])
    assert match is not None, lines[SHOWN]
    first, more, named, rest = match.groups()
    assert int(first) == SHOWN + 1
    assert SHOWN + int(more) == 30  # shown + folded = total, exactly
    assert [int(n) for n in named.split(", ")] == list(range(SHOWN + 1, SHOWN + 6))
    assert int(rest) == int(more) - 5


def test_no_group_prints_every_problem_and_json_lists_every_one(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", "--no-git", "--quiet", "--no-group"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[1] for line in lines] == [str(n) for n in range(1, 31)]
    assert main(["lint", "--no-git", "--format", "json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p["line"] for p in problems] == list(range(1, 31))


def test_the_summary_counts_every_problem_folded_or_not(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", "--no-git"]) == 1
    out = capsys.readouterr().out
    assert "datasets/suite.jsonl: 30 tasks, version 1," in out and "— 30 problems" in out
    assert out.rstrip().endswith("30 problems in 2 datasets")


def test_the_help_names_how_many_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    assert f"first {SHOWN} problems" in " ".join(capsys.readouterr().out.split())


def test_suppressed_findings_show_in_the_summary_statistics_and_json(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = suite / "datasets" / "suite.card.md"
    entry = "suppress:\n  - {id: t00, rules: [missing_label], reason: labelled upstream}\n"
    card.write_text(card.read_text().replace("---\n\n", entry + "---\n\n", 1))
    assert main(["lint", "--no-git"]) == 1
    out = capsys.readouterr().out
    assert "— 29 problems (1 suppressed)" in out
    assert out.rstrip().endswith("29 problems in 2 datasets, 1 suppressed")
    assert main(["lint", "--no-git", "--statistics"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "29  missing_label",
        " 1  missing_label (suppressed)",
        "29 problems in 2 datasets, 1 suppressed",
    ]
    assert main(["lint", "--no-git", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["problems"]) == 29
    assert [(s["task_id"], s["reason"]) for s in data["suppressed"]] == [
        ("t00", "labelled upstream")
    ]
