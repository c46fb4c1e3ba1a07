"""Manifests for large files: format, add, verify, fetch (file:// and a real S3 server).

Everything runs on real files in temporary directories, real git repositories
and, for object stores, moto's S3-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import socket
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.cli.dispatch import main
from evalspec.manifest import (
    PROBLEM_CODES,
    FetchLimits,
    FetchResult,
    Manifest,
    ManifestEntry,
    ManifestError,
    ManifestFormatError,
    ManifestProblem,
    add,
    dumps_manifest,
    fetch,
    load_manifest,
    parse_lfs_pointer,
    parse_manifest,
    present_entries,
    verify,
)
from evalspec.manifest.digest import file_sha256
from evalspec.manifest.gitignore import ensure_ignored, ignore_pattern
from evalspec.manifest.paths import path_syntax_problem

HELLO = b"hello\n"
HELLO_SHA = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
HELLO_CRLF_SHA = "cd2eca3535741f27a8ae40c31b0c41d4057a7a7b912b33b9aed86485d1c84676"
EMPTY_SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
DATA = b"".join(b'{"task_id": "t%d", "prompt": "p"}\n' % i for i in range(2000))
DATA_SHA = hashlib.sha256(DATA).hexdigest()
# The tests' file:// store is outside the repository, which fetch refuses by default.
OUTSIDE = FetchLimits(allow_outside_root=True)


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real, empty git repository with a datasets/ directory."""
    root = tmp_path / "repo"
    root.mkdir()
    assert git(root, "init", "-q").returncode == 0
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "datasets").mkdir()
    return root


@pytest.fixture
def store(repo: Path) -> Path:
    """A directory standing in for remote storage: inside the repository, where
    fetch names what it found (outside, every mismatch gets one message; see
    tests/manifest/test_sources.py)."""
    path = repo / "store"
    path.mkdir()
    return path


def write_manifest(root: Path, files: list[Any]) -> Path:
    path = root / "datasets" / "manifest.json"
    doc = {"format": "evalspec.manifest", "version": 1, "files": files}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def entry(path: str, data: bytes = HELLO, uri: str = "file:///nowhere") -> dict[str, Any]:
    return {"path": path, "uri": uri, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def codes(problems: list[ManifestProblem] | tuple[ManifestProblem, ...]) -> list[str]:
    return [p.code for p in problems]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def leftovers(directory: Path) -> list[str]:
    """Temp files a download left behind."""
    return [p.name for p in directory.iterdir() if p.name.endswith(".evalspec-part")]


# --- hashing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "digest"),
    [(b"hello\n", HELLO_SHA), (b"hello\r\n", HELLO_CRLF_SHA), (b"", EMPTY_SHA)],
)
def test_digest_is_of_raw_bytes_without_newline_normalisation(
    tmp_path: Path, data: bytes, digest: str
) -> None:
    f = tmp_path / "f"
    f.write_bytes(data)
    assert file_sha256(f) == (digest, len(data))


def test_digest_streams_files_larger_than_one_chunk(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    f = tmp_path / "big"
    f.write_bytes(data)
    assert file_sha256(f) == (hashlib.sha256(data).hexdigest(), len(data))


# --- the file format ---------------------------------------------------------------------


def test_format_is_sorted_stable_and_round_trips(repo: Path) -> None:
    m = Manifest(
        path=repo / "datasets" / "manifest.json",
        root=repo,
        entries=(
            ManifestEntry("datasets/z.bin", "s3://b/z", HELLO_SHA, 6),
            ManifestEntry("datasets/a.bin", "file:///a", EMPTY_SHA, 0, extra={"note": "x"}),
        ),
    )
    text = dumps_manifest(m)
    doc = json.loads(text)
    assert list(doc) == ["files", "format", "version"]
    assert doc["format"] == "evalspec.manifest"
    assert doc["version"] == 1
    assert [f["path"] for f in doc["files"]] == ["datasets/a.bin", "datasets/z.bin"]
    assert list(doc["files"][0]) == ["note", "path", "sha256", "size", "uri"]
    assert text.endswith("}\n")
    again = parse_manifest(text, path=m.path, root=repo)
    assert again.entries == m.entries
    assert dumps_manifest(again) == text
    assert again.entries[0].extra == {"note": "x"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json", "not valid JSON"),
        ('{"format": "evalspec.manifest", "version": 1, "files": [], "files": []}', "more than"),
        ('{"version": 1, "files": []}', "not an evalspec manifest"),
        ('{"format": "evalspec.manifest", "version": 2, "files": []}', "newer"),
        ('{"format": "evalspec.manifest", "version": "1", "files": []}', "integer"),
        ('{"format": "evalspec.manifest", "version": 1, "files": {}}', "list"),
        ('[{"path": "x"}]', "not an evalspec manifest"),
    ],
)
def test_unreadable_manifest_is_an_error_not_a_problem(
    repo: Path, text: str, fragment: str
) -> None:
    with pytest.raises(ManifestFormatError, match=fragment):
        parse_manifest(text, path="m.json", root=repo)


