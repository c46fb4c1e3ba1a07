"""CODEOWNERS matching follows GitHub: last matching pattern wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.project.codeowners import find_codeowners, owners_of, parse_codeowners

TEXT = """\
# comment
*           @everyone
/datasets/  @evals
/datasets/security_cases.jsonl @security @evals
docs/*      @docs
*.md        @writers
/config/    # no owners: anyone may approve
"""


@pytest.mark.parametrize(
    ("path", "owners"),
    [
        ("README", ("@everyone",)),
        ("datasets/main.jsonl", ("@evals",)),
        ("datasets/sub/main.jsonl", ("@evals",)),
        ("datasets/security_cases.jsonl", ("@security", "@evals")),
        ("datasets/main.card.md", ("@writers",)),
        ("docs/a.txt", ("@docs",)),
        ("docs/sub/a.txt", ("@everyone",)),
        ("config/gates.yaml", ()),
        ("evals/datasets/main.jsonl", ("@everyone",)),
    ],
)
def test_last_matching_pattern_wins(path: str, owners: tuple[str, ...]) -> None:
    assert owners_of(parse_codeowners(TEXT), path)[0] == owners


def test_directory_pattern_without_inner_slash_matches_anywhere() -> None:
    # GitHub's example: "apps/ @octocat" owns any file in an apps directory anywhere.
    rules = parse_codeowners("datasets/ @evals\n")
    assert owners_of(rules, "evals/datasets/x.jsonl")[0] == ("@evals",)
    assert owners_of(rules, "datasets")[0] == ()  # a file named like the directory
    rules = parse_codeowners("/datasets/ @evals\n")
    assert owners_of(rules, "evals/datasets/x.jsonl")[0] == ()
    rules = parse_codeowners("evals/datasets @evals\n")  # inner slash: anchored at the root
    assert owners_of(rules, "evals/datasets/x.jsonl")[0] == ("@evals",)
    assert owners_of(rules, "x/evals/datasets/x.jsonl")[0] == ()
    rules = parse_codeowners("**/logs @ops\n")
    assert owners_of(rules, "a/b/logs/x")[0] == ("@ops",)


def test_github_location_order(tmp_path: Path) -> None:
    assert find_codeowners(tmp_path) is None
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "CODEOWNERS").write_text("* @a\n")
    assert find_codeowners(tmp_path) == tmp_path / "docs" / "CODEOWNERS"
    (tmp_path / "CODEOWNERS").write_text("* @b\n")
    assert find_codeowners(tmp_path) == tmp_path / "CODEOWNERS"
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "CODEOWNERS").write_text("* @c\n")
    assert find_codeowners(tmp_path) == tmp_path / ".github" / "CODEOWNERS"
