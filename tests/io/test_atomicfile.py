"""Atomic writes, the repository lock and the symlink rule, in real directories and processes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import example_plugin
import pytest
from hostile_helpers import evalspec, git_repo

from evalspec.io.atomicfile import (
    UnsafePathError,
    lock_file_for,
    repository_lock,
    resolve_for_write,
    write_atomic,
)

# -- the module -------------------------------------------------------------------


def test_write_atomic_replaces_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    os.chmod(target, 0o600)
    assert write_atomic(target, "new", root=tmp_path)
    assert target.read_text() == "new"
    assert os.stat(target).st_mode & 0o777 == 0o600  # the replaced file's mode is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_create_only_never_replaces_nor_follows_a_dangling_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "kept").write_text("mine")
    assert not write_atomic(root / "kept", "theirs", root=root, create_only=True)
    assert (root / "kept").read_text() == "mine"
    (root / "link").symlink_to(root / "nowhere")  # dangling, inside
    assert not write_atomic(root / "link", "x", root=root, create_only=True)
    assert not (root / "nowhere").exists()
    assert sorted(p.name for p in root.iterdir()) == ["kept", "link"]


def test_a_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "file").symlink_to(outside / "victim")
    (root / "dir").symlink_to(outside)
    for path in (root / "file", root / "dir" / "x"):
        with pytest.raises(UnsafePathError, match="outside"):
            write_atomic(path, "x", root=root)
    assert list(outside.iterdir()) == []
    # A symlink that stays inside is followed; the link survives the rewrite.
    (root / "real").write_text("a")
    (root / "alias").symlink_to("real")
    write_atomic(root / "alias", "b", root=root)
    assert (root / "alias").is_symlink() and (root / "real").read_text() == "b"
    # A path the caller names outside the root on purpose is written as asked.
    write_atomic(outside / "report.md", "ok", root=root)
    assert (outside / "report.md").read_text() == "ok"
    assert resolve_for_write(outside / "report.md", root) == outside / "report.md"


def test_the_lock_lives_in_git_or_in_the_temp_directory(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    assert lock_file_for(repo) == repo.resolve() / ".git" / "evalspec.lock"
    plain = tmp_path / "plain"
    plain.mkdir()
    with repository_lock(plain):
        pass
    assert list(plain.iterdir()) == []  # no stray file in a project outside git


def test_the_lock_serialises_threads(tmp_path: Path) -> None:
    counter = tmp_path / "n"
    counter.write_text("0")

    def bump() -> None:
        for _ in range(20):
            with repository_lock(tmp_path):
                n = int(counter.read_text())
                write_atomic(counter, str(n + 1), root=tmp_path)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.read_text() == "80"


# -- symlinks through the commands ------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


def test_init_refuses_a_symlinked_config_file(tmp_path: Path, outside: Path) -> None:
    project = tmp_path / "e"
    (project / "config").mkdir(parents=True)
    (project / "config" / "gates.yaml").symlink_to(outside / "gates.yaml")
    done = evalspec(tmp_path, "init", "e")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "gates.yaml" in done.stderr and "outside" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(outside.iterdir()) == []


def test_init_refuses_a_symlinked_directory_and_gitignore(tmp_path: Path, outside: Path) -> None:
    project = tmp_path / "e"
    project.mkdir()
    (project / "config").symlink_to(outside)
    assert evalspec(tmp_path, "init", "e").returncode == 2
    assert list(outside.iterdir()) == []
    (project / "config").unlink()
    victim = outside / "ignore"
    victim.write_text("precious\n")
    (project / ".gitignore").symlink_to(victim)
    done = evalspec(tmp_path, "init", "e")
    assert done.returncode == 2 and ".gitignore" in done.stderr
    assert victim.read_text() == "precious\n"


def test_manifest_add_refuses_a_gitignore_leading_out(tmp_path: Path, outside: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "data.bin").write_bytes(b"x" * 10)
    victim = outside / "ignore"
    victim.write_text("precious\n")
    (repo / ".gitignore").symlink_to(victim)
    done = evalspec(repo, "manifest", "add", "data.bin", "--uri", "s3://b/data.bin")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ".gitignore" in done.stderr and "outside" in done.stderr
    assert victim.read_text() == "precious\n"
    assert not (repo / "datasets" / "manifest.json").exists()  # refused before any write


def test_manifest_add_refuses_a_manifest_leading_out(tmp_path: Path, outside: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "data.bin").write_bytes(b"x")
    (repo / "datasets").symlink_to(outside)
    done = evalspec(repo, "manifest", "add", "data.bin", "--uri", "s3://b/d")
    assert done.returncode == 2, done.stdout + done.stderr
    assert list(outside.iterdir()) == []


def test_reports_are_not_written_through_a_symlinked_directory(
    tmp_path: Path, outside: Path
) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "reports").symlink_to(outside)
    (repo / "tasks.jsonl").write_text("")
    (repo / "preds.jsonl").write_text("")
    done = evalspec(repo, "score", "tasks.jsonl", "preds.jsonl", "--output", "reports/r.json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "outside" in done.stderr and "Traceback" not in done.stderr
    assert list(outside.iterdir()) == []


def test_gate_markdown_is_not_written_through_a_symlink(tmp_path: Path, outside: Path) -> None:
    project = tmp_path / "e"
    assert evalspec(tmp_path, "init", "e").returncode == 0
    victim = outside / "summary.md"
    victim.write_text("precious")
    (project / "summary.md").symlink_to(victim)
    report = {
        "schema": "evalspec/score-report",
        "schema_version": 1,
        "dataset": "example",
        "aggregates": {},
    }
    (project / "r.json").write_text(json.dumps(report))
    done = evalspec(project, "gate", "r.json", "--markdown", "summary.md")
    assert "Traceback" not in done.stderr
    assert victim.read_text() == "precious"


def make_example_project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "suite"\n\n[tool.evalspec]\nplugins = ["example_plugin"]\n'
    )
    (root / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n### Added\n- Spec version 3: category `translation`.\n"
    )
    shutil.copytree(Path(example_plugin.__file__).parent, root / "example_plugin")
    return root


def test_spec_lock_refuses_a_lock_leading_out(tmp_path: Path, outside: Path) -> None:
    project = make_example_project(tmp_path / "suite")
    (project / "evalspec.lock").symlink_to(outside / "evalspec.lock")
    done = evalspec(project, "spec", "lock")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "outside" in done.stderr
    assert list(outside.iterdir()) == []


# -- concurrent writers and readers ------------------------------------------------


def _concurrent_adds(tmp_path: Path, n: int) -> None:
    repo = git_repo(tmp_path / "repo")
    for i in range(n):
        (repo / f"f{i}.bin").write_bytes(f"file {i}\n".encode())
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "evalspec", "manifest", "add", f"f{i}.bin", "--uri",
             f"s3://bucket/f{i}.bin"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(n)
    ]  # fmt: skip
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    manifest = json.loads((repo / "datasets" / "manifest.json").read_text())
    assert sorted(e["path"] for e in manifest["files"]) == sorted(f"f{i}.bin" for i in range(n))
    for e in manifest["files"]:
        data = (repo / e["path"]).read_bytes()
        assert e["sha256"] == hashlib.sha256(data).hexdigest()
    lines = (repo / ".gitignore").read_text().splitlines()
    assert sorted(lines) == sorted(f"/f{i}.bin" for i in range(n))  # each once


def test_concurrent_manifest_adds_keep_every_entry(tmp_path: Path) -> None:
    _concurrent_adds(tmp_path, 4)


@pytest.mark.slow
def test_twenty_concurrent_manifest_adds_keep_twenty_entries(tmp_path: Path) -> None:
    _concurrent_adds(tmp_path, 20)


@pytest.mark.slow
def test_a_reader_never_sees_a_partial_lock_during_repairs(tmp_path: Path) -> None:
    project = make_example_project(tmp_path / "suite")
    assert evalspec(project, "spec", "lock").returncode == 0
    lock = project / "evalspec.lock"
    fixture = project / "example_plugin" / "fixtures" / "translation.jsonl"
    original = fixture.read_text()
    seen: list[str] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                seen.append(lock.read_text())
            except FileNotFoundError:
                seen.append("<missing>")

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for i in range(12):
            fixture.write_text(original.replace("dort", f"dort{i % 2 or ''}"))
            done = evalspec(project, "spec", "lock", "--repair", "3")
            assert done.returncode == 0, done.stderr
    finally:
        stop.set()
        reader.join()
    assert len(seen) > 100
    for text in seen:
        doc = json.loads(text)  # never empty, never half a file
        assert [e["version"] for e in doc["released"]] == [1, 2, 3]


def test_a_failed_write_names_the_target_not_the_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.mkdir()  # os.replace cannot put a file over a directory
    with pytest.raises(OSError) as info:
        write_atomic(target, "{}", root=tmp_path)
    assert info.value.filename == str(target)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(OSError) as info:
        write_atomic(tmp_path / "missing" / "r.json", "{}", root=tmp_path)
    assert info.value.filename == str(tmp_path / "missing" / "r.json")
