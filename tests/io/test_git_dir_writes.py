"""No write lands in the repository's git directory through a symlinked directory
that stays inside the repository (issue 23, item 6): real git repositories, real
symlinks, the real commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile_helpers import evalspec, git_repo

from evalspec.io.atomicfile import UnsafePathError, resolve_for_write, write_atomic

ROOT = Path(__file__).resolve().parents[2]


def _git_files(repo: Path) -> dict[str, bytes]:
    """Every file of the git directory but evalspec's own lock (taken there on purpose)."""
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted((repo / ".git").rglob("*"))
        if p.is_file() and p.name != "evalspec.lock"
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = git_repo(tmp_path / "repo")
    (repo / "evals").mkdir()
    return repo


@pytest.mark.parametrize(
    ("link", "points_to", "written"),
    [
        ("reports", ".git", "reports/config"),
        ("evals/reports", "../.git", "evals/reports/hooks/post-checkout"),
        ("hooks", ".git/hooks", "hooks/pre-commit"),
    ],
)
def test_a_symlinked_directory_into_dot_git_is_refused(
    repo: Path, link: str, points_to: str, written: str
) -> None:
    (repo / link).symlink_to(points_to)
    before = _git_files(repo)
    with pytest.raises(UnsafePathError, match="git directory"):
        write_atomic(repo / written, "[core]\n\thooksPath = /tmp/x\n", root=repo)
    with pytest.raises(UnsafePathError, match="git directory"):
        resolve_for_write(repo / written, repo)
    assert _git_files(repo) == before


def test_a_path_spelled_into_dot_git_is_refused(repo: Path) -> None:
    with pytest.raises(UnsafePathError, match="git directory"):
        write_atomic(repo / ".git" / "hooks" / "post-merge", "#!/bin/sh\n", root=repo)
    assert not (repo / ".git" / "hooks" / "post-merge").exists()


def test_a_symlinked_directory_elsewhere_in_the_repository_is_still_followed(
    repo: Path,
) -> None:
    (repo / "out").mkdir()
    (repo / "reports").symlink_to("out")
    write_atomic(repo / "reports" / "r.md", "ok\n", root=repo)
    assert (repo / "out" / "r.md").read_text() == "ok\n"


def _score_inputs(repo: Path) -> None:
    lines = (ROOT / "fixtures" / "tasks.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if '"code_exec"' not in line]  # no sandbox needed
    (repo / "evals" / "tasks.jsonl").write_text("".join(kept))
    shutil.copy(ROOT / "fixtures" / "predictions.jsonl", repo / "evals" / "preds.jsonl")


@pytest.mark.parametrize(("link", "points_to"), [("reports", "../.git"), ("reports", "/")])
def test_score_output_through_a_link_into_dot_git_is_one_line_and_exit_2(
    repo: Path, link: str, points_to: str
) -> None:
    _score_inputs(repo)
    if points_to == "/":  # the same link, spelled absolute
        points_to = str(repo / ".git")
    (repo / "evals" / link).symlink_to(points_to)
    before = _git_files(repo)
    done = evalspec(
        repo / "evals",
        "score",
        "tasks.jsonl",
        "preds.jsonl",
        "--format",
        "json",
        "--output",
        "reports/config",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()[-1:]
    assert "git directory" in line and "reports/config" in line
    assert _git_files(repo) == before


def test_gate_markdown_into_dot_git_is_refused(repo: Path) -> None:
    report = {
        "schema": "evalspec/score-report",
        "schema_version": 1,
        "dataset": "main",
        "aggregates": {
            "by_metric": {"exact_match": {"count": 5, "mean": 0.9, "ci95": None}},
            "by_category": {},
            "by_label": {},
        },
    }
    (repo / "evals" / "r.json").write_text(json.dumps(report))
    (repo / "evals" / "gates.yaml").write_text("gates:\n  main:\n    exact_match: 0.5\n")
    (repo / "evals" / "reports").symlink_to("../.git/hooks")
    before = _git_files(repo)
    done = evalspec(
        repo / "evals", "gate", "r.json", "--config", "gates.yaml", "--markdown", "reports/pre-push"
    )
    assert done.returncode == 2 and "git directory" in done.stderr
    assert "Traceback" not in done.stderr
    assert _git_files(repo) == before


def test_manifest_add_does_not_rewrite_a_gitignore_linked_into_dot_git(repo: Path) -> None:
    (repo / "datasets").mkdir()
    data = repo / "datasets" / "a.bin"
    data.write_bytes(b"a\n")
    (repo / ".gitignore").symlink_to(".git/info/exclude")
    before = _git_files(repo)
    done = evalspec(repo, "manifest", "add", str(data), "--uri", "s3://b/a")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "git directory" in done.stderr and "Traceback" not in done.stderr
    assert _git_files(repo) == before
    assert not (repo / "datasets" / "manifest.json").exists()  # refused before it changed
    # Without the link, add records the file and ignores it in .gitignore.
    (repo / ".gitignore").unlink()
    done = evalspec(repo, "manifest", "add", str(data), "--uri", "s3://b/a")
    assert done.returncode == 0, done.stderr
    assert (repo / ".gitignore").read_text() == "/datasets/a.bin\n"
