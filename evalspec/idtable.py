"""A compact table of task ids and the line that first used each.

Uniqueness is the one thing a streaming validator must remember about every
line. A ``dict`` of id strings costs ~140 bytes per id and a ``set`` ~110;
:class:`IdTable` keeps each id's UTF-8 bytes in one arena plus a few
machine integers, about 50-60 bytes per id for ids of ~20 characters, so the
memory of validating a file grows at half the rate of a set of its ids.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable


class IdTable:
    """Open-addressing hash table: task id -> first line number.

    Equality is exact (ids are compared byte for byte on a hash match), so a
    hash collision never makes two different ids look the same.
    """

    __slots__ = ("_arena", "_hashes", "_lines", "_mask", "_slots", "_starts")

    def __init__(self, capacity: int = 1 << 12) -> None:
        size = 1
        while size < 2 * capacity:
            size <<= 1
        self._mask = size - 1
        self._slots = array("i", bytes(4 * size))  # entry + 1; 0 = empty
        self._hashes = array("q")  # per entry
        self._lines = array("q")  # per entry
        self._starts = array("q", [0])  # entry k's id is arena[starts[k]:starts[k + 1]]
        self._arena = bytearray()

    def __len__(self) -> int:
        return len(self._lines)

    def __contains__(self, task_id: str) -> bool:
        return self.get(task_id) is not None

    def get(self, task_id: str) -> int | None:
        """The first line that used ``task_id``, or ``None``."""
        h = hash(task_id)
        mask, slots, hashes, starts, arena = (
            self._mask,
            self._slots,
            self._hashes,
            self._starts,
            self._arena,
        )
        encoded = task_id.encode("utf-8", "surrogatepass")
        i = h & mask
        while True:
            e = slots[i]
            if not e:
                return None
            e -= 1
            if hashes[e] == h and arena[starts[e] : starts[e + 1]] == encoded:
                return int(self._lines[e])
            i = (i + 1) & mask

    def add_all(
        self, ids: Iterable[str], lines: Iterable[int], shift: int = 0
    ) -> list[tuple[int, int]]:
        """Add ids (on ``line + shift``) in line order; ``(position, first line)`` for
        each id already present. An id repeated within ``ids`` is reported too.
        """
        repeats: list[tuple[int, int]] = []
        slots, hashes, line_of, starts, arena = (
            self._slots,
            self._hashes,
            self._lines,
            self._starts,
            self._arena,
        )
        mask = self._mask
        for pos, (task_id, line) in enumerate(zip(ids, lines, strict=True)):
            h = hash(task_id)
            encoded = task_id.encode("utf-8", "surrogatepass")
            i = h & mask
            found = 0
            while True:
                e = slots[i]
                if not e:
                    break
                if hashes[e - 1] == h and arena[starts[e - 1] : starts[e]] == encoded:
                    found = e
                    break
                i = (i + 1) & mask
            if found:
                repeats.append((pos, line_of[found - 1]))
                continue
            n = len(line_of)
            slots[i] = n + 1
            hashes.append(h)
            line_of.append(line + shift)
            arena += encoded
            starts.append(len(arena))
            if 2 * (n + 1) > mask:
                self._grow()
                slots, mask = self._slots, self._mask
        return repeats

    def _grow(self) -> None:
        size = 4 * (self._mask + 1)
        mask = size - 1
        slots = array("i", bytes(4 * size))
        for e, h in enumerate(self._hashes):
            i = h & mask
            while slots[i]:
                i = (i + 1) & mask
            slots[i] = e + 1
        self._slots, self._mask = slots, mask
