"""The content hash of a dataset: a fingerprint of its records, not of its bytes.

``sha256:`` + hex SHA-256 over, for each record in file order, its canonical
JSON (sorted keys, no insignificant whitespace, UTF-8) followed by ``\\n``.
Reordering keys or reformatting a line leaves the hash unchanged; changing,
adding, removing or reordering records changes it. Reports and manifests
cite it to say exactly which data a score was computed on.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from evalspec.evals.records import read_records

PREFIX = "sha256:"


def canonical(record: Any) -> bytes:
    """A record's canonical JSON bytes."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


_FLOAT_PROBES: tuple[Any, ...] = (
    0.0, -0.0, 1.0, 0.1, -2.5, 123456.789, 1e-4, -1e-4, 0.00012, 9.999999999999999e-05,
    1.5e-05, 1e-10, 5e-324, 1e15, 9999999999999998.0, 1e16, -1e16, 1.5e17, 1e22, 1e100,
    1.7976931348623157e308, 2.0**63, 0.30000000000000004,
)  # fmt: skip
_OTHER_PROBES: tuple[Any, ...] = (
    {"b": [1, -2, 2**64, -(2**70), 10**30, True, False, None], "a": {"\U00010000": 1, "\uffff": 2}},
    {"s": "".join(map(chr, range(0x80))) + '\x85\xa0\u2028\u2029\ufeff\U0001f600 "\\ é 答案'},
    {"z": [], "y": {}, "x": [[{}]], "": ""},
)


def _exponent_float(value: Any) -> bool:
    """Whether ``value`` holds, at any depth, a float Python writes with an exponent
    (``repr`` does below 1e-4 and from 1e16 up, 0 aside) or one that is not finite."""
    try:
        return _exponent_float_in((value,))
    except RecursionError:  # deeper than the interpreter's stack: the walk with a list
        return _exponent_float_walked(value)


def _exponent_float_in(container: Any) -> bool:
    """:func:`_exponent_float` of a dict's values or a list's items, by recursion (a
    for loop per container: a third faster than a stack entry per item)."""
    for item in container.values() if type(container) is dict else container:
        t = type(item)
        if t is float:
            if item != 0.0 and not 1e-4 <= abs(item) < 1e16:  # NaN too
                return True
        elif (t is dict or t is list) and _exponent_float_in(item):
            return True
    return False


def _exponent_float_walked(value: Any) -> bool:
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        t = type(node)
        if t is float:
            if node != 0.0 and not 1e-4 <= abs(node) < 1e16:  # NaN too
                return True
        elif t is dict:
            extend(node.values())
        elif t is list:
            extend(node)
    return False


def canonical_of_vouched() -> Callable[[Any], bytes]:
    """:func:`canonical` for the tasks the validator's fast path vouched for: the same
    bytes, about three times faster, with msgspec (the ``fast`` extra); without it, or
    with a msgspec that writes differently, :func:`canonical` itself.

    The argument must be such a task, as the dict ``FastPath.vouch`` returns or the
    struct ``FastPath.vouch_struct`` returns (written as its dict: fields sorted,
    unset ones left out): its values outside ``metadata`` are strings, lists of
    strings or lists of objects of strings (no float, no lone surrogate). Why the
    bytes are the same: ``msgspec.json`` with sorted keys writes strings (every
    code point; only ``"``, ``\\`` and the controls below U+0020 escaped, as
    ``\\n`` or ``\\u001f``), integers of any size, ``true``, ``false``, ``null`` and
    the structure exactly as ``json.dumps(sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` does. Floats differ in notation only: both write the
    shortest round-tripping digits, and Python switches to an exponent below 1e-4
    and from 1e16 up, where msgspec writes ``0.00001`` or ``1e16``; a task whose
    metadata (the only place a float can be) holds such a float is written by
    :func:`canonical`. The probes above check all of that when the encoder is made
    (a failed probe means no fast path), and the tests compare the two on every
    code point, on ~110,000 floats and on generated tasks.
    """
    try:
        import msgspec
    except ImportError:  # the `fast` extra is optional
        return canonical

    encode = msgspec.json.Encoder(order="sorted").encode
    to_builtins, exponent_float = msgspec.to_builtins, _exponent_float
    for probe in (*_FLOAT_PROBES, *_OTHER_PROBES):
        if not exponent_float(probe) and encode(probe) != canonical(probe):
            return canonical

    def fast(record: Any) -> bytes:
        if type(record) is dict:
            meta = record.get("metadata")
            if meta and exponent_float(meta):
                return canonical(record)
        else:
            meta = record.metadata
            if meta and exponent_float(meta):  # msgspec.UNSET is false
                return canonical(to_builtins(record))
        out: bytes = encode(record)
        return out

    return fast


def content_hash(records: Iterable[Any]) -> str:
    """``sha256:<hex>`` of the records in order."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(canonical(record))
        digest.update(b"\n")
    return PREFIX + digest.hexdigest()


def file_content_hash(path: str | os.PathLike[str]) -> str | None:
    """The content hash of a dataset file; ``None`` when a line is not JSON.

    :raises OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        records = read_records(f.read())
    if not records.complete:
        return None
    return content_hash(value for _, value in records.values)