def test_cli_reports_a_bad_manifest_in_one_line_with_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "datasets" / "manifest.json").write_text("{oops", encoding="utf-8")
    code, _out, err = cli(capsys, "manifest", "verify", "--root", str(repo))
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "not valid JSON" in err
    assert "Traceback" not in err
    code, _out, err = cli(capsys, "manifest", "verify", "--manifest", str(repo / "nope.json"))
    assert code == 2
    assert "cannot read manifest" in err


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("sha256", HELLO_SHA.upper(), "64 lowercase hex"),
        ("sha256", HELLO_SHA[:63], "64 lowercase hex"),
        ("sha256", 5, "64 lowercase hex"),
        ("size", -1, "non-negative"),
        ("size", True, "non-negative"),
        ("size", "6", "non-negative"),
        ("uri", "datasets/big.bin", "no scheme"),
        ("uri", "s3://b/a b", "whitespace"),
        ("path", 7, "path must be a string"),
    ],
)
def test_malformed_entry_fields_are_invalid_entry(
    repo: Path, field: str, value: Any, fragment: str
) -> None:
    item = entry("datasets/big.bin")
    item[field] = value
    problems = verify(write_manifest(repo, [item]), root=repo)
    assert codes(problems) == ["invalid_entry"]
    assert fragment in problems[0].message


def test_missing_fields_and_non_objects_are_invalid_entry(repo: Path) -> None:
    problems = verify(write_manifest(repo, [{"path": "datasets/x"}, "x"]), root=repo)
    assert codes(problems) == ["invalid_entry", "invalid_entry"]
    assert "uri, sha256, size" in problems[0].message
    assert problems[1].entry == "files[1]"


def test_sha256_prefix_is_accepted_and_written_bare(repo: Path) -> None:
    (repo / "datasets" / "big.bin").write_bytes(HELLO)
    item = entry("datasets/big.bin")
    item["sha256"] = "sha256:" + item["sha256"]
    m = load_manifest(write_manifest(repo, [item]), root=repo)
    assert m.entries[0].sha256 == HELLO_SHA
    assert verify(m) == []
    assert '"sha256:' not in dumps_manifest(m)


# --- path safety (acceptance case 40) ----------------------------------------------------

ESCAPES = [
    "../../etc/passwd",
    "/etc/passwd",
    "C:\\x",
    "C:/x",
    "\\\\server\\share\\x",
    "data\\..\\..\\x",
    "a/./b",
    "a//b",
    "a/b\x00c",
    "a/b\nc",
    "a/\x7f",
    "",
    "datasets/",
    ".",
    "datasets/../../outside.bin",
    ".git/config",
    "sub/.GIT/hooks/post-checkout",
    "x" * 256,
]


@pytest.mark.parametrize("bad", ESCAPES)
def test_escaping_or_malformed_paths_are_refused_by_verify_and_fetch(
    repo: Path, store: Path, bad: str
) -> None:
    (store / "src.bin").write_bytes(HELLO)
    manifest = write_manifest(repo, [entry(bad, uri=(store / "src.bin").as_uri())])
    problems = verify(manifest, root=repo)
    assert codes(problems) in (["path_traversal"], ["invalid_path"])
    before = sorted(p.relative_to(repo.parent) for p in repo.parent.rglob("*"))
    result = fetch(manifest, root=repo, limits=OUTSIDE)
    assert result.fetched == ()
    assert codes(result.problems) == codes(problems)
    after = sorted(p.relative_to(repo.parent) for p in repo.parent.rglob("*"))
    assert after == before  # nothing written anywhere, inside or outside the root


