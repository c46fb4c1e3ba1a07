"""The cache key and the seal (issue 23, item 3): a real private directory in a real
temporary directory, a real second user (as root: uid 65534 owns the files) and
real concurrent first uses."""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec.io import seal
from evalspec.io.privatedir import PrivateDirError, private_dir

OTHER_UID = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own files as another uid")


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of the test's own: the private directory is made in it."""
    root = tmp_path / "tmp"
    root.mkdir()
    for name in ("TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TMPDIR", str(root))
    return root


@pytest.mark.parametrize("length", [0, 1, 32, 64, 65, 200])
def test_the_hmac_is_rfc_2104s(length: int) -> None:
    key, message = os.urandom(length), os.urandom(3 * length + 1)
    assert seal.hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).hexdigest()


def test_the_key_is_made_once_private_and_outside_the_cache(tmp: Path) -> None:
    first = seal.key()
    key_file = tmp / f"evalspec-{os.geteuid()}" / seal.KEY_NAME
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert key_file.parent.stat().st_mode & 0o777 == 0o700
    assert len(first) == seal.KEY_BYTES and seal.key() == first
    assert sorted(p.name for p in key_file.parent.iterdir()) == [seal.KEY_NAME]  # no temp left


def test_sealed_data_opens_only_under_the_same_key(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed = seal.seal(b'{"a": 1}')
    assert seal.unseal(sealed) == b'{"a": 1}'
    assert seal.unseal(sealed.replace(b"1}", b"2}")) is None  # edited
    assert seal.unseal(sealed.split(b"\n", 1)[1]) is None  # the seal line dropped
    assert seal.unseal(b"") is None
    other = tmp / "other"
    other.mkdir()
    monkeypatch.setenv("TMPDIR", str(other))  # another machine, another job: another key
    assert seal.unseal(sealed) is None
    assert seal.unseal(seal.seal(b"x")) == b"x"


def test_concurrent_first_uses_agree_on_one_key(tmp: Path) -> None:
    code = "import sys; from evalspec.io import seal; sys.stdout.write(seal.key().hex())"
    env = {**os.environ, "TMPDIR": str(tmp)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    keys = {p.communicate(timeout=120)[0] for p in procs}
    assert [p.returncode for p in procs] == [0] * 8
    assert len(keys) == 1
    assert keys == {(tmp / f"evalspec-{os.geteuid()}" / seal.KEY_NAME).read_bytes().hex()}


@pytest.mark.parametrize("damage", ["mode", "size", "symlink", "directory"])
def test_a_key_that_is_not_private_is_refused(tmp: Path, damage: str) -> None:
    sealed = seal.seal(b"payload")
    key_file = Path(private_dir()) / seal.KEY_NAME
    if damage == "mode":
        key_file.chmod(0o644)
    elif damage == "size":
        key_file.write_bytes(key_file.read_bytes() + b"!")
    elif damage == "symlink":
        target = tmp / "elsewhere.key"
        target.write_bytes(key_file.read_bytes())
        target.chmod(0o600)
        key_file.unlink()
        key_file.symlink_to(target)
    else:
        key_file.unlink()
        key_file.mkdir()
    with pytest.raises(seal.SealKeyError, match=r"cache key .*cache\.key"):
        seal.key()
    assert seal.unseal(sealed) is None  # nothing is believed without a key we trust


@as_root
def test_a_key_owned_by_another_user_is_refused(tmp: Path) -> None:
    sealed = seal.seal(b"payload")
    key_file = Path(private_dir()) / seal.KEY_NAME
    os.chown(key_file, OTHER_UID, OTHER_UID)
    with pytest.raises(seal.SealKeyError, match="owned by uid 0"):
        seal.key()
    assert seal.unseal(sealed) is None


@as_root
def test_a_private_directory_planted_by_another_user_is_refused(tmp: Path) -> None:
    planted = tmp / f"evalspec-{os.geteuid()}"
    planted.mkdir()
    planted.chmod(0o700)  # private-looking, but not ours: its owner can swap the key
    os.chown(planted, OTHER_UID, OTHER_UID)
    with pytest.raises(PrivateDirError, match=f"{planted}.*found uid 65534"):
        seal.key()
    assert seal.unseal(b"evalspec-sealed-1 " + b"0" * 64 + b"\npayload") is None
    assert not (planted / seal.KEY_NAME).exists()
