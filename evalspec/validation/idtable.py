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

:class:`DigestIdTable` is the compact one, used where the compiled core is
built and the input can be read again: fixed-size digests in C, the real ids
compared (by reading the earlier line again) only when two digests meet.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Callable, Iterable, Sequence

# Not `from typing import Any`: typing costs milliseconds at start-up, and this module
# is imported on the warm path of `evalspec validate`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class IdTable:
    """Task id -> first line number; exact (a dict: equal ids, not equal hashes)."""

    __slots__ = ("_first",)

    needs_offsets = False
    """:meth:`add_all` takes no line offsets (a dict of the ids themselves)."""

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
        self,
        ids: Sequence[str],
        lines: Iterable[int],
        shift: int = 0,
        offsets: Iterable[int] = (),
    ) -> list[tuple[int, int]]:
        """Add ``ids`` (on ``line + shift``, the lines in increasing order; ``offsets``
        is not needed).

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


class DigestIdTable:
    """Task id -> first line, as 8 bytes a slot: digests in the compiled core.

    The same answers as :class:`IdTable` in a fraction of the memory (~8-16
    bytes an id instead of ~130): the compiled core's ``DigestTable`` keeps a
    32-bit digest of each id with its 32-bit first line, and one byte offset per
    64 lines. A digest seen before is only a candidate: ``id_at(offset, skip,
    line)`` reads the earlier line again (line ``line``, ``skip`` lines after the
    line at byte ``offset``) and the real ids decide, so the verdict stays exact
    (a digest shared by two different ids inserts the second). Needs input that
    can be read again (a regular file) of fewer than 2**32 lines, and the offset
    of each id's line.
    """

    __slots__ = ("_id_at", "_recent", "_table")

    needs_offsets = True
    """:meth:`add_all` wants each id's line offset."""

    def __init__(self, id_at: Callable[[int, int, int], str], table: Any) -> None:
        """``table``: an empty ``evalspec.validation._core.DigestTable``."""
        self._table = table
        self._id_at = id_at
        # The ids of the first lines read again lately (by line number): a file
        # repeating one id a million times reads its first line once, not a million times.
        self._recent: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"<DigestIdTable: {len(self._table)} ids, {self._table.nbytes} bytes>"

    def add_all(
        self,
        ids: Sequence[str],
        lines: Iterable[int],
        shift: int = 0,
        offsets: Iterable[int] = (),
    ) -> list[tuple[int, int]]:
        """Add ``ids`` (on ``line + shift``, the lines in increasing order, starting
        at byte ``offsets``). Returns ``(position, first line)`` for each id already
        present, an id repeated within ``ids`` included."""
        line_of, at = self._numbers(len(ids), lines, shift, offsets)
        found = self._table.add(list(ids), line_of, at)
        return self._decide(found, ids.__getitem__, line_of, at)

    def add_digests(
        self, digests: bytes, lines: Iterable[int], shift: int, offsets: Iterable[int]
    ) -> list[tuple[int, int]]:
        """:meth:`add_all` with the ids' digests (``_core.id_digests``, what a worker
        sends) instead of the ids: a candidate's own id is read from its line."""
        line_of, at = self._numbers(len(digests) // 4, lines, shift, offsets)
        found = self._table.add_digests(digests, line_of, at)
        return self._decide(found, lambda pos: self.read_id(at[pos], line_of[pos]), line_of, at)

    def reserve(self, n: int) -> None:
        """Room for ``n`` ids in all, in one resize: a table grown by doubling holds its
        old and its new slots at once (1.5x its size) when it grows."""
        self._table.reserve(n)

    def read_id(self, offset: int, line: int) -> str:
        """The task id of the valid line ``line``, which starts at byte ``offset``."""
        return self._first_id(offset, 0, line)

    @staticmethod
    def _numbers(
        n: int, lines: Iterable[int], shift: int, offsets: Iterable[int]
    ) -> tuple[array[int], array[int]]:
        # The engine passes arrays already numbered (shift 0): used as they are.
        if shift == 0 and type(lines) is array and lines.typecode == "q":
            line_of = lines
        else:
            line_of = array("q", map(operator.add, lines, itertools.repeat(shift)))
        at = offsets if type(offsets) is array and offsets.typecode == "q" else array("q", offsets)
        if not len(line_of) == len(at) == n:
            raise ValueError(f"{n} ids, {len(line_of)} lines and {len(at)} offsets")
        return line_of, at

    def _decide(
        self,
        found: list[int],
        id_of: Callable[[int], str],
        line_of: array[int],
        at: array[int],
    ) -> list[tuple[int, int]]:
        """The repeats among the candidates ``found`` (positions whose digest the table
        had), decided on the real ids; the others are inserted."""
        table = self._table
        repeats = []
        for pos in found:  # the candidates, in order
            task_id = id_of(pos)
            for line, offset, skip in table.find(task_id):
                if self._first_id(offset, skip, line) == task_id:
                    repeats.append((pos, line))
                    break
            else:  # only the digest is shared: a new id after all
                table.insert(task_id, line_of[pos], at[pos])
        return repeats

    def _first_id(self, offset: int, skip: int, line: int) -> str:
        recent = self._recent
        task_id = recent.get(line)
        if task_id is None:
            if len(recent) >= 4096:
                recent.clear()
            task_id = recent[line] = self._id_at(offset, skip, line)
        return task_id
