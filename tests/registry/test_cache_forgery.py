"""A cache cannot decide a verdict (issue 23, item 3).

Whoever can write ``$XDG_CACHE_HOME/evalspec`` (a CI cache restored from a pull
request's job is the realistic route) forges a registry snapshot that declares a
category no plugin provides. The real ``evalspec validate`` of a task in that
category must still exit 1, whatever the forgery: the old unkeyed checksum, a
seal under another key, an empty dependency list, a planted private directory
or key (a real second user, uid 65534). A control run seals the same forgery
under the real key and shows it *would* decide the verdict: the key is what
stops it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalspec.io import seal
from evalspec.registry import discovery, snapshot

ROOT = Path(__file__).resolve().parents[2]
OTHER_UID = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own files as another uid")
FORGED = "forged_category"


class Machine:
    """A working directory, a cache directory and a temporary directory (the key's)."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.cache = root / "cache"
        self.tmp = root / "tmp"
        for d in (self.work, self.tmp):
            d.mkdir()
        first = (ROOT / "fixtures" / "tasks.jsonl").read_text().splitlines()[0]
        task = json.loads(first)
        task["category"] = FORGED
        (self.work / "forged.jsonl").write_text(json.dumps(task) + "\n")

    def validate(self, *, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {
            k: v for k, v in os.environ.items() if k not in (discovery.NO_CACHE_ENV, "TEMP", "TMP")
        }
        env.update(XDG_CACHE_HOME=str(self.cache), TMPDIR=str(tmp or self.tmp))
        done = subprocess.run(
            [sys.executable, "-m", "evalspec", "validate", "forged.jsonl"],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def snapshot_file(self) -> Path:
        [path] = self.cache.glob("evalspec/spec-*.json")
        return path

    def forged_doc(self) -> dict[str, Any]:
        """The real snapshot's document with the forged category added."""
        payload = self.unsealed(self.snapshot_file().read_bytes())
        doc: dict[str, Any] = json.loads(payload)
        row = next(r for r in doc["spec"]["categories"] if r[0] == "arithmetic")
        doc["spec"]["categories"].append([FORGED, *row[1:]])
        return doc

    def unsealed(self, data: bytes) -> bytes:
        with _tmpdir(self.tmp):
            payload = seal.unseal(data)
        assert payload is not None
        return payload

    def seal_with(self, tmp: Path, doc: dict[str, Any]) -> bytes:
        """``doc`` sealed under the key of the machine whose temporary directory is ``tmp``."""
        with _tmpdir(tmp):
            return seal.seal(json.dumps(doc).encode())


@contextlib.contextmanager
def _tmpdir(tmp: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(tmp))
        yield


def _old_checksum(doc: dict[str, Any]) -> str:
    """The unkeyed checksum the snapshot used to carry: anyone can compute it."""
    body = json.dumps(
        [1, [doc["key"], doc["dependencies"]], doc["spec"]], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(body.encode()).hexdigest()


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    m = Machine(tmp_path)
    done = m.validate()  # the honest run: exit 1, and a snapshot written
    assert done.returncode == 1 and FORGED in done.stdout
    assert m.snapshot_file().read_bytes().startswith(b"evalspec-sealed-1 ")
    return m


def test_the_forgery_sealed_under_the_real_key_would_decide_the_verdict(machine: Machine) -> None:
    """The control: it shows the forgery is a real one and the key is what stops it."""
    machine.snapshot_file().write_bytes(machine.seal_with(machine.tmp, machine.forged_doc()))
    assert machine.validate().returncode == 0


@pytest.mark.parametrize("dependencies", ["kept", "empty"])
def test_a_forgery_with_the_old_unkeyed_checksum_is_not_believed(
    machine: Machine, dependencies: str
) -> None:
    doc = machine.forged_doc()
    if dependencies == "empty":
        doc["dependencies"] = []
    for fmt in (1, snapshot.FORMAT):
        doc["format"] = fmt
        doc["checksum"] = _old_checksum(doc)
        machine.snapshot_file().write_text(json.dumps(doc))
        done = machine.validate()
        assert done.returncode == 1 and FORGED in done.stdout


def test_a_snapshot_restored_from_another_machine_is_not_believed(
    machine: Machine, tmp_path: Path
) -> None:
    """A restored CI cache: sealed under the key of the job that wrote it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    machine.snapshot_file().write_bytes(machine.seal_with(elsewhere, machine.forged_doc()))
    done = machine.validate()
    assert done.returncode == 1 and FORGED in done.stdout
    # ... and this machine's own run replaced it with one sealed under its key.
    assert machine.unsealed(machine.snapshot_file().read_bytes())


@pytest.mark.parametrize("cut", ["empty", "no-evalspec-lock", "no-pyproject"])
def test_a_sealed_snapshot_with_a_cut_dependency_list_is_not_believed(
    machine: Machine, tmp_path: Path, cut: str
) -> None:
    """Even under the real key (a bug, an older writer), a dependency list that
    lacks what every build depends on is not one that ``write`` made."""
    (machine.work / "pyproject.toml").write_text('[project]\nname = "w"\n')
    machine.snapshot_file().unlink()  # the project's snapshot has another name
    assert machine.validate().returncode == 1
    doc = machine.forged_doc()
    deps = doc["dependencies"]
    if cut == "empty":
        doc["dependencies"] = []
    elif cut == "no-evalspec-lock":
        doc["dependencies"] = [d for d in deps if not d[1].endswith("evalspec.lock")]
    else:
        doc["dependencies"] = [d for d in deps if not d[1].endswith("pyproject.toml")]
    assert doc["dependencies"] != deps
    machine.snapshot_file().write_bytes(machine.seal_with(machine.tmp, doc))
    done = machine.validate()
    assert done.returncode == 1 and FORGED in done.stdout


@as_root
@pytest.mark.parametrize("planted", ["directory", "key"])
def test_a_key_planted_by_another_user_is_not_trusted(tmp_path: Path, planted: str) -> None:
    """Another user made the private directory (or the key in it) first: they could
    swap the key, so nothing sealed is believed and nothing is written."""
    m = Machine(tmp_path)
    private = m.tmp / f"evalspec-{os.geteuid()}"
    private.mkdir(mode=0o700)
    if planted == "key":
        key_file = private / seal.KEY_NAME
        key_file.write_bytes(os.urandom(seal.KEY_BYTES))
        key_file.chmod(0o600)
        os.chown(key_file, OTHER_UID, OTHER_UID)
        forger_key = key_file
    else:
        os.chown(private, OTHER_UID, OTHER_UID)
        forger_key = None
    done = m.validate()
    assert done.returncode == 1 and FORGED in done.stdout
    assert not list(m.cache.glob("evalspec/spec-*.json"))  # no key we trust: no snapshot
    if forger_key is not None:  # the forger's key sealed a forgery: still not believed
        fake = {"format": snapshot.FORMAT, "key": {}, "dependencies": [], "spec": {}}
        payload = json.dumps(fake).encode()
        mac = seal.hmac_sha256(forger_key.read_bytes(), payload)
        (m.cache / "evalspec").mkdir(parents=True, exist_ok=True)
        (m.cache / "evalspec" / "spec-00000000.json").write_bytes(
            b"evalspec-sealed-1 " + mac.encode() + b"\n" + payload
        )
        assert m.validate().returncode == 1
