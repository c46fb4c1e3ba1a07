"""Another user's ``pyproject.toml`` never decides what code runs (a real second uid).

The nearest ``pyproject.toml`` above a task file governs it, and its
``[tool.evalspec] plugins`` are imported: one planted in a shared directory by
another user would run that user's code as whoever validates a file below it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OTHER = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another uid's file")


def _planted(directory: Path) -> Path:
    directory.mkdir()
    (directory / "pyproject.toml").write_text('[tool.evalspec]\nplugins = ["planted"]\n')
    marker = directory / "RAN"
    (directory / "planted.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    task = json.loads((ROOT / "fixtures" / "tasks.jsonl").read_text().splitlines()[0])
    (directory / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    return marker


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_another_users_pyproject_is_refused_and_its_plugins_never_run(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    marker = _planted(shared)
    for name in ("pyproject.toml", "planted.py"):
        os.chown(shared / name, OTHER, OTHER)
    run = _validate(shared / "tasks.jsonl")
    assert run.returncode == 2
    assert not marker.exists()
    [line] = run.stderr.splitlines()
    assert f"belongs to uid {OTHER}" in line and "pyproject.toml" in line


def test_plugins_are_not_imported_from_a_directory_others_can_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    marker = _planted(shared)
    shared.chmod(0o1777)  # like /tmp: anyone may add the module the project names
    run = _validate(shared / "tasks.jsonl")
    assert run.returncode == 2
    assert not marker.exists()
    [line] = run.stderr.splitlines()
    assert "writable by other users" in line


def test_ones_own_project_still_loads_its_plugins(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    marker = _planted(mine)
    mine.chmod(0o755)
    run = _validate(mine / "tasks.jsonl")
    assert marker.exists(), run.stderr  # the project's plugin was imported
