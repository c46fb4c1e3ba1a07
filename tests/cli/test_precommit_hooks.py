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

from evalspec.validation.fixtures import fixture_dir

REPO = Path(__file__).resolve().parents[2]
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
        assert re.search(hook["files"], "evals/datasets/tasks.jsonl")
        assert not re.search(hook["files"], "evals/datasets/tasks.json")
    assert re.search(hooks["evalspec-validate"]["files"], "data/tasks.jsonl")
    # lint is given datasets only: a task file outside a layout is not its business.
    assert not re.search(hooks["evalspec-lint"]["files"], "fixtures/tasks.jsonl")


def test_lint_hook_brings_what_the_evals_extra_brings() -> None:
    """pre-commit installs the repository without extras: the hook names PyYAML itself,
    with the evals extra's own requirement (so the two cannot drift apart)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    evals = extras["optional-dependencies"]["evals"]
    assert _hooks()["evalspec-lint"]["additional_dependencies"] == evals
    assert "additional_dependencies" not in _hooks()["evalspec-validate"]


def test_validate_hook_invoked_as_pre_commit_does(repo: Path) -> None:
    hook = _hooks()["evalspec-validate"]
    staged = ["evals/good.jsonl", "notes.txt"]
    assert _invoke(hook, staged, repo).returncode == 0
    result = _invoke(hook, ["evals/bad.jsonl", *staged], repo)
    assert result.returncode == 1
    assert "evals/bad.jsonl:3: not_object" in result.stdout
    assert "notes.txt" not in result.stdout + result.stderr


def _try_repo(hook_id: str, repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo``: pre-commit builds its own environment from this checkout
    (a plain ``pip install .`` plus the hook's additional_dependencies) and runs the hook."""
    # Nothing of this test's environment leaks in: pre-commit's venv is all the hook has.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook_id, "--all-files"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


@pytest.mark.slow
def test_pre_commit_try_repo_runs_the_validate_hook(repo: Path, tmp_path_factory: Any) -> None:
    result = _try_repo("evalspec-validate", repo, tmp_path_factory.mktemp("pre-commit-home"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "evals/bad.jsonl:3: not_object" in result.stdout
    assert "evals/good.jsonl: 10 tasks, 10 valid, 0 invalid" in result.stdout


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.mark.slow
def test_pre_commit_try_repo_runs_the_lint_hook(tmp_path: Path, tmp_path_factory: Any) -> None:
    """The lint hook reads YAML (cards, labels): it must work in pre-commit's environment."""
    _git(tmp_path, "init", "-q")
    init = subprocess.run(
        [sys.executable, "-m", "evalspec", "init", "evals", "--owner", "@org/evals"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert init.returncode == 0, init.stderr
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "evals")
    home = tmp_path_factory.mktemp("pre-commit-home")
    clean = _try_repo("evalspec-lint", tmp_path, home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "PyYAML" not in clean.stdout
    dataset = tmp_path / "evals" / "datasets" / "example.jsonl"
    first = dataset.read_text(encoding="utf-8").splitlines()[0]
    dataset.write_text(first.replace('"metadata"', '"metadatum"') + "\n", encoding="utf-8")
    _git(tmp_path, "add", ".")
    broken = _try_repo("evalspec-lint", tmp_path, home)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "evals/datasets/example.jsonl:1: unknown_field metadatum" in broken.stdout
