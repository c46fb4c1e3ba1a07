"""The registry snapshot is never stale, and a bad snapshot file is never believed.

The end-to-end test changes, one at a time, every input of the snapshot's
key (the project's lock, its ``pyproject.toml``, its migrations directory,
the installed distributions, their versions and entry points, a plugin's
source and its fixtures) and runs the real ``evalspec validate`` with the
snapshot and without it (``EVALSPEC_NO_PLUGIN_CACHE=1``): the outputs and
exit codes must be identical every time. The key's interpreter parts
(evalspec's version, Python's) are checked in-process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import example_plugin
import pytest

from evalspec.io import seal
from evalspec.registry import discovery, snapshot
from evalspec.registry.build import Registry, build_registry
from evalspec.versions.lock import lock_chain

TESTS = Path(__file__).resolve().parents[1]
TASKS = example_plugin.FIXTURES / "translation.jsonl"


# -- in-process: the file is untrusted input ----------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(discovery.NO_CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # outside any project
    yield tmp_path / "cache" / "evalspec"


@pytest.fixture
def written(cache: Path, registry: Registry) -> Path:
    path = Path(snapshot.snapshot_path(None))
    snapshot.write(str(path), registry, None)
    assert snapshot.load(str(path), None) == registry.spec
    return path


def test_a_written_snapshot_reads_back_as_the_spec_version(written: Path) -> None:
    assert written.parent.is_dir()
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    assert not [p for p in written.parent.iterdir() if p.name.startswith(".")]  # no temp left


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"",
        lambda b: b"\x00" * 100,
        lambda b: b"[" * 100_000,  # deep
        lambda b: b.replace(b'"exact_match"', b'"exact_matcx"', 1),  # checksum no longer fits
        lambda b: b"null",
        lambda b: json.dumps({"format": 1, "key": 1, "dependencies": 2, "spec": 3}).encode(),
        lambda b: b"\xff\xfe",
    ],
)
def test_a_damaged_snapshot_is_ignored(written: Path, damage: object) -> None:
    assert callable(damage)
    written.write_bytes(damage(written.read_bytes()))
    assert snapshot.load(str(written), None) is None


def test_a_snapshot_sealed_under_the_key_but_with_a_bad_spec_is_ignored(
    written: Path,
) -> None:
    payload = seal.unseal(written.read_bytes())
    assert payload is not None
    doc = json.loads(payload)
    doc["spec"]["categories"][0][1] = "exact_match"  # a string where a list belongs
    written.write_bytes(seal.seal(json.dumps(doc).encode()))
    assert snapshot.load(str(written), None) is None


def test_the_aliases_come_from_a_current_snapshot_and_a_bad_part_is_rebuilt(
    written: Path, registry: Registry
) -> None:
    """The hint of an invalid line reads the aliases from the snapshot; sealed but
    malformed or missing, they are rebuilt from the registry, never believed."""
    expected = {
        kind: tuple((e.name, e.aliases, e.alias_hint) for e in entries.values() if e.aliases)
        for kind, entries in (("category", registry.categories), ("metric", registry.metrics))
    }
    assert expected["category"] and expected["metric"]  # the built-ins declare some
    assert snapshot.aliases_in_force() == expected
    payload = seal.unseal(written.read_bytes())
    assert payload is not None
    for bad in ({"category": [["code_exec", "pass@*", ""]], "metric": []}, None, "missing"):
        doc = json.loads(payload)
        if bad == "missing":
            del doc["aliases"]
        else:
            doc["aliases"] = bad
        written.write_bytes(seal.seal(json.dumps(doc).encode()))
        assert snapshot.aliases_in_force() == expected
        rebuilt = seal.unseal(written.read_bytes())  # and written afresh
        assert (
            rebuilt is not None and json.loads(rebuilt)["aliases"] == json.loads(payload)["aliases"]
        )


def test_a_symlink_or_a_file_others_can_write_is_not_read(written: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    shutil.copy(written, target)
    written.unlink()
    written.symlink_to(target)
    assert snapshot.load(str(written), None) is None
    written.unlink()
    shutil.copy(target, written)
    written.chmod(0o666)
    assert snapshot.load(str(written), None) is None
    written.chmod(0o600)
    assert snapshot.load(str(written), None) is not None


def test_a_directory_or_a_named_pipe_in_its_place_is_not_read(written: Path) -> None:
    written.unlink()
    written.mkdir()  # opened fine, then failed at the read: an IsADirectoryError traceback
    assert snapshot.load(str(written), None) is None
    assert snapshot.spec_in_force() is not None
    written.rmdir()
    os.mkfifo(written)  # never opened for reading: that would wait for a writer
    assert snapshot.load(str(written), None) is None


def test_writing_replaces_a_symlink_instead_of_writing_through_it(
    written: Path, tmp_path: Path, registry: Registry
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    written.unlink()
    written.symlink_to(victim)
    snapshot.write(str(written), registry, None)
    assert victim.read_text() == "keep me"
    assert not written.is_symlink()
    assert snapshot.load(str(written), None) == registry.spec


@pytest.mark.parametrize("part", ["evalspec", "python", "requested"])
def test_the_interpreter_parts_of_the_key_invalidate(
    written: Path, monkeypatch: pytest.MonkeyPatch, part: str
) -> None:
    if part == "evalspec":
        monkeypatch.setattr(snapshot, "__version__", "999.0")
        assert snapshot.load(str(written), None) is None
    elif part == "python":
        monkeypatch.setattr(sys, "version", sys.version + " (another build)")
        assert snapshot.load(str(written), None) is None
    else:
        assert snapshot.load(str(written), 1) is None  # written for "the newest"


def test_the_spec_round_trips_through_json(registry: Registry) -> None:
    example = build_registry([*_builtin(), example_plugin], entry_points=False)
    for spec in (registry.spec, example.spec, example.at_version(1).spec):
        assert snapshot.decode_spec(json.loads(json.dumps(snapshot.encode_spec(spec)))) == spec


def test_installed_modules_are_stamped_though_site_packages_lies_in_the_stdlib_dir() -> None:
    lib = os.path.join(os.sep, "py", "lib", "python3.11")
    site = os.path.join(lib, "site-packages")
    assert snapshot.in_standard_library(os.path.join(lib, "json", "__init__.py"), [lib], [site])
    assert not snapshot.in_standard_library(
        os.path.join(site, "plugin", "__init__.py"), [lib], [site]
    )
    assert not snapshot.in_standard_library(os.path.join(os.sep, "src", "p.py"), [lib], [site])


def test_the_dependencies_stamp_the_installed_plugin_manager(registry: Registry) -> None:
    # pluggy is installed (not editable) in this environment's site-packages, which
    # lies inside the interpreter's (or the venv's) lib directory: its file is stamped.
    import pluggy

    stamped = {path for how, path, _ in snapshot._dependencies(registry) if how == "stat"}
    assert pluggy.__file__ in stamped
    assert json.__file__ not in stamped  # the standard library is not


def _builtin() -> list[object]:
    import evalspec_plugins

    return list(evalspec_plugins.load())


# -- end to end: change every input of the key, compare with no snapshot -----------------


class Suite:
    """A project whose tasks need spec version 2 from an installed plugin."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = root / "suite"
        self.site = root / "site"
        self.cache = root / "cache"
        self.project.mkdir()
        self.site.mkdir()
        shutil.copytree(TESTS / "example_plugin", self.site / "example_plugin")
        self.install("1.0")
        self.pyproject('lock = "evalspec.lock"\n')
        shutil.copy(TASKS, self.project / "tasks.jsonl")
        chain = build_registry([*_builtin(), example_plugin], entry_points=False).chain
        self.lock_v1 = lock_chain(chain, "evalspec.lock", upto=1).to_json()
        self.lock_v2 = lock_chain(chain, "evalspec.lock").to_json()
        (self.project / "evalspec.lock").write_text(self.lock_v2)

    def install(self, version: str, entry: str = "example_plugin") -> None:
        for old in self.site.glob("*.dist-info"):
            shutil.rmtree(old)
        info = self.site / f"example_plugin_dist-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: example-plugin-dist\nVersion: {version}\n"
        )
        (info / "entry_points.txt").write_text(f"[evalspec]\nexample = {entry}\n")

    def pyproject(self, settings: str) -> None:
        (self.project / "pyproject.toml").write_text(
            f'[project]\nname = "suite"\n\n[tool.evalspec]\n{settings}'
        )

    def run(self, *, cached: bool) -> tuple[int, str, str]:
        env = {k: v for k, v in os.environ.items() if k != discovery.NO_CACHE_ENV}
        env.update(XDG_CACHE_HOME=str(self.cache), PYTHONPATH=str(self.site))
        if not cached:
            env[discovery.NO_CACHE_ENV] = "1"
        proc = subprocess.run(
            [sys.executable, "-m", "evalspec", "validate", "tasks.jsonl"],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def snapshots(self) -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in self.cache.glob("evalspec/spec-*.json")}

    def agree(self) -> int:
        """Run with and without the snapshot; the same output either way."""
        cached = self.run(cached=True)
        assert cached == self.run(cached=False)
        assert "Traceback" not in cached[2]
        return cached[0]


