"""Files are opened once and checked on the descriptor, not checked and then opened
by name (issue 23, item 6): real files, a real process swapping a symlink while
the checks run, and a lock directory planted by a real second user (uid 65534)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_helpers import evalspec

from evalspec.io.repository import NotRegularFileError, OutsideRootError, open_inside
from evalspec.manifest.add import add
from evalspec.manifest.check import verify
from evalspec.manifest.errors import ManifestError

OTHER_UID = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own files as another uid")
SECRET = b"outside secret: 123456789\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "datasets").mkdir(parents=True)
    (root / ".git").mkdir()  # the repository root, without git's cost
    (tmp_path / "secret.txt").write_bytes(SECRET)
    (root / "datasets" / "inside.bin").write_bytes(b"inside data\n")
    return root


def test_open_inside_reads_a_file_inside_and_refuses_what_leads_out(repo: Path) -> None:
    with open_inside(repo / "datasets" / "inside.bin", repo) as f:
        assert f.read() == b"inside data\n"
    link = repo / "datasets" / "out.bin"
    link.symlink_to(repo.parent / "secret.txt")
    with pytest.raises(OutsideRootError, match="outside the repository") as caught:
        open_inside(link, repo)
    assert "secret" not in str(caught.value)  # nothing about where it leads
    (repo / "datasets" / "in.bin").symlink_to("inside.bin")  # stays inside: followed
    with open_inside(repo / "datasets" / "in.bin", repo) as f:
        assert f.read() == b"inside data\n"


def test_a_named_pipe_or_a_directory_is_refused_without_waiting(repo: Path) -> None:
    fifo = repo / "datasets" / "pipe.bin"
    os.mkfifo(fifo)  # opening it for reading by name would wait for a writer
    with pytest.raises(NotRegularFileError):
        open_inside(fifo, repo)
    with pytest.raises(NotRegularFileError):
        open_inside(repo / "datasets", repo)


_FLIPPER = textwrap.dedent(
    """
    import os, sys, time
    link, inside, outside, stop = sys.argv[1:]
    tmp = link + ".flip"
    while not os.path.exists(stop):
        for target in (inside, outside):
            os.symlink(target, tmp)
            os.replace(tmp, link)  # atomic: the link always exists, pointing one way or the other
    """
)


@pytest.fixture
def flipping(repo: Path) -> Iterator[Path]:
    """``datasets/a.bin``, a symlink a second process keeps swapping between a file
    inside the repository and a secret outside it."""
    link = repo / "datasets" / "a.bin"
    link.symlink_to("inside.bin")
    stop = repo.parent / "stop"
    secret = str(repo.parent / "secret.txt")
    proc = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(link), "inside.bin", secret, str(stop)]
    )
    try:
        yield link
    finally:
        stop.write_text("")
        proc.wait(timeout=60)


def test_manifest_add_and_verify_never_record_or_report_the_swapped_in_secret(
    repo: Path, flipping: Path
) -> None:
    secret_digest = hashlib.sha256(SECRET).hexdigest()
    inside_digest = hashlib.sha256(b"inside data\n").hexdigest()
    manifest = repo / "datasets" / "manifest.json"
    recorded, refused = 0, 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline or not (recorded and refused):
        try:
            add(manifest, flipping, "s3://bucket/a.bin", root=repo, gitignore=False)
            recorded += 1
        except ManifestError as exc:
            assert "secret" not in str(exc) and str(len(SECRET)) not in str(exc)
            refused += 1
        doc = json.loads(manifest.read_text()) if manifest.exists() else {"files": []}
        for e in doc["files"]:
            assert (e["sha256"], e["size"]) == (inside_digest, 12)
        for problem in verify(manifest, root=repo):
            shown = problem.format()
            assert secret_digest not in shown and f"size is {len(SECRET)}" not in shown
        if time.monotonic() > deadline + 60:
            pytest.fail(f"the swap never showed both ways: {recorded} added, {refused} refused")


@as_root
def test_a_lock_directory_planted_by_another_user_is_one_line_naming_it(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    planted = tmp / f"evalspec-{os.geteuid()}"
    planted.mkdir()
    planted.chmod(0o700)  # looks private, but another user owns it and can plant locks
    os.chown(planted, OTHER_UID, OTHER_UID)
    project = tmp_path / "plain"  # not in git: the lock lives in the private directory
    (project / "datasets").mkdir(parents=True)
    data = project / "datasets" / "a.bin"
    data.write_bytes(b"a\n")
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "manifest", "add", str(data), "--uri", "s3://b/a"],
        cwd=project,
        env={**os.environ, "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert str(planted) in line and "found uid 65534" in line
    assert not (project / "datasets" / "manifest.json").exists()
    assert evalspec(project, "--version").returncode == 0  # nothing else was disturbed


def test_score_refuses_a_task_file_that_a_symlink_sends_out_of_the_repository(
    repo: Path,
) -> None:
    secret = repo.parent / "secret.jsonl"
    secret.write_text('{"task_id": "s", "prompt": "TOKEN=hunter2"}\n')
    (repo / "datasets" / "main.jsonl").symlink_to(secret)
    (repo / "preds.jsonl").write_text('{"task_id": "s", "output": "x"}\n')
    os.mkfifo(repo / "datasets" / "pipe.jsonl")  # opened by name, it would wait for a writer
    for name in ("main.jsonl", "pipe.jsonl"):
        done = evalspec(repo, "score", f"datasets/{name}", "preds.jsonl", timeout=60)
        assert done.returncode == 2, done.stdout + done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"evalspec: error: refusing to read datasets/{name}: ")
        assert "hunter2" not in done.stdout + done.stderr
        assert "secret" not in line  # where it leads is not shown
    # A file named outside the repository on purpose is read as asked.
    shown = evalspec(repo, "score", str(secret), "preds.jsonl", timeout=60)
    assert "refusing to read" not in shown.stderr
