"""``init``: the layout, never overwriting, and CODEOWNERS from the cards' owners."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evalspec.evals.layout import Layout
from evalspec.evals.lint import lint_layout
from evalspec.evals.scaffold import scaffold


def test_scaffold_creates_the_layout(tmp_path: Path) -> None:
    result = scaffold(tmp_path, "@org/evals")
    for d in ("datasets/", "rubrics/", "scripts/", "config/", "reports/"):
        assert d in result.created
    assert (tmp_path / ".gitignore").read_text() == "reports/\n"
    assert (tmp_path / "CODEOWNERS").read_text().splitlines()[1:] == [
        "/datasets/ @org/evals",
        "/config/ @org/evals",
    ]
    assert lint_layout(Layout(tmp_path), check_git=False).ok


def test_scaffold_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "gates.yaml").write_text("mine\n")
    (tmp_path / ".gitignore").write_text("*.pyc")
    result = scaffold(tmp_path)
    assert "config/gates.yaml" in result.skipped
    assert (tmp_path / "config" / "gates.yaml").read_text() == "mine\n"
    assert result.appended == (".gitignore",)
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\nreports/\n"
    again = scaffold(tmp_path)
    assert again.created == () and again.appended == ()
    assert ".gitignore" in again.skipped and "CODEOWNERS" in again.skipped


def test_codeowners_come_from_existing_cards_and_sit_at_the_git_root(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    evals = tmp_path / "evals"
    (evals / "datasets").mkdir(parents=True)
    (evals / "datasets" / "main.jsonl").write_text("")
    (evals / "datasets" / "main.card.md").write_text(
        '---\nversion: 1\nspec_version: 1\nseed: 1\nsources: [shadow]\nowner: "@qa"\n---\n'
    )
    result = scaffold(evals, "@fallback")
    assert "../CODEOWNERS" in result.created
    text = (tmp_path / "CODEOWNERS").read_text()
    # every card's owner: the new example card's and the existing main card's
    assert "/evals/datasets/ @fallback @qa\n" in text
    assert "/evals/config/ @fallback @qa\n" in text
    assert lint_layout(Layout(evals), check_git=False).datasets[1].problems == []
