"""Manifest sources are an allow-list decided on where the URI reads (issue 23, item 1)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hostile_helpers import evalspec, git_repo

from evalspec.manifest import FetchLimits, fetch
from evalspec.manifest.errors import ManifestError
from evalspec.manifest.sources import resolve_source, source_problem

SECRET = b"top secret outside the repository\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git_repo(tmp_path / "repo")
    (tmp_path / "repo" / "datasets").mkdir()
    return tmp_path / "repo"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_bytes(SECRET)
    return path


def manifest_with(repo: Path, uri: str, size: int, sha256: str) -> Path:
    path = repo / "datasets" / "manifest.json"
    doc = {
        "format": "evalspec.manifest",
        "version": 1,
        "files": [{"path": "datasets/x.txt", "uri": uri, "size": size, "sha256": sha256}],
    }
    path.write_text(json.dumps(doc))
    return path


def spellings(secret: Path) -> list[str]:
    """Every local spelling of the outside file that fsspec would read."""
    return [
        f"file://{secret}",
        f"file://localhost{secret}",
        f"local://{secret}",
        f"LOCAL://{secret}",
        f"simplecache::file://{secret}",
        f"filecache::local://{secret}",
        f"blockcache::simplecache::local://{secret}",
        f"file://{secret.parent}/../outside/secret.txt",
    ]


def test_every_local_spelling_of_an_outside_file_is_refused_before_reading(
    repo: Path, secret: Path
) -> None:
    right = hashlib.sha256(SECRET).hexdigest()
    for uri in spellings(secret):
        manifest_with(repo, uri, len(SECRET), right)
        result = fetch(repo / "datasets" / "manifest.json", root=repo)
        assert [p.code for p in result.problems] == ["source_outside_root"], uri
        assert not (repo / "datasets" / "x.txt").exists(), uri


def test_a_symlink_inside_the_repository_pointing_out_is_judged_by_its_target(
    repo: Path, secret: Path
) -> None:
    (repo / "link.txt").symlink_to(secret)
    assert source_problem(f"local://{repo}/link.txt", repo) is not None
    assert source_problem(f"simplecache::file://{repo}/link.txt", repo) is not None


def test_protocols_off_the_allow_list_are_refused(repo: Path) -> None:
    for uri in [
        "memory://x/y",
        "ftp://host/file",
        "ssh://host/etc/passwd",
        "zip::file:///tmp/a.zip",
        "reference::file:///tmp/a.json",
        "dir::file:///tmp",
        "simplecache://cache/x::s3://b/k",
        "github://org:repo@main/x",
    ]:
        refused = source_problem(uri, repo)
        assert refused is not None and refused[0] == "source_not_allowed", uri
        with pytest.raises(ManifestError):
            resolve_source(uri)


def test_inside_and_remote_sources_are_allowed(repo: Path) -> None:
    (repo / "store").mkdir()
    data = repo / "store" / "d.txt"
    data.write_bytes(b"hello\n")
    for uri in (f"local://{data}", f"simplecache::file://{data}", "s3://bucket/key",
                "simplecache::s3://bucket/key", "https://example.org/x"):  # fmt: skip
        assert source_problem(uri, repo) is None, uri
    manifest_with(repo, f"simplecache::local://{data}", 6, hashlib.sha256(b"hello\n").hexdigest())
    result = fetch(repo / "datasets" / "manifest.json", root=repo)
    assert result.problems == () and (repo / "datasets" / "x.txt").read_bytes() == b"hello\n"


def test_a_mismatched_outside_file_gets_one_message_whatever_its_size(
    repo: Path, secret: Path
) -> None:
    """Allowed outside the root, a wrong guess must not tell bigger from smaller."""
    messages = set()
    for size in (len(SECRET) - 1, len(SECRET), len(SECRET) + 1, 0, 10**6):
        manifest_with(repo, f"local://{secret}", size, "0" * 64)
        result = fetch(
            repo / "datasets" / "manifest.json",
            root=repo,
            limits=FetchLimits(allow_outside_root=True),
        )
        assert [p.code for p in result.problems] == ["source_mismatch"]
        messages.add(result.problems[0].message)
    manifest_with(repo, f"local://{secret}.missing", len(SECRET), "0" * 64)
    missing = fetch(
        repo / "datasets" / "manifest.json", root=repo, limits=FetchLimits(allow_outside_root=True)
    )
    messages.add(missing.problems[0].message.replace(".missing", ""))
    assert len(messages) == 1, messages
    # The size is nowhere in the message (the path is taken out: a temp directory's
    # name such as pytest-344 may hold the same digits).
    assert str(len(SECRET)) not in messages.pop().replace(str(secret), "")


def test_manifest_add_refuses_what_fetch_refuses(repo: Path, secret: Path) -> None:
    data = repo / "datasets" / "big.bin"
    data.write_bytes(b"data\n")
    for uri in (f"local://{secret}", f"simplecache::file://{secret}", "memory://x"):
        done = evalspec(repo, "manifest", "add", str(data), "--uri", uri)
        assert done.returncode != 0, uri
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert not (repo / "datasets" / "manifest.json").exists()
    allowed = evalspec(
        repo, "manifest", "add", str(data), "--uri", f"local://{secret}", "--allow-outside-root"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert os.path.exists(repo / "datasets" / "manifest.json")
