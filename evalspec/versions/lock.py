"""Released means frozen: the lock file and the checksums of released migrations.

A lock file records, for every released spec version, a checksum over the
migration's canonical description (:meth:`Migration.describe`, as sorted
compact JSON), the bytes of its fixture files and its parent's checksum, the
way Sqitch chains change ids. Editing a released migration or one of its
fixtures changes its checksum and the checksum of every version after it;
``evalspec spec check`` names the version that was edited.

The versions *in force* are those the project's lock records; a project with
no lock of its own uses the lock shipped inside evalspec (spec version 1).
Anything newer is *pending* until the project runs ``evalspec spec lock``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import ChecksumMismatchError, LockError, UnreadableFixtureError
from evalspec.io.safeload import DocumentError, loads_json, read_text_bounded
from evalspec.versions.migration import Migration

LOCK_FORMAT = 1
PACKAGED_LOCK = "evalspec.lock"
MAX_LOCK_BYTES = 16 << 20
"""Largest lock file read (16 MiB; a lock holds one short line per released version)."""
"""The lock shipped in :mod:`evalspec.versions`: the versions evalspec itself has released."""


def canonical_json(value: Any) -> bytes:
    """Sorted, compact, UTF-8 JSON: the same bytes for the same value on every machine."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def checksum(migration: Migration, parent: str | None) -> str:
    """``sha256:<hex>`` over the migration, its fixture bytes and its parent's checksum.

    :raises OSError: a fixture file cannot be read.
    """
    fixtures = {rel: hashlib.sha256(data).hexdigest() for rel, data in migration.fixture_files()}
    doc = {"migration": migration.describe(), "fixtures": fixtures, "parent": parent}
    return "sha256:" + hashlib.sha256(canonical_json(doc)).hexdigest()


def chain_checksums(chain: Sequence[Migration]) -> dict[int, str]:
    """Checksum of every migration of an ordered chain, each chained to its parent's."""
    out: dict[int, str] = {}
    parent: str | None = None
    for mig in chain:
        parent = out[mig.version] = checksum(mig, parent)
    return out


@attrs.frozen
class LockEntry:
    """One released spec version as the lock file records it."""

    version: int
    checksum: str
    message: str = ""
    origin: str = ""

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Lock:
    """The released versions, 1..N, of a lock file (``path`` says which, for messages)."""

    entries: tuple[LockEntry, ...]
    path: str

    @property
    def released(self) -> int:
        """The newest released version (0 when nothing is released)."""
        return self.entries[-1].version if self.entries else 0

    def entry(self, version: int) -> LockEntry | None:
        for e in self.entries:
            if e.version == version:
                return e
        return None

    def to_json(self) -> str:
        doc = {"evalspec-lock": LOCK_FORMAT, "released": [e.to_dict() for e in self.entries]}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def parse_lock(text: str, path: str) -> Lock:
    """Read a lock file's text; :class:`LockError` names the file and what is wrong."""
    try:
        doc = loads_json(text)
    except DocumentError as exc:
        raise LockError(exc.about(path)) from None
    if not isinstance(doc, dict) or doc.get("evalspec-lock") != LOCK_FORMAT:
        msg = f'{path} is not an evalspec lock file (expected "evalspec-lock": {LOCK_FORMAT})'
        raise LockError(msg)
    released = doc.get("released")
    if not isinstance(released, list):
        raise LockError(f'{path}: "released" must be a list')
    entries: list[LockEntry] = []
    for i, row in enumerate(released):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("version"), int)
            or not isinstance(row.get("checksum"), str)
        ):
            raise LockError(f"{path}: released[{i}] needs an integer version and a checksum")
        entries.append(
            LockEntry(
                row["version"],
                row["checksum"],
                str(row.get("message", "")),
                str(row.get("origin", "")),
            )
        )
    versions = [e.version for e in entries]
    if versions != list(range(1, len(versions) + 1)):
        msg = f"{path}: released versions must be 1..N in order, found {versions}"
        raise LockError(msg)
    return Lock(tuple(entries), path)


