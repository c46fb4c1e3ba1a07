"""The pre-commit hooks of .pre-commit-hooks.yaml, run the way pre-commit runs them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalspec.fixtures import fixture_dir

REPO = Path(__file__).resolve().parents[1]
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"


def _hooks() -> dict[str, dict[str, Any]]:
    hooks = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    return {hook["id"]: hook for hook in hooks}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding a good and a bad task file and a file the hook must skip."""
    src = fixture_dir()
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "good.jsonl").write_bytes(src.joinpath("tasks.jsonl").read_bytes())
    (tmp_path / "evals" / "bad.jsonl").write_bytes(src.joinpath("tasks_bad.jsonl").read_bytes())
    (tmp_path / "notes.txt").write_text("not a task file\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    return tmp_path


def _invoke(hook: dict[str, Any], files: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """What pre-commit does: filter the staged files by ``files``, then run entry + args + files."""
    matching = [f for f in files if re.search(hook["files"], f)]
    command = [*shlex.split(hook["entry"]), *hook.get("args", []), *matching]
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


def test_hooks_offer_validate_and_lint_on_jsonl() -> None:
    hooks = _hooks()
    assert set(hooks) == {"evalspec-validate", "evalspec-lint"}
    for hook_id, command in (("evalspec-validate", "validate"), ("evalspec-lint", "lint")):
        hook = hooks[hook_id]
        assert hook["entry"] == f"evalspec {command}"
        assert hook["language"] == "python"
        assert re.search(hook["files"], "data/tasks.jsonl")
        assert not re.search(hook["files"], "data/tasks.json")


def test_validate_hook_invoked_as_pre_commit_does(repo: Path) -> None:
    hook = _hooks()["evalspec-validate"]
    staged = ["evals/good.jsonl", "notes.txt"]
    assert _invoke(hook, staged, repo).returncode == 0
    result = _invoke(hook, ["evals/bad.jsonl", *staged], repo)
    assert result.returncode == 1
    assert "evals/bad.jsonl:3: not_object" in result.stdout
    assert "notes.txt" not in result.stdout + result.stderr


def test_pre_commit_try_repo_runs_the_validate_hook(repo: Path, tmp_path_factory: Any) -> None:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(REPO),
            "evalspec-validate",
            "--all-files",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "evals/bad.jsonl:3: not_object" in result.stdout
    assert "evals/good.jsonl: 10 tasks, 10 valid, 0 invalid" in result.stdout
