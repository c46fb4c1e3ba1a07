"""CODEOWNERS matching follows GitHub: last matching pattern wins."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.evals.codeowners import find_codeowners, owners_of, parse_codeowners
from evalspec.evals.scaffold import scaffold

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


def _regex_oracle(pattern: str) -> re.Pattern[str]:
    """The translation to a regex the matcher replaced (exponential on hostile
    patterns, exact on small ones): the oracle of the property below."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] in "*?":
            out.append("[^/]*" if body[i] == "*" else "[^/]")
            i += 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    if pattern.endswith("/"):
        suffix = "/.*"
    elif body.endswith("*") and not body.endswith("**"):
        suffix = ""
    else:
        suffix = "(?:/.*)?"
    return re.compile(f"^{prefix}{''.join(out)}{suffix}$")


@given(
    st.lists(st.sampled_from(["a", "b", ".", "/", "*", "**", "?", "**/"]), max_size=7),
    st.text(alphabet="ab./", max_size=10),
)
def test_the_matcher_agrees_with_the_glob_regex(parts: list[str], path: str) -> None:
    pattern = "".join(parts) or "a"
    rules = parse_codeowners(f"{pattern} @o")
    want = ("@o",) if _regex_oracle(pattern).match(path) else ()
    assert owners_of(rules, path)[0] == want


def test_a_hostile_pattern_cannot_hang_lint(tmp_path: Path) -> None:
    # "**" 30 times (or "*a" 40 times against a long name) took a backtracking regex
    # hours on the path datasets/example.jsonl: `evalspec lint` never ended.
    scaffold(tmp_path)
    with (tmp_path / "CODEOWNERS").open("a") as f:
        f.write("/" + "**" * 30 + "Z @x\n" + "*a" * 40 + "Z @y\n")
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "lint", "--no-git"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