@pytest.mark.slow
def test_the_snapshot_follows_every_input_of_its_key(tmp_path: Path) -> None:
    suite = Suite(tmp_path)
    assert suite.agree() == 0
    written = suite.snapshots()
    assert written  # the first run snapshotted the spec version
    assert suite.agree() == 0
    assert suite.snapshots() == written  # ... and the next one read it, unchanged

    def changed(expected: int, *, rebuilt: bool = False) -> None:
        """The same verdict with and without the snapshot; ``rebuilt``: the
        snapshot on disk no longer fitted, so the run wrote a new one."""
        nonlocal written
        assert suite.agree() == expected
        now = suite.snapshots()
        assert (now != written) == rebuilt
        written = now

    # The project's lock.
    (suite.project / "evalspec.lock").write_text(suite.lock_v1)
    changed(1, rebuilt=True)  # translation is pending at version 1
    (suite.project / "evalspec.lock").write_text(suite.lock_v2)
    changed(0, rebuilt=True)
    # The installed distributions: removed, then installed at another version.
    shutil.rmtree(next(suite.site.glob("*.dist-info")))
    changed(2)  # the lock releases a version no installed plugin provides
    suite.install("2.0")
    changed(0, rebuilt=True)
    # Their entry points.
    suite.install("2.0", entry="no_such_module")
    changed(2)
    suite.install("2.0")
    changed(0, rebuilt=True)
    # pyproject.toml.
    suite.pyproject('lock = "other.lock"\n')
    changed(1, rebuilt=True)  # no lock there: evalspec's own (version 1) is in force
    suite.pyproject('lock = "evalspec.lock"\n')
    changed(0, rebuilt=True)
    # The migrations directory.
    suite.pyproject('lock = "evalspec.lock"\nmigrations = "spec/migrations"\n')
    (suite.project / "spec" / "migrations").mkdir(parents=True)
    changed(0, rebuilt=True)
    (suite.project / "spec" / "migrations" / "0004_x.py").write_text("migration = 4\n")
    # A file that is not a migration is a broken pending version: the released
    # versions still validate (spec list/check name it), from a new snapshot.
    changed(0, rebuilt=True)
    (suite.project / "spec" / "migrations" / "0004_x.py").unlink()
    changed(0, rebuilt=True)
    # A plugin's source and a fixture of a released version (edited after release).
    source = suite.site / "example_plugin" / "__init__.py"
    original = source.read_text()
    source.write_text(original.replace("Add category translation", "Add translation"))
    changed(2)
    source.write_text(original)
    changed(0, rebuilt=True)  # a new mtime, though the same bytes
    fixture = suite.site / "example_plugin" / "fixtures" / "translation.jsonl"
    fixture.write_bytes(fixture.read_bytes() + b"\n")
    changed(2)


