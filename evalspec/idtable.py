"""The table of task ids and the line that first used each.

Uniqueness is the one thing a streaming validator must remember about every
line. Ids arrive in batches (a chunk of a file at a time), and nearly every
batch is new ids only, so :meth:`IdTable.add_all` asks the question for the
whole batch in C (a ``dict`` of the batch intersected with the table's keys)
and merges it in one ``update``; only a batch with an id twice in itself, or
with many repeats, is walked id by id. A ``dict`` of id strings costs ~130 bytes per id (ids of
~20 characters). An open-addressing table in Python arrays took half that
memory and three times the time: its probe loop ran in byte code for every
id, and in ``--jobs N`` that loop was the parent's main work, the part that
does not scale with N.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence

_FEW_REPEATS = 64
"""Up to this many repeated ids, a batch is still merged in C (each repeat then
costs one scan of the batch for its position); more, and it is walked id by id."""


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
        batch = dict(zip(ids, line_of, strict=True))
        if len(batch) == len(line_of):  # no id twice within the batch
            # Iterates over the batch, looking each id up in the table.
            before = first.keys() & batch.keys()
            if len(before) <= _FEW_REPEATS:
                for task_id in before:
                    del batch[task_id]
                first.update(batch)
                return sorted((ids.index(task_id), first[task_id]) for task_id in before)
        repeats: list[tuple[int, int]] = []
        setdefault = first.setdefault
        for pos, (task_id, line) in enumerate(zip(ids, line_of, strict=True)):
            stored = setdefault(task_id, line)
            if stored is not line:  # the id was there before this line
                repeats.append((pos, stored))
        return repeats
