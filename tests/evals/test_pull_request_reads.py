"""Files that arrive in a pull request and are printed back (a gates config, a labels
file, a committed baseline report, a card, a dataset's working copy) are read inside
the repository they are spelled in: a symlink out of it is refused before a byte is
read, from whatever directory the command runs (issue 23's rule, for gate, diff and
score's label keys)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hostile_helpers import git_repo

from evalspec import command
from evalspec.evals.labels import declared_label_keys
from evalspec.evals.scaffold import scaffold

SECRET = "token_5f1e"


def _outside(tmp_path: Path, name: str, text: str) -> Path:
    secret = tmp_path / "outside" / name
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(text)
    return secret


def _report(mean: float) -> str:
    stat = {"count": 1, "mean": mean, "ci95": None}
    return json.dumps(
        {
            "schema": "evalspec/score-report",
            "schema_version": 3,
            "dataset": f"d{SECRET}",
            "provenance": {"tasks_sha256": {"t.jsonl": "a" * 64}, "spec_version": 2},
            "aggregates": {"by_metric": {"exact_match": stat}, "by_category": {}, "by_label": {}},
            "counts": {"tasks": 1},
        }
    )


@pytest.mark.parametrize("where", ["root", "elsewhere"])
def test_a_gates_config_symlinked_out_of_the_repository_is_refused_unread(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_repo(tmp_path / "repo")
    secret = _outside(tmp_path, "gates.yaml", f"gates:\n  {SECRET}: {{}}\n")
    (root / "gates.yaml").symlink_to(secret)
    (root / "r.json").write_text(_report(0.5))
    monkeypatch.chdir(root if where == "root" else tmp_path)
    found = command.gate([str(root / "r.json")], config=str(root / "gates.yaml"))
    [error] = found.errors
    assert "gates.yaml" in error and "outside the repository" in error
    assert error.count(str(root / "gates.yaml")) == 1, error  # the path is named once
    assert SECRET not in error


def test_a_baseline_report_symlinked_out_of_the_repository_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_repo(tmp_path / "repo")
    (root / "gates.yaml").write_text("gates:\n  d:\n    exact_match: {max_drop: 0.5}\n")
    (root / "r.json").write_text(_report(0.5).replace(SECRET, ""))
    (root / "base.json").symlink_to(_outside(tmp_path, "base.json", _report(0.9)))
    monkeypatch.chdir(tmp_path)  # not the repository: the path's repository still rules
    found = command.gate(
        [str(root / "r.json")], baselines=[str(root / "base.json")], config=str(root / "gates.yaml")
    )
    assert found.errors, found
    assert any("base.json" in e and "outside the repository" in e for e in found.errors)
    assert not any(SECRET in e for e in found.errors)


def test_a_report_symlinked_inside_its_repository_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control: a symlink that stays inside the repository is an ordinary file.
    root = git_repo(tmp_path / "repo")
    (root / "gates.yaml").write_text("gates:\n  d:\n    exact_match: {min: 0.4}\n")
    (root / "reports").mkdir()
    (root / "reports" / "r.json").write_text(_report(0.5).replace(SECRET, ""))
    (root / "r.json").symlink_to(root / "reports" / "r.json")
    monkeypatch.chdir(root)
    found = command.gate(["r.json"], config="gates.yaml")
    assert found.errors == () and found.exit_code == 0, found


def _committed(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text)
    for args in (["add", name], ["commit", "-qm", "add", "--no-verify"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True
        )


def test_diff_refuses_a_working_copy_symlinked_out_of_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_repo(tmp_path / "repo")
    line = '{"task_id": "a", "prompt": "p", "targets": ["t"]}\n'
    _committed(root, "t.jsonl", line)
    secret = _outside(tmp_path, "t.jsonl", line.replace('"t"', f'"{SECRET}"'))
    (root / "t.jsonl").unlink()
    (root / "t.jsonl").symlink_to(secret)
    monkeypatch.chdir(tmp_path)
    found = command.diff([str(root / "t.jsonl")], rev="HEAD..")
    assert found.exit_code == 2 and found.diff is None
    assert found.error is not None and "outside the repository" in found.error
    assert SECRET not in found.error


def test_diff_refuses_a_named_file_its_symlink_sends_out_of_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_repo(tmp_path / "repo")
    line = '{"task_id": "a", "prompt": "p", "targets": ["t"]}\n'
    (root / "old.jsonl").write_text(line)
    (root / "new.jsonl").symlink_to(_outside(tmp_path, "new.jsonl", line.replace("t", SECRET)))
    monkeypatch.chdir(root)
    found = command.diff(["old.jsonl", "new.jsonl"])
    assert found.exit_code == 2 and found.diff is None
    assert found.error is not None and "outside the repository" in found.error
    # Named outside the working directory's repository, the same symlink is read as
    # asked (open_for_reading's rule, as validate and score apply it).
    os.chdir(tmp_path / "outside")
    assert command.diff([str(root / "old.jsonl"), str(root / "new.jsonl")]).exit_code == 0


def test_score_takes_no_label_keys_from_a_labels_file_symlinked_out(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "repo")
    scaffold(root / "evals")
    labels = root / "evals" / "config" / "labels.yaml"
    labels.parent.mkdir(exist_ok=True)
    labels.write_text("labels:\n  difficulty: [easy, hard]\n")
    assert declared_label_keys(root / "evals") == ("difficulty",)
    labels.unlink()
    labels.symlink_to(_outside(tmp_path, "labels.yaml", f"labels:\n  {SECRET}: [a]\n"))
    assert declared_label_keys(root / "evals") is None