def read_lock(path: Path, label: str | None = None) -> Lock:
    """Read a project's lock file (``label`` names it in messages; default: ``path``).

    :raises LockError: it is unreadable or malformed.
    """
    name = str(path) if label is None else label
    try:
        text = read_text_bounded(path, MAX_LOCK_BYTES)
    except OSError as exc:
        raise LockError(f"cannot read lock file {name}: {exc.strerror or exc}") from None
    except (DocumentError, UnicodeDecodeError) as exc:
        raise LockError(f"cannot read lock file {name}: {exc}") from None
    return parse_lock(text, name)


def packaged_lock() -> Lock:
    """The lock shipped inside evalspec: the spec versions evalspec itself released."""
    label = f"evalspec's own {PACKAGED_LOCK}"
    node: Traversable = resources.files("evalspec.versions").joinpath(PACKAGED_LOCK)
    try:
        text = node.read_text(encoding="utf-8")
    except OSError as exc:
        raise LockError(f"cannot read {label}: {exc.strerror or exc} (a broken install?)") from None
    return parse_lock(text, label)


def lock_chain(chain: Sequence[Migration], path: str, upto: int | None = None) -> Lock:
    """A lock releasing versions 1..``upto`` (default: the head) of an ordered chain."""
    sums = chain_checksums([m for m in chain if upto is None or m.version <= upto])
    return Lock(
        tuple(
            LockEntry(m.version, sums[m.version], m.message, m.origin)
            for m in chain
            if m.version in sums
        ),
        path,
    )


def verify(chain: Sequence[Migration], lock: Lock) -> list[LockError]:
    """Every disagreement between an ordered chain and a lock, in version order.

    A released version that no migration provides, one whose fixture cannot be
    read, and one whose checksum changed (:class:`ChecksumMismatchError`). A
    version whose own content is unchanged but whose parent was edited is not
    reported twice: the edit is reported once, at the version that was edited.
    """
    by_version = {m.version: m for m in chain}
    problems: list[LockError] = []
    for entry in lock.entries:
        mig = by_version.get(entry.version)
        if mig is None:
            origin = f" (released from {entry.origin})" if entry.origin else ""
            problems.append(
                LockError(
                    f"spec version {entry.version}{origin} is released in {lock.path} but no "
                    "installed plugin or project migration provides it; reinstall the plugin "
                    "that contributed it"
                )
            )
            continue
        parent_entry = lock.entry(entry.version - 1)
        parent = parent_entry.checksum if parent_entry is not None else None
        try:
            own = checksum(mig, parent)
        except OSError as exc:
            problems.append(
                UnreadableFixtureError(
                    entry.version, mig.origin or "unknown origin", str(exc.strerror or exc)
                )
            )
            continue
        if own != entry.checksum:
            problems.append(
                ChecksumMismatchError(
                    entry.version, mig.origin or "unknown origin", entry.checksum, own, lock.path
                )
            )
    return problems


def repair(chain: Sequence[Migration], lock: Lock, start: int) -> Lock:
    """The lock with the checksums of released versions ``start``.. recomputed.

    Flyway's ``repair``: the explicit, auditable way to accept a deliberate
    edit of a released migration that was never published. Versions before
    ``start`` keep their recorded checksums; nothing new is released.

    :raises LockError: ``start`` is not a released version, or a migration is missing.
    """
    if not 1 <= start <= lock.released:
        msg = f"cannot repair from version {start}: {lock.path} releases 1..{lock.released}"
        raise LockError(msg)
    by_version = {m.version: m for m in chain}
    entries = list(lock.entries[: start - 1])
    parent = entries[-1].checksum if entries else None
    for old in lock.entries[start - 1 :]:
        mig = by_version.get(old.version)
        if mig is None:
            raise LockError(f"cannot repair version {old.version}: no migration provides it")
        parent = checksum(mig, parent)
        entries.append(LockEntry(old.version, parent, mig.message, mig.origin))
    return Lock(tuple(entries), lock.path)
