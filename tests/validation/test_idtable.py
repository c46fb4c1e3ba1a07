"""IdTable behaves exactly like a dict of first lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.validation.idtable import IdTable

_ids = st.lists(st.text(max_size=6) | st.sampled_from(["a", "b", "\ud800", "é", ""]), max_size=300)


@given(batches=st.lists(_ids, max_size=4), shift=st.integers(0, 10**12))
# Ids repeat within a batch and across batches, both at once.
def test_id_table_reports_the_same_repeats_as_a_dict(batches: list[list[str]], shift: int) -> None:
    table = IdTable()
    first: dict[str, int] = {}
    line = 0
    for batch in batches:
        lines = list(range(line + 1, line + 1 + len(batch)))
        expected = []
        for pos, (task_id, n) in enumerate(zip(batch, lines, strict=True)):
            if task_id in first:
                expected.append((pos, first[task_id]))
            else:
                first[task_id] = n + shift
        assert table.add_all(batch, lines, shift) == expected
        line += len(batch)
    assert len(table) == len(first)
    for task_id, n in first.items():
        assert task_id in table
        assert table.get(task_id) == n
    assert table.get("not-an-id-" * 3) is None


class _SameHash(str):
    """Different ids with one hash: equality must decide, not the hash."""

    def __hash__(self) -> int:
        return 42


def test_id_table_tells_colliding_ids_apart() -> None:
    table = IdTable()
    ids = [_SameHash(s) for s in ("x", "y", "z", "x")]
    assert table.add_all(ids, [1, 2, 3, 4]) == [(3, 1)]
    assert [table.get(_SameHash(s)) for s in "xyzw"] == [1, 2, 3, None]


def _first_lines(batches: list[list[str]]) -> list[list[tuple[int, int]]]:
    """What a plain dict of first lines says each batch repeats (lines numbered from 1)."""
    first: dict[str, int] = {}
    out, line = [], 0
    for batch in batches:
        found = []
        for pos, task_id in enumerate(batch):
            line += 1
            if task_id in first:
                found.append((pos, first[task_id]))
            else:
                first[task_id] = line
        out.append(found)
    return out


@pytest.mark.parametrize("repeats", [0, 1, 63, 64, 65, 500])
def test_a_batch_with_few_or_many_repeats_reports_each_in_position_order(repeats: int) -> None:
    # Repeats of an earlier batch only, scattered through the batch: the positions
    # come back in order, each with the line that first used the id.
    earlier = [f"id-{i}" for i in range(1000)]
    later = [f"new-{i}" for i in range(1000)]
    for k in range(repeats):
        later[(k * 7919) % 1000] = earlier[(k * 104729) % 1000]
    assert len(set(later)) == len(later)  # no id twice within the batch
    table = IdTable()
    got = [
        table.add_all(earlier, range(1, 1001)),
        table.add_all(later, range(1001, 2001)),
    ]
    assert got == _first_lines([earlier, later])
    assert len(got[1]) == repeats
    assert len(table) == 2000 - repeats