def test_no_snapshot_is_written_into_a_directory_others_can_write(
    cache: Path, registry: Registry
) -> None:
    cache.mkdir(parents=True)
    cache.chmod(0o777)
    path = snapshot.snapshot_path(None)
    with pytest.raises(PermissionError):
        snapshot.write(path, registry, None)
    assert not os.path.exists(path)
    cache.chmod(0o700)
    snapshot.write(path, registry, None)
    assert snapshot.load(path, None) == registry.spec


@pytest.mark.parametrize(
    "env",
    [{"XDG_CACHE_HOME": "cache"}, {"XDG_CACHE_HOME": "", "HOME": "home"}, {"HOME": ""}],
)
def test_a_relative_cache_home_is_ignored_not_created_in_the_working_directory(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The XDG rule: a relative XDG_CACHE_HOME (or HOME) is invalid. Honoured, it
    would put evalspec's cache in whatever directory the command runs in."""
    shutil.copy(TASKS, tmp_path / "tasks.jsonl")
    full = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "HOME")}
    full.update(env)
    full.pop(discovery.NO_CACHE_ENV, None)
    full["PYTHONPATH"] = str(example_plugin.FIXTURES.parent.parent)
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", "tasks.jsonl"],
        cwd=tmp_path,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.jsonl"]


@pytest.mark.parametrize(
    ("xdg", "home", "expected"),
    [
        ("/x/cache", "/h", "/x/cache/evalspec"),
        ("cache", "/h", "/h/.cache/evalspec"),  # relative: ignored
        ("", "/h", "/h/.cache/evalspec"),
        ("cache", "h", None),
        (None, "h", None),
    ],
)
def test_the_cache_home_is_an_absolute_path_or_none(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str, expected: str | None
) -> None:
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.setenv("HOME", home)
    assert discovery.cache_home() == expected
    assert (snapshot.snapshot_path(None) is None) == (expected is None)
