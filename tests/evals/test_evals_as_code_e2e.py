"""End to end, through ``python -m evalspec`` in a real git repository.

Scaffold, commit, change a dataset without and with a version bump, and
check that lint, diff --rev and gate behave as a CI pipeline relies on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout


def _tasks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _save(path: Path, tasks: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))


def _report(dataset: str, mean: float, hard: float) -> dict[str, Any]:
    return {
        "schema": "evalspec/score-report",
        "schema_version": 1,
        "dataset": dataset,
        "aggregates": {
            "by_metric": {"exact_match": {"count": 5, "mean": mean, "ci95": [0.1, 0.9]}},
            "by_category": {},
            "by_label": {"difficulty": {"hard": {"count": 2, "mean": hard, "ci95": None}}},
        },
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.name", "Eval Owner")
    _git(tmp_path, "config", "user.email", "owner@example.invalid")
    return tmp_path


# Slow (18 s of CLI runs): the whole walk; each step's rules have quick tests of their
# own (test_lint*.py, test_diff.py, test_gates.py, test_scaffold.py, test_codeowners.py).
@pytest.mark.slow
def test_evals_as_code_pipeline(repo: Path) -> None:
    # 1. init scaffolds the layout in a subdirectory, CODEOWNERS at the repository root
    init = _run(repo, "init", "evals", "--owner", "@org/evals")
    assert init.returncode == 0, init.stderr
    assert "created  datasets/example.jsonl" in init.stdout
    assert "created  ../CODEOWNERS" in init.stdout
    assert "/evals/datasets/ @org/evals" in (repo / "CODEOWNERS").read_text()
    again = _run(repo, "init", "evals")
    assert again.returncode == 0 and "created" not in again.stdout
    assert "skipped  datasets/example.card.md (exists)" in again.stdout

    evals = repo / "evals"
    data = evals / "datasets" / "example.jsonl"
    card = evals / "datasets" / "example.card.md"

    # 2. the scaffold lints clean, and reports/ is ignored by git
    lint = _run(evals, "lint")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "0 problems in 1 dataset" in lint.stdout
    (evals / "reports" / "r.json").write_text("{}")
    _git(repo, "add", "-A")
    status = _git(repo, "status", "--short", "--ignored", "--untracked=all")
    assert "!! evals/reports/r.json" in status
    _git(repo, "commit", "-q", "-m", "Scaffold the eval layout")
    assert "evals/reports" not in _git(repo, "ls-files")

    # 3. change the dataset without bumping the card's version: lint fails
    tasks = _tasks(data)
    tasks[0]["targets"] = ["42"]
    tasks[1]["metadata"]["difficulty"] = "easy"
    tasks.append(
        {
            **tasks[2],
            "task_id": "example_mcq_002",
            "prompt": "Which is a prime?\n(A) 4\n(B) 7\n(C) 9\nAnswer with the letter only.",
            "metadata": {"difficulty": "hard", "source": "dispute"},
        }
    )
    _save(data, tasks)
    lint = _run(evals, "lint")
    assert lint.returncode == 1
    assert "datasets/example.card.md:3: version_not_bumped version" in lint.stdout
    as_json = json.loads(_run(evals, "lint", "--format", "json").stdout)
    assert [p["rule"] for p in as_json["problems"]] == ["version_not_bumped"]
    assert as_json["datasets"][0]["content_hash"].startswith("sha256:")

    # 4. the change report against the last commit
    diff = _run(evals, "diff", "--rev", "HEAD..", "datasets/example.jsonl")
    assert diff.returncode == 0, diff.stderr
    assert "**1 added, 0 removed, 2 changed** (4 → 5 tasks)" in diff.stdout
    assert '- `example_arith_001`: targets: ["41"] → ["42"]' in diff.stdout
    assert 'metadata.difficulty: "hard" → "easy"' in diff.stdout
    assert "Data card version: 1 → 1 ⚠️ not bumped" in diff.stdout

    # 5. bump the version: lint passes; commit
    card.write_text(card.read_text().replace("version: 1 ", "version: 2 ", 1))
    lint = _run(evals, "lint")
    assert lint.returncode == 0, lint.stdout
    _git(repo, "commit", "-q", "-am", "Relabel two tasks, add a disputed case")

    # 6. a removal, committed with a bump, is flagged in the change report between commits
    _save(data, _tasks(data)[1:])
    card.write_text(card.read_text().replace("version: 2 ", "version: 3 ", 1))
    assert _run(evals, "lint").returncode == 0
    _git(repo, "commit", "-q", "-am", "Drop a task")
    diff = _run(
        evals, "diff", "--rev", "HEAD~1..HEAD", "datasets/example.jsonl", "--format", "json"
    )
    report = json.loads(diff.stdout)
    assert report["counts"] == {"added": 0, "removed": 1, "changed": 0}
    assert report["removed"][0]["task_id"] == "example_arith_001"
    assert (report["old_version"], report["new_version"]) == ("2", "3")
    md = _run(evals, "diff", "--rev", "HEAD~2..HEAD", "datasets/example.jsonl")
    assert "1 task(s) removed" in md.stdout
    assert (
        _run(
            evals, "diff", "--rev", "HEAD~1..HEAD", "datasets/example.jsonl", "--fail-on-removal"
        ).returncode
        == 1
    )

    # 7. gates: on a real score report, then pass, fail with every red line, and
    # refuse a config with a typo
    reports = evals / "reports"
    preds = reports / "example.predictions.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"task_id": t["task_id"], "output": t["targets"][0]}) + "\n"
            for t in _tasks(data)
        )
    )
    scored = _run(
        evals,
        "score",
        "datasets/example.jsonl",
        str(preds),
        "--format",
        "json",
        "--output",
        "reports/scored.json",
    )
    assert scored.returncode == 0, scored.stderr
    gate = _run(evals, "gate", "reports/scored.json", "--baseline", "reports/scored.json")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "pass  example[difficulty=hard] score: min: mean 1.0000 >= min 0.2500" in gate.stdout
    (reports / "example.json").write_text(json.dumps(_report("example", 0.80, 0.50)))
    (reports / "base.json").write_text(json.dumps(_report("example", 0.82, 0.50)))
    gate = _run(
        evals,
        "gate",
        "reports/example.json",
        "--baseline",
        "reports/base.json",
        "--markdown",
        "reports/gate.md",
    )
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert gate.stdout.splitlines()[-1] == "3 passed, 0 skipped, 0 failed"
    (reports / "example.json").write_text(json.dumps(_report("example", 0.70, 0.20)))
    gate = _run(
        evals,
        "gate",
        "reports/example.json",
        "--baseline",
        "reports/base.json",
        "--markdown",
        "reports/gate.md",
    )
    assert gate.returncode == 1
    assert (
        "FAIL  example exact_match: max_drop: drop 0.1200 (baseline 0.8200 -> 0.7000) > "
        "max_drop 0.0500" in gate.stdout
    )
    assert "FAIL  example[difficulty=hard] score: min: mean 0.2000 < min 0.2500" in gate.stdout
    assert "**Gate checks: 1 passed, 0 skipped, 2 failed**" in (reports / "gate.md").read_text()
    gates = evals / "config" / "gates.yaml"
    gates.write_text(gates.read_text().replace("exact_match: {min: 0.5", "exact_mach: {min: 0.5"))
    gate = _run(evals, "gate", "reports/example.json")
    assert gate.returncode == 2
    assert "unknown metric 'exact_mach'" in gate.stderr
    gates.write_text("gates:\n  main:\n    exact_match: 0.5\n")
    gate = _run(evals, "gate", "reports/example.json")
    assert gate.returncode == 2 and "unknown dataset 'main'" in gate.stderr

    # 8. review: the card's owner must be a code owner of the dataset's path
    card.write_text(card.read_text().replace('owner: "@org/evals"', 'owner: "@someone"'))
    lint = _run(evals, "lint")
    assert lint.returncode == 1
    assert "owner_not_codeowner owner — card owner @someone is not a code owner" in lint.stdout
    _git(repo, "checkout", "-q", "--", ".")

    # 9. an unmaterialised Git LFS file gives one clear problem
    data.write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 4096\n"
    )
    lint = _run(evals, "lint")
    assert lint.returncode == 1
    assert "datasets/example.jsonl:1: lfs_pointer" in lint.stdout
    problems = json.loads(_run(evals, "lint", "--format", "json").stdout)["problems"]
    assert [p["rule"] for p in problems] == ["lfs_pointer"]
    assert "git lfs pull" in problems[0]["message"]


def test_usage_and_io_errors_exit_2(repo: Path) -> None:
    assert _run(repo, "lint").returncode == 2  # no layout here
    assert _run(repo, "init", "evals").returncode == 0
    evals = repo / "evals"
    missing = _run(evals, "lint", "datasets/nope.jsonl")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert _run(evals, "diff", "--rev", "HEAD", "datasets/example.jsonl").returncode == 2
    bad_rev = _run(evals, "diff", "--rev", "nope..HEAD", "datasets/example.jsonl")
    assert bad_rev.returncode == 2 and "unknown revision" in bad_rev.stderr
    assert _run(evals, "diff", "datasets/example.jsonl").returncode == 2
    assert _run(evals, "gate", "reports/none.json").returncode == 2
    assert _run(evals, "init", "--owner", "not an owner").returncode == 2
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "x")
    bad_base = _run(evals, "lint", "--base", "origin/nope")
    assert bad_base.returncode == 2 and "not a revision" in bad_base.stderr


def test_manifest_entries_present_locally_are_linted(repo: Path) -> None:
    assert _run(repo, "init", "evals").returncode == 0
    evals = repo / "evals"
    (evals / "large").mkdir()
    tasks = _tasks(evals / "datasets" / "example.jsonl")[:2]
    for t in tasks:
        t["task_id"] = t["task_id"].replace("example", "big")
    big = evals / "large" / "big.jsonl"
    _save(big, tasks)
    lint = json.loads(_run(evals, "lint", "--format", "json").stdout)
    assert [d["dataset"] for d in lint["datasets"]] == ["example"]  # not listed yet

    uri = (repo / "store" / "big.jsonl").as_uri()
    added = _run(evals, "manifest", "add", "large/big.jsonl", "--uri", uri)
    assert added.returncode == 0, added.stderr
    lint = json.loads(_run(evals, "lint", "--format", "json").stdout)
    assert [d["dataset"] for d in lint["datasets"]] == ["example", "big"]
    assert [(p["file"], p["rule"]) for p in lint["problems"]] == [
        ("large/big.jsonl", "card_missing")
    ]

    big.unlink()  # listed but not present: manifest verify's business, not lint's
    lint = json.loads(_run(evals, "lint", "--format", "json").stdout)
    assert [d["dataset"] for d in lint["datasets"]] == ["example"]
    assert lint["ok"] is True


def test_three_dot_rev_diffs_from_the_merge_base(repo: Path) -> None:
    assert _run(repo, "init", "evals").returncode == 0
    evals = repo / "evals"
    data = evals / "datasets" / "example.jsonl"
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "scaffold")
    _git(repo, "branch", "-M", "main")
    _git(repo, "checkout", "-q", "-b", "relabel")
    tasks = _tasks(data)
    tasks[0]["targets"] = ["42"]
    _save(data, tasks)
    _git(repo, "commit", "-q", "-am", "relabel on the branch")
    _git(repo, "checkout", "-q", "main")
    tasks = _tasks(data)
    tasks[1]["metadata"]["source"] = "dispute"
    _save(data, tasks)
    _git(repo, "commit", "-q", "-am", "meanwhile on main")
    _git(repo, "checkout", "-q", "relabel")
    three = json.loads(
        _run(
            evals, "diff", "--rev", "main...relabel", "datasets/example.jsonl", "--format", "json"
        ).stdout
    )
    assert [c["task_id"] for c in three["changed"]] == ["example_arith_001"]
    assert three["old"] == "main..."
    two = json.loads(
        _run(
            evals, "diff", "--rev", "main..relabel", "datasets/example.jsonl", "--format", "json"
        ).stdout
    )
    assert [c["task_id"] for c in two["changed"]] == ["example_arith_001", "example_arith_002"]
