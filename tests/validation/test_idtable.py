"""IdTable behaves exactly like a dict of first lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.validation.fast import compiled_core
from evalspec.validation.idtable import DigestIdTable, IdTable

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


# -- the compact table (digests in the compiled core) ----------------------------------

core = compiled_core()
needs_core = pytest.mark.skipif(core is None, reason="the compiled core is not built here")


class _File:
    """The lines a DigestIdTable reads again: offset -> id, counting the reads. The
    table names a line as ``skip`` lines after the one at ``offset`` (it keeps one
    offset per 64 lines), so the file walks its lines in offset order, as a file's
    reader would, and checks it lands on the offset the table was given."""

    def __init__(self) -> None:
        self.ids: dict[int, str] = {}
        self.reads = 0

    def id_at(self, offset: int, skip: int, line: int) -> str:
        self.reads += 1
        order = sorted(self.ids)
        assert 0 <= skip < 64
        return self.ids[order[order.index(offset) + skip]]


def _digest_table(weak_bits: int) -> tuple[DigestIdTable, _File]:
    assert core is not None
    lines = _File()
    return DigestIdTable(lines.id_at, core.DigestTable(weak_bits=weak_bits)), lines


@needs_core
@pytest.mark.parametrize("via", ["ids", "digests"])
@pytest.mark.parametrize("weak_bits", [1, 3, 32])
@given(batches=st.lists(_ids, max_size=4), shift=st.integers(0, 10**6))
def test_the_digest_table_reports_the_same_repeats_as_a_dict(
    via: str, weak_bits: int, batches: list[list[str]], shift: int
) -> None:
    """With 1 or 3 bits of digest nearly every id collides: the re-read ids decide.
    ``via="digests"``: the ids arrive as a worker sends them, 4-byte digests only."""
    assert core is not None
    table, file = _digest_table(weak_bits)
    exact = IdTable()
    line = 0
    for batch in batches:
        lines = list(range(line + 1, line + 1 + len(batch)))
        offsets = [10 * (n + shift) for n in lines]
        for n, task_id in zip(lines, batch, strict=True):
            file.ids[10 * (n + shift)] = task_id
        if via == "digests":
            digests = core.id_digests(batch)
            assert len(digests) == 4 * len(batch)
            got = table.add_digests(digests, lines, shift, offsets)
        else:
            got = table.add_all(batch, lines, shift, offsets)
        assert got == exact.add_all(batch, lines, shift)
        line += len(batch)
    assert len(table) == len(exact)


@needs_core
def test_colliding_digests_are_decided_on_the_real_ids() -> None:
    table, file = _digest_table(1)  # two digests for all ids
    ids = [f"id-{i}" for i in range(200)] + ["id-7", "id-150", "id-7"]
    file.ids = {100 + i: task_id for i, task_id in enumerate(ids)}
    lines = range(1, len(ids) + 1)
    got = table.add_all(ids, lines, 0, range(100, 100 + len(ids)))
    assert got == [(200, 8), (201, 151), (202, 8)]
    assert len(table) == 200


@needs_core
def test_a_repeated_first_line_is_read_once() -> None:
    table, file = _digest_table(32)
    file.ids = {0: "same"}
    table.add_all(["same"], [1], 0, [0])
    ids = ["same"] * 10_000
    got = table.add_all(ids, range(2, 10_002), 0, range(1, 10_001))
    assert got == [(pos, 1) for pos in range(10_000)]
    assert file.reads == 1


@needs_core
def test_the_digest_table_takes_8_bytes_a_slot_at_most_three_quarters_full() -> None:
    from array import array

    table, file = _digest_table(32)
    n = 300_000
    ids = [f"task-{i:08d}" for i in range(n)]
    file.ids = dict(enumerate(ids))  # 32-bit digests of 300k ids: a few meet
    assert table.add_all(ids, range(1, n + 1), 0, array("q", range(n))) == []
    assert len(table) == n
    # 2**19 slots (300k > 3/4 of 2**18) and 8192 line offsets (one per 64 lines, grown
    # by doubling): 14 bytes an id, against ~130 in a dict.
    assert repr(table) == f"<DigestIdTable: {n} ids, {2**19 * 8 + 8192 * 8} bytes>"
    assert file.reads < 100


@needs_core
def test_a_reserved_table_grows_once() -> None:
    assert core is not None
    t = core.DigestTable()
    t.reserve(300_000)
    # 1.25 slots an id (at most 4/5 full), not the next power of two (2**19 slots),
    # and no line offsets yet.
    assert t.nbytes == 375_000 * 8
    t.reserve(10)  # never shrinks
    assert t.nbytes == 375_000 * 8
    table, file = _digest_table(32)
    table.reserve(1000)
    before = table._table.nbytes
    file.ids = {i: f"t{i}" for i in range(1000)}
    assert table.add_all(list(file.ids.values()), range(1, 1001), 0, range(1000)) == []
    # Filled to what it was reserved for (1250 slots, 4/5 full): the slots did not grow;
    # the marks (one per 64 lines) start at 256 of 8 bytes.
    assert before == 1250 * 8
    assert table._table.nbytes == before + 256 * 8
    assert table.add_all(["one more"], [1001], 0, [5000]) == []
    assert table._table.nbytes == 2500 * 8 + 256 * 8  # past 4/5 full: twice the slots
    with pytest.raises(ValueError):
        t.reserve(-1)
    with pytest.raises(ValueError):
        t.reserve(2**40)


@needs_core
def test_bad_arguments_are_errors_not_crashes() -> None:
    assert core is not None
    t = core.DigestTable()
    from array import array

    with pytest.raises(ValueError):
        t.add(["a"], array("q", [1, 2]), array("q", [0]))
    with pytest.raises(ValueError):
        t.add(["a"], array("i", [1]), array("q", [0]))
    with pytest.raises(TypeError):
        t.add([b"a"], array("q", [1]), array("q", [0]))
    with pytest.raises(OverflowError):
        t.add(["a"], array("q", [2**50]), array("q", [0]))
    with pytest.raises(OverflowError):  # line numbers are 32 bits in a slot
        t.add(["a"], array("q", [2**32]), array("q", [0]))
    with pytest.raises(OverflowError):
        t.add(["a"], array("q", [1]), array("q", [2**48 + 1]))
    with pytest.raises(OverflowError):
        t.insert("a", 0, 0)
    with pytest.raises(ValueError):
        core.DigestTable(weak_bits=0)
    with pytest.raises(ValueError):
        t.add_digests(b"abc", array("q", [1]), array("q", [0]))  # not 4 bytes a digest
    with pytest.raises(ValueError):
        t.add_digests(b"abcd", array("q", [1, 2]), array("q", [0, 1]))
    with pytest.raises(TypeError):
        core.id_digests(("a",))
    with pytest.raises(TypeError):
        core.id_digests([b"a"])
    assert core.id_digests([]) == b""
    assert len(t) == 0


@needs_core
@pytest.mark.parametrize("weak_bits", [2, 32])
def test_the_validators_table_reads_a_first_line_again_from_its_mark(
    tmp_path: Path, weak_bits: int
) -> None:
    """The engine's reader of first lines on a real file: the table names a line by the
    offset of an earlier line of its 64 and a count of lines to skip; lines of 100 KB
    (over one read of 64 KiB) and lines without an id lie between. With 2-bit digests
    nearly every id is a candidate, decided on the ids read back from the file."""
    from array import array

    from evalspec.registry.build import default_registry
    from evalspec.validation.engine import _id_table

    template = json.loads(Path("fixtures/tasks.jsonl").read_text().splitlines()[0])
    lines: list[bytes] = []
    ids: list[str] = []
    numbers: list[int] = []
    offsets: list[int] = []
    at = 0
    for n in range(1, 301):
        if n % 7 == 0:
            raw = b"not json\n"  # a line with no id: skipped over, never in the table
        else:
            task_id = f"t{n % 150}"  # each id twice, 150 lines apart
            task = dict(template, task_id=task_id)
            if n % 50 == 0:
                task["metadata"] = {"pad": "x" * 100_000}
            raw = json.dumps(task).encode() + b"\n"
            ids.append(task_id)
            numbers.append(n)
            offsets.append(at)
        lines.append(raw)
        at += len(raw)
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b"".join(lines))
    with open(path, "rb") as f:
        engine_table = _id_table(f, default_registry().spec)
        assert engine_table is not None and core is not None
        table = DigestIdTable(engine_table._id_at, core.DigestTable(weak_bits=weak_bits))
        got = table.add_all(ids, array("q", numbers), 0, array("q", offsets))
    assert got == IdTable().add_all(ids, numbers)
    assert len(got) == len(ids) - len(set(ids)) > 100
