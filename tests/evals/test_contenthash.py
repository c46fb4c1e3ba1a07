"""The content hash depends on the records, not on how their lines are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evalspec.evals.contenthash import content_hash, file_content_hash
from evalspec.evals.records import is_lfs_pointer, read_records

scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
records = st.lists(st.dictionaries(st.text(max_size=6), values, max_size=4), max_size=5)


def _file(recs: list[dict[str, Any]], *, reverse_keys: bool, spaced: bool) -> bytes:
    lines = []
    for r in recs:
        obj = dict(reversed(list(r.items()))) if reverse_keys else r
        sep = (" ,  ", " :  ") if spaced else (",", ":")
        lines.append(json.dumps(obj, separators=sep, ensure_ascii=not spaced))
    return ("\n\n".join(lines) + ("\r\n" if spaced else "\n")).encode("utf-8")


@given(records, st.booleans(), st.booleans())
def test_hash_is_invariant_under_key_order_and_whitespace(
    recs: list[dict[str, Any]], reverse_keys: bool, spaced: bool
) -> None:
    plain = read_records(_file(recs, reverse_keys=False, spaced=False))
    other = read_records(_file(recs, reverse_keys=reverse_keys, spaced=spaced))
    assert plain.complete and other.complete
    assert content_hash(v for _, v in plain.values) == content_hash(v for _, v in other.values)


@given(records.filter(lambda r: len(r) >= 2 and r[0] != r[1]))
def test_hash_changes_when_records_are_reordered(recs: list[dict[str, Any]]) -> None:
    swapped = [recs[1], recs[0], *recs[2:]]
    assert content_hash(recs) != content_hash(swapped)


def test_hash_has_a_prefix_and_is_stable() -> None:
    assert content_hash([{"a": 1}]) == content_hash([{"a": 1}])
    assert content_hash([{"a": 1}]).startswith("sha256:")
    assert content_hash([{"a": 1}]) != content_hash([{"a": 2}])


def test_lfs_pointer_shape() -> None:
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 9\n"
    assert is_lfs_pointer(pointer)
    assert not is_lfs_pointer(b'{"task_id": "version https://git-lfs.github.com/spec/v1"}\n')
    assert not is_lfs_pointer(pointer + b"x" * 2000)


def test_lint_and_manifest_agree_on_the_lfs_pointer_size_boundary() -> None:
    from evalspec.manifest.lfs import MAX_POINTER_BYTES, parse_lfs_pointer

    head = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 9\n"

    def padded(total: int) -> bytes:
        # An extra key (git-lfs keeps keys it does not know) pads the pointer to `total` bytes.
        filler = b"x-pad "
        return head + filler + b"a" * (total - len(head) - len(filler) - 1) + b"\n"

    # git-lfs reads a blob as a pointer only below 1024 bytes.
    assert MAX_POINTER_BYTES == 1024
    below, at = padded(1023), padded(1024)
    assert (len(below), len(at)) == (1023, 1024)
    assert is_lfs_pointer(below) and parse_lfs_pointer(below) is not None
    assert not is_lfs_pointer(at) and parse_lfs_pointer(at) is None


def test_file_hash_matches_record_hash(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"b": 1, "a": [1, 2]}\n\n{"c": null}\n')
    assert file_content_hash(path) == content_hash([{"a": [1, 2], "b": 1}, {"c": None}])
    path.write_bytes(b'{"b": 1}\nnot json\n')
    assert file_content_hash(path) is None
