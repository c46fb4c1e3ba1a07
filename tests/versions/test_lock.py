"""The lock: chained checksums of released migrations, and what edits they catch."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import example_plugin
import pytest

from evalspec.errors import ChecksumMismatchError, LockError
from evalspec.registry.build import Registry
from evalspec.versions import Migration
from evalspec.versions.lock import (
    checksum,
    lock_chain,
    packaged_lock,
    parse_lock,
    read_lock,
    verify,
)


@pytest.fixture
def chain(example_registry: Registry) -> tuple[Migration, ...]:
    return example_registry.chain


def test_evalspec_ships_a_lock_that_releases_the_builtin_versions(registry: Registry) -> None:
    lock = packaged_lock()
    assert lock.released == 2
    assert verify(registry.chain, lock) == []


def test_checksum_is_chained_to_the_parent(chain: tuple[Migration, ...]) -> None:
    v1, v2, _example = chain
    assert checksum(v2, checksum(v1, None)) != checksum(v2, "sha256:other")
    assert checksum(v1, None) == checksum(attrs.evolve(v1, origin="elsewhere"), None)


def test_lock_file_round_trips(chain: tuple[Migration, ...]) -> None:
    lock = lock_chain(chain, "x.lock")
    assert parse_lock(lock.to_json(), "x.lock") == lock
    assert [e.version for e in lock.entries] == [1, 2, 3]


def test_editing_a_released_migration_is_named_once(chain: tuple[Migration, ...]) -> None:
    lock = lock_chain(chain, "evalspec.lock")
    edited_v1 = attrs.evolve(chain[0], message="Reworded after release")
    found = verify([edited_v1, *chain[1:]], lock)
    assert len(found) == 1  # later chained checksums change too, but those were not edited
    err = found[0]
    assert isinstance(err, ChecksumMismatchError)
    assert err.version == 1
    assert err.locked == lock.entries[0].checksum
    assert err.computed == checksum(edited_v1, None)
    assert err.locked in str(err) and err.computed in str(err)
    assert "make the change in a new migration (evalspec spec new)" in str(err)


def test_editing_a_fixture_byte_is_caught(chain: tuple[Migration, ...], tmp_path: Path) -> None:
    lock = lock_chain(chain, "evalspec.lock")
    data = (example_plugin.FIXTURES / "translation.jsonl").read_bytes()
    (tmp_path / "translation.jsonl").write_bytes(data.replace(b"Le chat", b"Le  chat"))
    edited = attrs.evolve(chain[2], fixture_dir=tmp_path)
    found = verify([*chain[:2], edited], lock)
    assert [getattr(e, "version", None) for e in found] == [3]


def test_released_version_without_migration_is_named(chain: tuple[Migration, ...]) -> None:
    lock = lock_chain(chain, "evalspec.lock")
    (err,) = verify(chain[:2], lock)
    assert str(err).startswith(
        "spec version 3 (released from plugin example_plugin) is released in evalspec.lock but "
        "no installed plugin or project migration provides it"
    )


def test_unreadable_fixture_of_a_released_version_is_named(
    chain: tuple[Migration, ...], tmp_path: Path
) -> None:
    lock = lock_chain(chain, "evalspec.lock")
    (err,) = verify([*chain[:2], attrs.evolve(chain[2], fixture_dir=tmp_path)], lock)
    assert "spec version 3" in str(err) and "a fixture of it cannot be read" in str(err)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "x.lock is not valid JSON"),
        ("[]", "x.lock is not an evalspec lock file"),
        ('{"evalspec-lock": 1, "released": {}}', 'x.lock: "released" must be a list'),
        ('{"evalspec-lock": 1, "released": [{"version": 1}]}', "needs an integer version"),
        (
            json.dumps({"evalspec-lock": 1, "released": [{"version": 2, "checksum": "c"}]}),
            "x.lock: released versions must be 1..N in order, found [2]",
        ),
    ],
)
def test_malformed_lock_files_are_refused(text: str, message: str) -> None:
    with pytest.raises(LockError) as info:
        parse_lock(text, "x.lock")
    assert message in str(info.value)


def test_unreadable_lock_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="cannot read lock file"):
        read_lock(tmp_path / "missing.lock")
