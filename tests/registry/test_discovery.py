"""Cached entry-point discovery finds exactly what importlib.metadata finds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from evalspec.io import seal
from evalspec.registry import discovery

GROUP = "evalspec-discovery-test"


def _dist(root: Path, name: str, entries: str) -> Path:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entries}\n")
    return info


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(discovery.NO_CACHE_ENV, raising=False)
    return root


def _names(group: str = GROUP) -> list[tuple[str, str, str | None]]:
    return [
        (ep.name, ep.value, ep.dist.name if ep.dist else None)
        for ep in discovery.entry_points(group)
    ]


def _truth(group: str = GROUP) -> list[tuple[str, str, str | None]]:
    return [
        (ep.name, ep.value, ep.dist.name if ep.dist else None)
        for ep in metadata.entry_points(group=group)
    ]


def test_cached_discovery_follows_installs_edits_and_removals(site: Path, tmp_path: Path) -> None:
    first = _dist(site, "plug_a", "a = json:dumps")
    assert _names() == _truth() == [("a", "json:dumps", "plug_a")]
    cache_files = list((tmp_path / "cache" / "evalspec").iterdir())
    assert len(cache_files) == 1
    assert GROUP in json.loads(_payload(cache_files[0]))["groups"]
    assert _names() == _truth()  # answered from the cache

    _dist(site, "plug_b", "b = os.path:join")
    assert _names() == _truth()
    assert len(_names()) == 2

    (first / "entry_points.txt").write_text(f"[{GROUP}]\nrenamed = json:loads\n")
    assert _names() == _truth()
    assert ("renamed", "json:loads", "plug_a") in _names()

    shutil.rmtree(first)
    assert _names() == _truth() == [("b", "os.path:join", "plug_b")]


def test_cached_entry_points_load_the_named_object(site: Path) -> None:
    _dist(site, "plug_c", "c = os.path:join\nd = json")
    loaded = {ep.name: ep.load() for ep in discovery.entry_points(GROUP)}
    loaded_again = {ep.name: ep.load() for ep in discovery.entry_points(GROUP)}
    assert loaded == loaded_again == {"c": os.path.join, "d": json}


def test_the_evalspec_group_matches_importlib_metadata(site: Path) -> None:
    assert _names("evalspec") == _truth("evalspec")
    assert _names("evalspec") == _truth("evalspec")  # cached
    assert any(name == "builtin-spec" for name, _, _ in _names("evalspec"))


def test_an_unwritable_cache_still_discovers(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    _dist(site, "plug_d", "e = json:dumps")
    assert _names() == _truth()


def test_the_cache_can_be_switched_off(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(discovery.NO_CACHE_ENV, "1")
    _dist(site, "plug_e", "f = json:dumps")
    assert _names() == _truth()
    assert not (site.parent / "cache").exists()


def _at_most_1_gib() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _poison(entry_file: Path, how: str) -> None:
    entry_file.unlink()
    if how == "fifo":
        os.mkfifo(entry_file)  # open() for reading waited for a writer for ever
    elif how == "dev-zero":
        entry_file.symlink_to("/dev/zero")  # json.load read until memory ran out
    elif how == "deep":
        entry_file.write_text("[" * 100_000 + "]" * 100_000)  # a RecursionError traceback
    else:
        entry_file.mkdir()


@pytest.mark.parametrize("how", ["fifo", "dev-zero", "deep", "directory"])
def test_a_hostile_cache_file_is_ignored_by_the_command(tmp_path: Path, how: str) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop(discovery.NO_CACHE_ENV, None)
    command = [sys.executable, "-m", "evalspec", "spec", "list"]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            preexec_fn=_at_most_1_gib,
        )

    first = run()
    assert first.returncode == 0, first.stderr
    (entry_file,) = (tmp_path / "cache" / "evalspec").glob("entry-points-*.json")
    _poison(entry_file, how)
    again = run()
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")


def test_a_cache_file_others_can_write_is_not_believed(site: Path, tmp_path: Path) -> None:
    _dist(site, "plug_f", "g = json:dumps")
    assert _names() == _truth()
    (cache_file,) = (tmp_path / "cache" / "evalspec").iterdir()
    doc = json.loads(_payload(cache_file))
    doc["groups"][GROUP] = [["g", "os:system", ["plug_f", "1.0"]]]  # what a planter would
    cache_file.write_bytes(seal.seal(json.dumps(doc).encode()))
    cache_file.chmod(0o666)
    assert _names() == _truth() == [("g", "json:dumps", "plug_f")]


@pytest.mark.parametrize("sealed", ["unsealed", "another key"])
def test_a_cache_file_without_this_users_seal_is_not_believed(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sealed: str
) -> None:
    """A restored CI cache, or anyone who can write the cache directory: the file is
    this user's and private, but not sealed under this user's key."""
    _dist(site, "plug_h", "g = json:dumps")
    assert _names() == _truth()
    (cache_file,) = (tmp_path / "cache" / "evalspec").iterdir()
    doc = json.loads(_payload(cache_file))
    doc["groups"][GROUP] = [["g", "os:system", ["plug_h", "1.0"]]]
    forged = json.dumps(doc).encode()
    if sealed == "another key":
        (tmp_path / "elsewhere").mkdir()
        with monkeypatch.context() as elsewhere:  # another machine's key
            elsewhere.setenv("TMPDIR", str(tmp_path / "elsewhere"))
            forged = seal.seal(forged)
    cache_file.write_bytes(forged)
    cache_file.chmod(0o600)
    assert _names() == _truth() == [("g", "json:dumps", "plug_h")]


def _payload(cache_file: Path) -> bytes:
    payload = seal.unseal(cache_file.read_bytes())
    assert payload is not None
    return payload


def test_the_cache_is_never_written_through_a_symlink(site: Path, tmp_path: Path) -> None:
    _dist(site, "plug_g", "h = json:dumps")
    assert _names() == _truth()
    (cache_file,) = (tmp_path / "cache" / "evalspec").iterdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    # The temp file's name was predictable (the pid): a symlink planted there was followed.
    planted = Path(f"{cache_file}.{os.getpid()}.tmp")
    planted.symlink_to(victim)
    _dist(site, "plug_h", "i = json:dumps")  # the cache is rewritten
    assert _names() == _truth()
    assert victim.read_text() == "untouched"
    assert not cache_file.is_symlink()


def test_writing_a_cache_file_prunes_the_oldest_of_each_kind_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache keeps the KEEP_FILES most recently written files of each kind (a key
    per interpreter, sys.path and project: fresh CI directories make new ones daily)
    and removes killed writers' old temporary files; anything else stays."""
    monkeypatch.setattr(discovery, "KEEP_FILES", 5)
    home = tmp_path / "cache" / "evalspec"
    home.mkdir(parents=True, mode=0o700)
    old = 1_000_000_000  # 2001: every planted file is older than the one written
    for kind, n in (("spec", 8), ("entry-points", 3)):
        for i in range(n):
            f = home / f"{kind}-{i:08x}.json"
            f.write_text("{}")
            os.utime(f, (old + i, old + i))
    stale = home / ".spec-00000001.json.123.0badcafe"  # a killed writer's, hours old
    fresh = home / ".spec-00000002.json.456.00c0ffee"  # a writer's, still at work
    stale.write_text("")
    os.utime(stale, (old, old))
    fresh.write_text("")
    others = [home / "notes.txt", home / "spec-0000000z.json", home / "spec-000000000.json"]
    for f in others:
        f.write_text("")
        os.utime(f, (old, old))
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("")
    (home / "spec-0000abcd.json").symlink_to(elsewhere)  # not a regular file of ours
    written = home / "spec-ffffffff.json"
    discovery.write_own_file(str(written), "{}")
    names = {p.name for p in home.iterdir()}
    # The one written and the 4 newest before it; entry-points untouched (3 <= 5).
    kept = {f"spec-{i:08x}.json" for i in (4, 5, 6, 7)} | {written.name}
    assert {n for n in names if n.startswith("spec-") and n.endswith(".json")} == kept | {
        "spec-0000000z.json",
        "spec-000000000.json",
        "spec-0000abcd.json",
    }
    assert {f"entry-points-{i:08x}.json" for i in range(3)} <= names
    assert stale.name not in names and fresh.name in names
    assert {f.name for f in others} <= names and elsewhere.exists()
    assert written.read_bytes() and discovery.read_own_file(str(written), 100) == b"{}"
    # Under the bound, a write looks at nothing: even a stale temporary file stays.
    monkeypatch.setattr(discovery, "KEEP_FILES", 1000)
    stale.write_text("")
    os.utime(stale, (old, old))
    before = sorted(p.name for p in home.iterdir())
    discovery.write_own_file(str(home / "spec-eeeeeeee.json"), "{}")
    assert sorted(p.name for p in home.iterdir()) == sorted([*before, "spec-eeeeeeee.json"])
