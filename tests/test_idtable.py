"""IdTable behaves exactly like a dict of first lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalspec.idtable import IdTable

_ids = st.lists(st.text(max_size=6) | st.sampled_from(["a", "b", "\ud800", "é", ""]), max_size=300)


@given(batches=st.lists(_ids, max_size=4), shift=st.integers(0, 10**12))
def test_id_table_reports_the_same_repeats_as_a_dict(batches: list[list[str]], shift: int) -> None:
    table = IdTable(capacity=1)  # start tiny so growth is exercised
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
