"""order_chain: a linear chain 1..N, or every defect named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.errors import ChainError, MigrationError
from evalspec.versions import AddMetric, Migration, order_chain


def mig(version: int, parent: int | None, origin: str | None = None) -> Migration:
    return Migration(
        version, parent, f"m{version}", (AddMetric(f"m{version}"),), origin=origin or f"s{version}"
    )


def problems(*migs: Migration) -> tuple[str, ...]:
    with pytest.raises(ChainError) as info:
        order_chain(migs)
    assert isinstance(info.value, MigrationError)  # callers catching the old type still work
    return info.value.problems


def test_a_linear_chain_is_returned_in_order() -> None:
    chain = order_chain([mig(3, 2), mig(1, None), mig(2, 1)])
    assert [m.version for m in chain] == [1, 2, 3]


def test_duplicate_version_names_both_origins() -> None:
    found = problems(mig(1, None), mig(2, 1, "plugin a"), mig(2, 1, "plugin b"))
    assert (
        "duplicate version 2: from plugin a and plugin b; two migrations cannot share a version"
        in found
    )


def test_two_heads_are_named() -> None:
    found = problems(mig(1, None), mig(2, 1), mig(3, 1))
    assert any(
        p.startswith("two heads: versions 2 (from s2), 3 (from s3) all have parent 1")
        for p in found
    )


def test_two_bases_are_two_heads_of_nothing() -> None:
    found = problems(mig(1, None), mig(2, None))
    assert any("all have no parent (several bases)" in p for p in found)
    assert "version 2 (from s2) has no parent but only version 1 may be the base" in found


def test_gap_is_named() -> None:
    found = problems(mig(1, None), mig(2, 1), mig(4, 3))
    assert "gap: version(s) 3 missing" in found


def test_nonexistent_parent_is_named() -> None:
    found = problems(mig(1, None), mig(2, 7))
    assert "version 2 (from s2) names parent 7, which does not exist" in found


def test_cycle_is_named() -> None:
    found = problems(mig(1, None), mig(2, 3), mig(3, 2))
    assert "cycle: 2 -> 3 -> 2" in found


def test_skipping_a_number_is_named() -> None:
    found = problems(mig(1, None), mig(3, 1))
    assert "version 3 (from s3) follows parent 1: versions must go up by one" in found


CHAINS = st.integers(1, 12).map(lambda n: [mig(1, None)] + [mig(v, v - 1) for v in range(2, n + 1)])


@given(chain=CHAINS, data=st.data())
def test_order_of_contribution_does_not_change_the_verdict(
    chain: list[Migration], data: st.DataObject
) -> None:
    """pluggy calls plugins in LIFO order: nothing may depend on it."""
    shuffled = data.draw(st.permutations(chain))
    assert order_chain(shuffled) == order_chain(chain)
    broken = [*shuffled, mig(len(chain) + 2, len(chain) + 1)]  # a gap after the head
    with pytest.raises(ChainError) as info:
        order_chain(data.draw(st.permutations(broken)))
    assert f"gap: version(s) {len(chain) + 1} missing" in info.value.problems
