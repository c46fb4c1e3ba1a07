"""Locks no other user can plant or remove (issue 23, item 2). Run as root, the
"other user" is uid 65534 owning real files; the adds are real processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hostile_helpers import git_repo

from evalspec.io.atomicfile import LockError, lock_file_for, private_lock_dir, repository_lock

OTHER_UID = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own files as another uid")


def old_predictable_name(root: Path) -> Path:
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"evalspec-{os.getuid()}-{key}.lock"


def test_a_project_outside_git_locks_in_a_private_directory(tmp_path: Path) -> None:
    lock = lock_file_for(tmp_path)
    st = os.lstat(lock.parent)
    assert lock.parent == private_lock_dir()
    assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o700


@as_root
def test_twelve_concurrent_adds_keep_every_entry_despite_a_planted_lock(tmp_path: Path) -> None:
    project = tmp_path / "plain"  # no .git: the lock lives outside the project
    (project / "datasets").mkdir(parents=True)
    planted = old_predictable_name(project)
    planted.write_text("")
    os.chown(planted, OTHER_UID, OTHER_UID)
    try:
        files = []
        for i in range(12):
            f = project / "datasets" / f"f{i}.bin"
            f.write_bytes(b"%d\n" % i)
            files.append(f)
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "evalspec",
                    "manifest",
                    "add",
                    str(f),
                    "--uri",
                    f"s3://bucket/{f.name}",
                    "--root",
                    str(project),
                ],
                cwd=project,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for f in files
        ]
        results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else b"") for p in procs]
        for p in procs:
            for stream in (p.stdout, p.stderr):
                if stream:
                    stream.close()
    finally:
        planted.unlink()
    assert [code for code, _ in results] == [0] * 12, results
    doc = json.loads((project / "datasets" / "manifest.json").read_text())
    assert sorted(e["path"] for e in doc["files"]) == sorted(f"datasets/{f.name}" for f in files)


@as_root
def test_a_lock_file_owned_by_another_user_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git_repo(repo)
    (repo / "datasets").mkdir()
    data = repo / "datasets" / "a.bin"
    data.write_bytes(b"a\n")
    planted = repo / ".git" / "evalspec.lock"
    planted.write_text("")
    os.chown(planted, OTHER_UID, OTHER_UID)
    with pytest.raises(LockError, match="belongs to uid 65534"), repository_lock(repo):
        pytest.fail("ran unlocked")
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "manifest", "add", str(data), "--uri", "s3://b/a"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "65534" in done.stderr
    assert not (repo / "datasets" / "manifest.json").exists()


@as_root
def test_a_lock_directory_planted_by_another_user_is_refused(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    planted = tmp / f"evalspec-{os.geteuid()}"
    planted.mkdir(mode=0o777)
    os.chmod(planted, 0o777)
    os.chown(planted, OTHER_UID, OTHER_UID)
    project = tmp_path / "plain"
    project.mkdir()
    code = (
        "import sys\n"
        "from evalspec.io.atomicfile import repository_lock\n"
        "with repository_lock(sys.argv[1]):\n"
        "    print('ran')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(project)],
        env={**os.environ, "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "ran" not in done.stdout
    assert "owned by uid" in done.stderr and "found uid 65534" in done.stderr
