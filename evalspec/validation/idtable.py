"""The table of task ids and the line that first used each.

Uniqueness is the one thing a streaming validator must remember about every
line. Ids arrive in batches (a chunk of a file at a time), and nearly every
batch is new ids only, so :meth:`IdTable.add_all` asks the question for the
whole batch in C (a ``dict`` of the batch intersected with the table's keys)
and merges it in one ``update``; only the repeated ids, if any, are walked
in Python. A ``dict`` of id strings costs ~130 bytes per id (ids of
~20 characters). An open-addressing table in Python arrays took half that
memory and three times the time: its probe loop ran in byte code for every
id, and in ``--jobs N`` that loop was the parent's main work, the part that
does not scale with N.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence


class IdTable:
    """Task id -> first line number; exact (a dict: equal ids, not equal hashes)."""

    __slots__ = ("_first",)

    def __init__(self) -> None:
        self._first: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._first)

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._first

    def __repr__(self) -> str:
        return f"<IdTable: {len(self._first)} ids>"

    def get(self, task_id: str) -> int | None:
        """The first line that used ``task_id``, or ``None``."""
        return self._first.get(task_id)

    def add_all(
        self, ids: Sequence[str], lines: Iterable[int], shift: int = 0
    ) -> list[tuple[int, int]]:
        """Add ``ids`` (on ``line + shift``, the lines in increasing order).

        Returns ``(position, first line)`` for each id already present, an id
        repeated within ``ids`` included.
        """
        line_of = list(map(operator.add, lines, itertools.repeat(shift)))
        if len(line_of) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(line_of)} line numbers")
        first = self._first
        n = len(line_of)
        # Each id's first position in the batch (zip over the reversed batch: the
        # last write, the first occurrence, wins), then the ids the table had.
        at = dict(zip(reversed(ids), range(n - 1, -1, -1), strict=True))
        before = first.keys() & at.keys()  # iterates over the batch, not the table
        if len(at) == n and not before:
            first.update(zip(ids, line_of, strict=True))
            return []
        # In C too: the positions that repeat an id earlier in the batch. Only the
        # repeats are walked in Python.
        later = set(range(n)).difference(at.values()) if len(at) < n else ()
        repeats = [(at[task_id], first[task_id]) for task_id in before]
        for pos in later:
            task_id = ids[pos]
            earlier = first.get(task_id)
            repeats.append((pos, line_of[at[task_id]] if earlier is None else earlier))
        for task_id in before:
            del at[task_id]
        first.update(zip(at.keys(), map(line_of.__getitem__, at.values()), strict=True))
        repeats.sort()
        return repeats
