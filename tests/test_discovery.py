"""Cached entry-point discovery finds exactly what importlib.metadata finds."""

from __future__ import annotations

import json
import os
import shutil
from importlib import metadata
from pathlib import Path

import pytest

from evalspec import discovery

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
    assert GROUP in json.loads(cache_files[0].read_text())["groups"]
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