def test_path_problem_line_names_manifest_entry_and_rule(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_manifest(repo, [entry("../../etc/passwd"), entry("a/b\x00c")])
    code, out, _err = cli(capsys, "manifest", "verify", "--manifest", str(manifest))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        f"{manifest}: ../../etc/passwd: path_traversal — "
        "files[0]: path has a '..' component, which leaves its directory"
    )
    assert lines[1].startswith(f'{manifest}: "a/b\\u0000c": invalid_path')
    assert "\x00" not in out


def test_symlink_component_to_outside_is_path_traversal(
    repo: Path, store: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_bytes(HELLO)  # the right bytes, in the wrong place
    (repo / "datasets" / "link").symlink_to(outside, target_is_directory=True)
    (repo / "datasets" / "file_link.bin").symlink_to(outside / "big.bin")
    (store / "src.bin").write_bytes(HELLO)
    uri = (store / "src.bin").as_uri()
    manifest = write_manifest(
        repo,
        [
            entry("datasets/link/big.bin", uri=uri),
            entry("datasets/link/new.bin", uri=uri),
            entry("datasets/file_link.bin", uri=uri),
        ],
    )
    problems = verify(manifest, root=repo)
    assert codes(problems) == ["path_traversal"] * 3
    assert "symlink" in problems[0].message
    result = fetch(manifest, root=repo, force=True, limits=OUTSIDE)
    assert codes(result.problems) == ["path_traversal"] * 3
    assert sorted(p.name for p in outside.iterdir()) == ["big.bin"]
    assert present_entries(manifest, root=repo) == []


def test_symlink_to_hostname_file_is_refused(repo: Path) -> None:
    target = Path("/etc/hostname")
    if not target.exists():
        target = Path("/etc/passwd")
    (repo / "datasets" / "host").symlink_to(target)
    problems = verify(write_manifest(repo, [entry("datasets/host")]), root=repo)
    assert codes(problems) == ["path_traversal"]


def test_symlink_that_stays_inside_the_repository_is_followed(repo: Path) -> None:
    (repo / "data").mkdir()
    (repo / "data" / "big.bin").write_bytes(HELLO)
    (repo / "datasets" / "big.bin").symlink_to(repo / "data" / "big.bin")
    assert verify(write_manifest(repo, [entry("datasets/big.bin")]), root=repo) == []


def test_entries_equal_after_nfc_or_case_folding_are_duplicates(repo: Path) -> None:
    nfc = unicodedata.normalize("NFC", "datasets/café.bin")
    nfd = unicodedata.normalize("NFD", "datasets/café.bin")
    assert nfc != nfd
    manifest = write_manifest(
        repo,
        [entry(nfc), entry(nfd), entry("datasets/A.bin"), entry("datasets/a.bin")],
    )
    problems = [p for p in verify(manifest, root=repo) if p.code != "missing"]
    assert codes(problems) == ["duplicate_path", "duplicate_path"]
    assert "NFC" in problems[0].message
    assert "letter case" in problems[1].message
    # A clashing entry is left out of the usable entries, so fetch never writes it twice.
    m = load_manifest(manifest, root=repo)
    assert [e.path for e in m.entries] == ["datasets/A.bin", nfc]
    assert m.listed == 4


def test_an_exact_repeat_keeps_the_first_entry(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "datasets" / "a.bin").write_bytes(HELLO)
    manifest = write_manifest(repo, [entry("datasets/a.bin"), entry("datasets/a.bin")])
    m = load_manifest(manifest, root=repo)
    assert [e.path for e in m.entries] == ["datasets/a.bin"]
    assert codes(verify(m)) == ["duplicate_path"]
    code, out, _ = cli(capsys, "manifest", "verify", "--manifest", str(manifest))
    assert code == 1
    assert out.splitlines()[-1].endswith("2 entries, 1 ok, 1 problem")


def test_a_file_that_is_also_a_directory_of_another_entry_conflicts(repo: Path) -> None:
    manifest = write_manifest(repo, [entry("datasets/a"), entry("datasets/a/b")])
    problems = [p for p in verify(manifest, root=repo) if p.code != "missing"]
    assert codes(problems) == ["path_conflict"]


@given(
    st.text(
        alphabet=st.sampled_from(["a", "b", ".", "/", "\\", ":", "C", "\x00", "\n", "é", " "]),
        max_size=14,
    )
)
def test_a_path_passing_the_syntax_check_never_leaves_the_root(path: str) -> None:
    if path_syntax_problem(path) is not None:
        return
    joined = os.path.normpath(os.path.join("/root/repo", path))
    assert joined.startswith("/root/repo/")
    assert not any(part in ("", ".", "..") for part in path.split("/"))


def test_every_problem_code_is_documented() -> None:
    assert all(PROBLEM_CODES[code] for code in PROBLEM_CODES)
    with pytest.raises(ValueError, match="must be in"):
        ManifestProblem("m", "e", "no_such_code", "x")


# --- verify ------------------------------------------------------------------------------

LFS_POINTER = (
    b"version https://git-lfs.github.com/spec/v1\n"
    b"oid sha256:" + DATA_SHA.encode() + b"\n"
    b"size %d\n" % len(DATA)
)


def test_verify_reports_each_kind_of_bad_local_copy(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = repo / "datasets"
    (ds / "good.bin").write_bytes(DATA)
    (ds / "corrupt.bin").write_bytes(DATA[:-2] + b"X\n")  # same size, other bytes
    (ds / "short.bin").write_bytes(DATA[:-1])
    (ds / "pointer.bin").write_bytes(LFS_POINTER)
    (ds / "dir.bin").mkdir()
    names = ["good", "corrupt", "short", "pointer", "dir", "missing"]
    manifest = write_manifest(repo, [entry(f"datasets/{n}.bin", DATA) for n in names])
    problems = verify(manifest, root=repo)
    by_entry = {p.entry: p for p in problems}
    assert {k: v.code for k, v in by_entry.items()} == {
        "datasets/corrupt.bin": "hash_mismatch",
        "datasets/short.bin": "size_mismatch",
        "datasets/pointer.bin": "unmaterialized_lfs_pointer",
        "datasets/dir.bin": "not_a_file",
        "datasets/missing.bin": "missing",
    }
    assert "git lfs pull" in by_entry["datasets/pointer.bin"].message
    assert DATA_SHA in by_entry["datasets/corrupt.bin"].message

    code, out, _ = cli(capsys, "manifest", "verify", "--root", str(repo))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 6
    assert all(line.startswith(f"{manifest}: datasets/") for line in lines[:5])
    assert lines[-1].endswith("6 entries, 1 ok, 5 problems")

    code, out, _ = cli(capsys, "manifest", "verify", "--root", str(repo), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["entries"] == 6
    assert doc["ok"] == 1
    assert sorted(p["code"] for p in doc["problems"]) == sorted(
        ["hash_mismatch", "size_mismatch", "unmaterialized_lfs_pointer", "not_a_file", "missing"]
    )


def test_verify_passes_on_intact_copies_with_exit_0(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "datasets" / "a.bin").write_bytes(HELLO)
    (repo / "datasets" / "empty.bin").write_bytes(b"")
    write_manifest(repo, [entry("datasets/a.bin"), entry("datasets/empty.bin", b"")])
    (repo / "datasets" / "sub").mkdir()
    monkeypatch.chdir(repo / "datasets" / "sub")  # the default manifest is found from below
    code, out, _ = cli(capsys, "manifest", "verify")
    assert code == 0
    assert out.strip().endswith("2 entries, 2 ok, 0 problems")


def test_lfs_pointer_parser_follows_the_spec() -> None:
    pointer = parse_lfs_pointer(LFS_POINTER)
    assert pointer is not None
    assert pointer.oid == "sha256:" + DATA_SHA
    assert pointer.size == len(DATA)
    assert parse_lfs_pointer(LFS_POINTER.replace(b"git-lfs.github", b"hawser.github"))
    assert parse_lfs_pointer(b"") is None  # an empty dataset is data, not a pointer
    assert parse_lfs_pointer(LFS_POINTER.replace(b"https", b"http")) is None
    assert parse_lfs_pointer(LFS_POINTER.replace(b"\n", b"\r\n")) is None
    assert parse_lfs_pointer(LFS_POINTER + b"x" * 1024) is None


# --- add and .gitignore -------------------------------------------------------------------


def test_add_records_the_file_and_ignores_it_in_git_idempotently(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitignore").write_text("*.pyc", encoding="utf-8")  # no final newline
    (repo / "datasets" / "big.jsonl").write_bytes(DATA)
    monkeypatch.chdir(repo)
    for _ in range(2):
        code, out, _ = cli(
            capsys, "manifest", "add", "datasets/big.jsonl", "--uri", "s3://bucket/big.jsonl"
        )
        assert code == 0
    assert "updated datasets/big.jsonl" in out
    assert (repo / ".gitignore").read_text(encoding="utf-8") == "*.pyc\n/datasets/big.jsonl\n"
    m = load_manifest(repo / "datasets" / "manifest.json")
    assert m.root == repo
    assert m.entries == (
        ManifestEntry("datasets/big.jsonl", "s3://bucket/big.jsonl", DATA_SHA, len(DATA)),
    )
    assert git(repo, "check-ignore", "-q", "datasets/big.jsonl").returncode == 0
    status = git(repo, "status", "--porcelain", "--untracked-files=all").stdout
    assert "datasets/big.jsonl" not in status
    assert "datasets/manifest.json" in status  # the manifest itself is committed


EVALSPEC = [sys.executable, "-m", "evalspec"]


@pytest.mark.parametrize(
    ("setup", "args", "named"),
    [
        # The manifest's directory cannot be made: a file is in the way.
        ("file:datasets/sub", ["--manifest", "datasets/sub/manifest.json"], "datasets/sub"),
        # .gitignore cannot be rewritten: it is a directory.
        ("dir:.gitignore", [], ".gitignore"),
    ],
)
def test_add_that_cannot_write_exits_2_with_one_line(
    repo: Path, setup: str, args: list[str], named: str
) -> None:
    kind, where = setup.split(":")
    if kind == "file":
        (repo / where).write_text("in the way\n")
    else:
        (repo / where).mkdir()
    (repo / "datasets" / "big.jsonl").write_bytes(DATA)
    done = subprocess.run(
        [*EVALSPEC, "manifest", "add", "datasets/big.jsonl", "--uri", "s3://b/big.jsonl", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("evalspec: error: cannot write ") and named in line, line


def test_ignore_pattern_matches_exactly_one_file_with_glob_characters(repo: Path) -> None:
    weird = "datasets/a[1]*?#!.bin"
    assert ensure_ignored(repo, weird) is True
    assert ensure_ignored(repo, weird) is False
    assert git(repo, "check-ignore", "-q", "--no-index", weird).returncode == 0
    for other in ("datasets/a1x.bin", "datasets/a[1]xx#!.bin", "other/a[1]*?#!.bin"):
        assert git(repo, "check-ignore", "-q", "--no-index", other).returncode == 1
    assert ignore_pattern("d/trailing ") == "/d/trailing\\ "


def test_add_warns_when_git_still_tracks_the_file(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = repo / "datasets" / "big.bin"
    big.write_bytes(HELLO)
    git(repo, "add", "datasets/big.bin")
    git(repo, "commit", "-qm", "oops")
    code, _out, err = cli(
        capsys, "manifest", "add", str(big), "--uri", "s3://b/big.bin", "--root", str(repo)
    )
    assert code == 0
    assert "git rm --cached -- datasets/big.bin" in err


def test_add_refuses_outside_files_lfs_pointers_and_bad_uris(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(HELLO)
    pointer = repo / "datasets" / "pointer.bin"
    pointer.write_bytes(LFS_POINTER)
    (repo / "datasets" / "ok.bin").write_bytes(HELLO)
    cases = [
        ([str(outside), "--uri", "s3://b/x"], "not inside the repository"),
        ([str(pointer), "--uri", "s3://b/x"], "git lfs pull"),
        ([str(repo / "datasets" / "ok.bin"), "--uri", "b/x"], "no scheme"),
        ([str(repo / "datasets" / "nope.bin"), "--uri", "s3://b/x"], "no such file"),
    ]
    for args, fragment in cases:
        code, _out, err = cli(capsys, "manifest", "add", *args, "--root", str(repo))
        assert code == 2
        assert fragment in err
        assert len(err.strip().splitlines()) == 1
    assert not (repo / "datasets" / "manifest.json").exists()
    assert not (repo / ".gitignore").exists()


def test_add_keeps_unknown_keys_and_refuses_a_broken_manifest(repo: Path) -> None:
    (repo / "datasets" / "a.bin").write_bytes(HELLO)
    item = entry("datasets/a.bin", b"old")
    item["owner"] = "eval-team"
    manifest = write_manifest(repo, [item])
    result = add(manifest, repo / "datasets" / "a.bin", "s3://b/a.bin", root=repo)
    assert result.previous is not None
    assert json.loads(manifest.read_text())["files"][0]["owner"] == "eval-team"
    assert verify(manifest, root=repo) == []
    write_manifest(repo, [entry("../x")])
    with pytest.raises(ManifestError, match="fix them first"):
        add(manifest, repo / "datasets" / "a.bin", "s3://b/a.bin", root=repo)


def test_add_refuses_a_path_colliding_by_case(repo: Path) -> None:
    (repo / "datasets" / "a.bin").write_bytes(HELLO)
    (repo / "datasets" / "A.bin").write_bytes(HELLO)
    manifest = repo / "datasets" / "manifest.json"
    add(manifest, repo / "datasets" / "a.bin", "s3://b/a", root=repo, gitignore=False)
    with pytest.raises(ManifestError, match="letter case"):
        add(manifest, repo / "datasets" / "A.bin", "s3://b/A", root=repo, gitignore=False)


# --- fetch over file:// ------------------------------------------------------------------


def test_fetch_brings_missing_files_and_leaves_intact_ones(
    repo: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (store / "big.jsonl").write_bytes(DATA)
    (repo / "datasets" / "here.bin").write_bytes(HELLO)
    write_manifest(
        repo,
        [
            entry("datasets/nested/dir/big.jsonl", DATA, (store / "big.jsonl").as_uri()),
            entry("datasets/here.bin", HELLO, (store / "absent").as_uri()),
        ],
    )
    code, out, _ = cli(capsys, "manifest", "fetch", "--allow-outside-root", "--root", str(repo))
    assert code == 0, out
    target = repo / "datasets" / "nested" / "dir" / "big.jsonl"
    assert target.read_bytes() == DATA
    assert out.splitlines()[-1].endswith("1 fetched, 1 already present, 0 problems")
    assert leftovers(target.parent) == []
    assert verify(repo / "datasets" / "manifest.json", root=repo) == []


def test_fetch_of_corrupted_source_leaves_nothing_at_the_target(
    repo: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (store / "big.jsonl").write_bytes(DATA[:-2] + b"X\n")
    (store / "short.jsonl").write_bytes(DATA[:-1])
    (store / "pointer").write_bytes(LFS_POINTER)
    write_manifest(
        repo,
        [
            entry("datasets/big.jsonl", DATA, (store / "big.jsonl").as_uri()),
            entry("datasets/short.jsonl", DATA, (store / "short.jsonl").as_uri()),
            entry("datasets/pointer.jsonl", DATA, (store / "pointer").as_uri()),
        ],
    )
    code, out, _ = cli(capsys, "manifest", "fetch", "--allow-outside-root", "--root", str(repo))
    assert code == 1
    assert sorted(p.name for p in (repo / "datasets").iterdir()) == ["manifest.json"]
    assert "datasets/big.jsonl: hash_mismatch" in out
    assert "datasets/short.jsonl: size_mismatch" in out
    assert "datasets/pointer.jsonl: unmaterialized_lfs_pointer" in out


def test_fetch_aborts_an_oversized_source(repo: Path, store: Path) -> None:
    (store / "big").write_bytes(DATA + b"more")
    manifest = write_manifest(repo, [entry("datasets/big", DATA, (store / "big").as_uri())])
    result = fetch(manifest, root=repo, limits=OUTSIDE)
    assert codes(result.problems) == ["download_too_large"]
    assert sorted(p.name for p in (repo / "datasets").iterdir()) == ["manifest.json"]


def test_fetch_stops_reading_one_byte_past_the_declared_size(repo: Path, tmp_path: Path) -> None:
    # A FIFO source that would send 8 MiB: the writer sees a broken pipe only if the
    # reader closed early, i.e. the download was cut off instead of read to the end.
    fifo = repo / "fifo"  # inside: outside the repository every mismatch has one code
    os.mkfifo(fifo)
    outcome: list[str] = []

    def writer() -> None:
        try:
            with open(fifo, "wb") as f:
                for _ in range(8 * 16):
                    f.write(b"x" * (1 << 16))
            outcome.append("completed")
        except BrokenPipeError:
            outcome.append("broken pipe")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    manifest = write_manifest(repo, [entry("datasets/big", b"x" * 100, fifo.as_uri())])
    try:
        result = fetch(manifest, root=repo, limits=OUTSIDE)
    finally:
        # Unblock the writer even if fetch never opened the FIFO.
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join()
    assert codes(result.problems) == ["download_too_large"]
    assert outcome == ["broken pipe"]
    assert not (repo / "datasets" / "big").exists()


def test_fetch_replaces_a_mismatching_file_only_with_force_and_verified_bytes(
    repo: Path, store: Path
) -> None:
    target = repo / "datasets" / "big"
    target.write_bytes(b"stale")
    (store / "good").write_bytes(DATA)
    (store / "bad").write_bytes(DATA[:-1] + b"!")
    manifest = write_manifest(repo, [entry("datasets/big", DATA, (store / "bad").as_uri())])

    result = fetch(manifest, root=repo, limits=OUTSIDE)
    assert codes(result.problems) == ["size_mismatch"]
    assert "--force" in result.problems[0].message
    assert target.read_bytes() == b"stale"

    result = fetch(manifest, root=repo, force=True, limits=OUTSIDE)
    assert codes(result.problems) == ["hash_mismatch"]
    assert target.read_bytes() == b"stale"  # a bad download never replaces the file
    assert leftovers(target.parent) == []

    write_manifest(repo, [entry("datasets/big", DATA, (store / "good").as_uri())])
    result = fetch(manifest, root=repo, force=True, limits=OUTSIDE)
    assert [e.path for e in result.fetched] == ["datasets/big"]
    assert target.read_bytes() == DATA


def test_fetch_of_an_unreadable_source_is_an_io_error(
    repo: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_manifest(
        repo,
        [
            entry("datasets/a", HELLO, (store / "absent").as_uri()),
            entry("datasets/b", HELLO, "file://otherhost/x"),
        ],
    )
    code, out, _ = cli(
        capsys, "manifest", "fetch", "--allow-outside-root", "--root", str(repo), "--format", "json"
    )
    assert code == 2
    doc = json.loads(out)
    # A file:// URI naming another host is refused by the allow-list, not read.
    assert [p["code"] for p in doc["problems"]] == ["source_unreadable", "source_not_allowed"]
    assert "remote host" in doc["problems"][1]["message"]
    assert sorted(p.name for p in (repo / "datasets").iterdir()) == ["manifest.json"]


def test_fetch_of_selected_paths_only(
    repo: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (store / "a").write_bytes(HELLO)
    uri = (store / "a").as_uri()
    write_manifest(repo, [entry("datasets/a", HELLO, uri), entry("datasets/b", HELLO, uri)])
    code, _out, _ = cli(
        capsys, "manifest", "fetch", "--allow-outside-root", "--root", str(repo), "datasets/b"
    )
    assert code == 0
    assert sorted(p.name for p in (repo / "datasets").iterdir()) == ["b", "manifest.json"]
    code, _out, err = cli(
        capsys, "manifest", "fetch", "--allow-outside-root", "--root", str(repo), "datasets/zz"
    )
    assert code == 2
    assert "no entry datasets/zz" in err


def test_missing_fsspec_names_the_extra(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if not installed
    write_manifest(repo, [entry("datasets/a", HELLO, "s3://bucket/a")])
    code, out, _ = cli(capsys, "manifest", "fetch", "--allow-outside-root", "--root", str(repo))
    assert code == 2
    assert "pip install 'evalspec-contract[manifest]'" in out
    assert "missing_dependency" in out


def test_unknown_scheme_is_reported_per_entry(repo: Path) -> None:
    manifest = write_manifest(repo, [entry("datasets/a", HELLO, "nosuchproto://x/a")])
    result = fetch(manifest, root=repo, limits=OUTSIDE)
    assert codes(result.problems) == ["source_not_allowed"]


# --- what lint asks ----------------------------------------------------------------------


def test_present_entries_lists_only_local_regular_files_inside_the_root(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "datasets" / "here.jsonl").write_bytes(HELLO)
    (repo / "datasets" / "corrupt.jsonl").write_bytes(b"other")
    (tmp_path / "x").write_bytes(HELLO)
    (repo / "datasets" / "out.jsonl").symlink_to(tmp_path / "x")
    manifest = write_manifest(
        repo,
        [
            entry("datasets/here.jsonl"),
            entry("datasets/corrupt.jsonl"),
            entry("datasets/gone.jsonl"),
            entry("datasets/out.jsonl"),
        ],
    )
    present = present_entries(manifest, root=repo)
    assert [(p.entry.path, p.path) for p in present] == [
        ("datasets/corrupt.jsonl", repo / "datasets" / "corrupt.jsonl"),
        ("datasets/here.jsonl", repo / "datasets" / "here.jsonl"),
    ]


def test_lint_looks_for_the_manifest_where_the_manifest_module_writes_it() -> None:
    from evalspec.evals import manifestlink
    from evalspec.manifest import DEFAULT_MANIFEST

    assert manifestlink.DEFAULT_MANIFEST == DEFAULT_MANIFEST


def test_lint_of_a_layout_without_a_manifest_does_not_import_the_module(tmp_path: Path) -> None:
    """(urllib, http and ssl come with it: more time than linting a small dataset.)"""
    from evalspec.evals.scaffold import scaffold

    scaffold(tmp_path / "evals")
    code = (
        "import sys; from pathlib import Path; from evalspec.evals.layout import Layout; "
        "from evalspec.evals.lint import lint_layout; "
        f"lint_layout(Layout(Path({str(tmp_path / 'evals')!r})), check_git=False); "
        "print('evalspec.manifest' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stdout == b"False\n"


# --- object store: a real S3-compatible server on loopback --------------------------------
# Slow: the AWS stack (moto, boto3, s3fs) is in the test-full extra, not in the quick suite's.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


@pytest.fixture
def bucket(s3_server: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Any:
    """A fresh bucket on the loopback S3 server (a boto3 Bucket)."""
    # boto3 ships no type information; imported by name to keep mypy strict clean.
    boto3 = importlib.import_module("boto3")
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(key, raising=False)
    resource = boto3.resource("s3", endpoint_url=s3_server, region_name="us-east-1")
    name = "evalspec-" + request.node.name.lower().replace("_", "-")[:40].strip("-")
    b = resource.Bucket(name)
    b.create()
    return b


@pytest.mark.slow
def test_fetch_from_s3_through_the_cli_in_a_subprocess(
    repo: Path, s3_server: str, bucket: Any
) -> None:
    bucket.put_object(Key="sets/big.jsonl", Body=DATA)
    bucket.put_object(Key="sets/tampered.jsonl", Body=DATA[:-2] + b"X\n")
    bucket.put_object(Key="sets/huge.jsonl", Body=DATA + DATA)
    s3 = f"s3://{bucket.name}/sets"
    write_manifest(
        repo,
        [
            entry("datasets/big.jsonl", DATA, f"{s3}/big.jsonl"),
            entry("datasets/tampered.jsonl", DATA, f"{s3}/tampered.jsonl"),
            entry("datasets/huge.jsonl", DATA, f"{s3}/huge.jsonl"),
        ],
    )
    env = {**os.environ, **S3_ENV, "EVALSPEC_S3_ENDPOINT_URL": s3_server}
    proc = subprocess.run(
        [sys.executable, "-m", "evalspec", "manifest", "fetch"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (repo / "datasets" / "big.jsonl").read_bytes() == DATA
    assert "datasets/tampered.jsonl: hash_mismatch" in proc.stdout
    assert "datasets/huge.jsonl: download_too_large" in proc.stdout
    assert sorted(p.name for p in (repo / "datasets").iterdir()) == [
        "big.jsonl",
        "manifest.json",
    ]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_fetch_from_s3_with_storage_options_and_missing_keys(
    repo: Path, s3_server: str, bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALSPEC_S3_ENDPOINT_URL", raising=False)
    bucket.put_object(Key="a.bin", Body=HELLO)
    manifest = write_manifest(
        repo,
        [
            entry("datasets/a.bin", HELLO, f"s3://{bucket.name}/a.bin"),
            entry("datasets/gone.bin", HELLO, f"s3://{bucket.name}/gone.bin"),
        ],
    )
    options = {"client_kwargs": {"endpoint_url": s3_server}, "key": "testing", "secret": "x"}
    result = fetch(manifest, root=repo, storage_options=options, limits=OUTSIDE)
    assert isinstance(result, FetchResult)
    assert [e.path for e in result.fetched] == ["datasets/a.bin"]
    assert codes(result.problems) == ["source_unreadable"]
    assert "gone.bin" in result.problems[0].message
    assert (repo / "datasets" / "a.bin").read_bytes() == HELLO
    assert not (repo / "datasets" / "gone.bin").exists()
