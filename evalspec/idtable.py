"""A compact table of task ids and the line that first used each.

Uniqueness is the one thing a streaming validator must remember about every
line. A ``dict`` of id strings costs ~140 bytes per id and a ``set`` ~110;
:class:`IdTable` keeps the ids of each batch as one joined string plus a few
machine integers per id, about 60-70 bytes per id for ids of ~20 characters.
Ids arrive in batches (a chunk of a file at a time), so most per-id work
(hashing, line numbers, where each id starts) happens in C over the batch;
only the probe of the open-addressing table is a Python loop.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Iterable, Sequence


class IdTable:
    """Open-addressing hash table: task id -> first line number.

    Equality is exact (on a hash match the stored id is compared), so a hash
    collision never makes two different ids look the same.
    """

    __slots__ = ("_bases", "_blobs", "_hashes", "_lines", "_mask", "_slots", "_starts", "_used")

    def __init__(self, capacity: int = 1 << 12) -> None:
        size = 8
        while size < 2 * capacity:
            size <<= 1
        self._mask = size - 1
        self._slots = array("i", bytes(4 * size))  # entry + 1; 0 = empty
        self._hashes = array("q", bytes(8 * size))  # the hash of the slot's id
        self._used = 0
        # Entry k is id number k - bases[b] of batch b (the last base <= k).
        self._bases: list[int] = []
        self._blobs: list[str] = []  # a batch's ids joined by "\n"
        self._starts: list[array[int]] = []  # where each id starts in its blob
        self._lines: list[array[int]] = []  # each id's line number

    def __len__(self) -> int:
        return self._used

    def __contains__(self, task_id: str) -> bool:
        return self.get(task_id) is not None

    def _entry(self, e: int) -> tuple[str, int]:
        b = bisect.bisect_right(self._bases, e) - 1
        j = e - self._bases[b]
        starts = self._starts[b]
        return self._blobs[b][starts[j] : starts[j + 1] - 1], self._lines[b][j]

    def get(self, task_id: str) -> int | None:
        """The first line that used ``task_id``, or ``None``."""
        h = hash(task_id)
        mask, slots, hashes = self._mask, self._slots, self._hashes
        i = h & mask
        e = slots[i]
        while e:
            if hashes[i] == h:
                stored, line = self._entry(e - 1)
                if stored == task_id:
                    return line
            i = (i + 1) & mask
            e = slots[i]
        return None

    def add_all(
        self, ids: Sequence[str], lines: Iterable[int], shift: int = 0
    ) -> list[tuple[int, int]]:
        """Add ids without newlines (on ``line + shift``) in line order.

        Returns ``(position, first line)`` for each id already present, an id
        repeated within ``ids`` included.
        """
        base = self._bases[-1] + len(self._lines[-1]) if self._bases else 0
        line_of = array("q", map(operator.add, lines, itertools.repeat(shift)))
        if len(line_of) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(line_of)} line numbers")
        self._bases.append(base)
        self._blobs.append("\n".join(ids) + "\n")
        sizes = map(operator.add, map(len, ids), itertools.repeat(1))
        self._starts.append(array("i", itertools.accumulate(sizes, initial=0)))
        self._lines.append(line_of)
        repeats: list[tuple[int, int]] = []
        slots, hashes, mask = self._slots, self._hashes, self._mask
        used = self._used
        for j, h in enumerate(map(hash, ids)):
            i = h & mask
            e = slots[i]
            while e:
                if hashes[i] == h:
                    stored, line = self._entry(e - 1)
                    if stored == ids[j]:
                        repeats.append((j, line))
                        break
                i = (i + 1) & mask
                e = slots[i]
            else:
                slots[i] = base + j + 1
                hashes[i] = h
                used += 1
                if 2 * used > mask:
                    self._used = used
                    self._grow()
                    slots, hashes, mask = self._slots, self._hashes, self._mask
        self._used = used
        return repeats

    def _grow(self) -> None:
        size = 2 * (self._mask + 1)
        mask = size - 1
        slots = array("i", bytes(4 * size))
        hashes = array("q", bytes(8 * size))
        for e, h in zip(self._slots, self._hashes, strict=True):
            if e:
                i = h & mask
                while slots[i]:
                    i = (i + 1) & mask
                slots[i] = e
                hashes[i] = h
        self._slots, self._hashes, self._mask = slots, hashes, mask
