"""The version table: chain order, replay and the category gate."""

from __future__ import annotations

import pytest

from evalspec.errors import MigrationError, SpecVersionError
from evalspec.versions import (
    AddCategory,
    AddMetric,
    AddPostProcess,
    Migration,
    order_chain,
    replay,
)


def mig(version: int, parent: int | None, *ops: object, origin: str = "") -> Migration:
    return Migration(version, parent, f"v{version}", ops, origin=origin)  # type: ignore[arg-type]


BASE = (
    AddMetric("m1"),
    AddPostProcess("r1"),
    AddCategory("c1", ("m1",), ("r1",), ("f.jsonl",)),
)


def test_chain_is_returned_in_order() -> None:
    chain = order_chain([mig(3, 2), mig(1, None, *BASE), mig(2, 1)])
    assert [m.version for m in chain] == [1, 2, 3]


@pytest.mark.parametrize(
    ("migrations", "message"),
    [
        ([mig(1, None, origin="a"), mig(1, None, origin="b")], "duplicate version 1: from a and b"),
        ([mig(1, None), mig(2, 1), mig(3, 1)], "two heads: versions 2, 3 all have parent 1"),
        ([mig(1, None), mig(3, 2)], "version 3 names parent 2, which does not exist"),
        ([mig(1, None), mig(3, 2)], "gap: version(s) 2 missing"),
        ([mig(1, None), mig(2, 3), mig(3, 2)], "cycle: 2 -> 3 -> 2"),
        ([mig(2, None)], "version 2 has no parent but only version 1 may be the base"),
        ([mig(1, None), mig(3, 1)], "version 3 follows parent 1: versions must go up by one"),
    ],
)
def test_chain_problems_are_reported_by_name(migrations: list[Migration], message: str) -> None:
    with pytest.raises(MigrationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        order_chain(migrations)


def test_replay_builds_each_version() -> None:
    chain = order_chain(
        [
            mig(1, None, *BASE),
            mig(2, 1, AddMetric("m2"), AddCategory("c2", ("m1", "m2"), ("r1",), ("g.jsonl",))),
        ]
    )
    v1, v2 = replay(chain, 1), replay(chain)
    assert list(v1.categories) == ["c1"] and list(v2.categories) == ["c1", "c2"]
    assert v2.categories["c2"].metrics == ("m1", "m2")
    assert v2.categories["c2"].added_in == 2
    assert v1.added_in_later("category", "c2") == 2
    assert v1.added_in_later("metric", "m2") == 2
    assert v2.added_in_later("category", "c2") is None


@pytest.mark.parametrize("version", [0, 3, -1])
def test_replay_refuses_a_version_outside_the_table(version: int) -> None:
    chain = order_chain([mig(1, None, *BASE), mig(2, 1)])
    with pytest.raises(SpecVersionError, match=r"holds 1\.\.2"):
        replay(chain, version)


def test_empty_table_is_an_error() -> None:
    with pytest.raises(SpecVersionError, match="empty"):
        replay(())


@pytest.mark.parametrize(
    ("category", "missing"),
    [
        (AddCategory("c", (), ("r1",), ("f",)), "at least one metric"),
        (AddCategory("c", ("m1",), (), ("f",)), "at least one post-process rule"),
        (AddCategory("c", ("m1",), ("r1",), ()), "at least one fixture"),
    ],
)
def test_a_category_needs_a_metric_a_rule_and_a_fixture(
    category: AddCategory, missing: str
) -> None:
    chain = order_chain([mig(1, None, AddMetric("m1"), AddPostProcess("r1"), category)])
    with pytest.raises(
        MigrationError, match=f"migration 1: category 'c' is added without {missing}"
    ):
        replay(chain)


def test_a_category_binds_only_declared_names() -> None:
    chain = order_chain(
        [mig(1, None, AddPostProcess("r1"), AddCategory("c", ("m9",), ("r1",), ("f",)))]
    )
    with pytest.raises(MigrationError, match="binds metric 'm9'"):
        replay(chain)
    later = order_chain(
        [mig(1, None, AddPostProcess("r1"), AddCategory("c", ("m2",), ("r1",), ("f",))),
         mig(2, 1, AddMetric("m2"))]
    )  # fmt: skip
    with pytest.raises(MigrationError, match="binds metric 'm2'"):
        replay(later, 1)


def test_a_name_cannot_be_added_twice() -> None:
    chain = order_chain([mig(1, None, *BASE), mig(2, 1, AddMetric("m1"))])
    with pytest.raises(MigrationError, match="metric 'm1' is added twice"):
        replay(chain)
