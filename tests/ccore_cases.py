"""What the compiled core's repeated-key proof must answer, decided in Python.

Shared by tests/validation/test_ccore.py (the quick differential run) and the
slow fuzz driver (tests/validation/ccore_fuzz_driver.py, under AddressSanitizer
and UndefinedBehaviorSanitizer): the reference answer, a writer of JSON with
repeated keys and escapes of every kind, hostile hand-made inputs, and byte
mutations of seed lines.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import strategies as st


class _Repeated(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Repeated
    if any(0xD800 <= ord(c) <= 0xDFFF for k in keys for c in k):
        raise _Repeated  # a lone surrogate in a key: the core leaves it to the precise path
    return dict(pairs)


def _depth(node: Any) -> int:
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, d)
        stack.extend((v, d + 1) for v in node)
    return deepest


def reference(raw: bytes, max_depth: int) -> bool | None:
    """What ``unique_keys(raw, max_depth)`` must say when ``raw`` is JSON (``None``:
    it is not JSON the standard library reads, and any answer is allowed)."""
    try:
        text = raw.decode("utf-8")
        obj = json.loads(text, object_pairs_hook=_pairs)
    except _Repeated:
        return False
    except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError
        return None
    return _depth(obj) <= max_depth


# -- a writer that can repeat keys and escape anything ------------------------------

_KEY_CHARS = 'ab:"\\/\n\u00e9\u4e2d\U0001f600'


def _escape_char(c: str, rng: random.Random) -> str:
    code = ord(c)
    short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "/": "\\/", "\b": "\\b"}
    if c in ('"', "\\") or code < 0x20:
        if c in short and rng.random() < 0.5:
            return short[c]
        return f"\\u{code:04x}" if rng.random() < 0.5 else f"\\u{code:04X}"
    roll = rng.random()
    if roll < 0.6:
        return c
    if c in short and roll < 0.7:
        return short[c]
    if code > 0xFFFF:
        hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        return f"\\u{hi:04x}\\u{lo:04X}"
    return f"\\u{code:04x}" if roll < 0.85 else f"\\u{code:04X}"


def write(node: Any, rng: random.Random) -> str:
    """JSON text of ``node``, where a ``Pairs`` object may repeat keys and every
    character of a string may be written escaped or not."""
    if isinstance(node, Pairs):
        items = (f'"{write_str(k, rng)}"{rng.choice([":", " : "])}{write(v, rng)}' for k, v in node)
        return "{" + rng.choice([",", ", "]).join(items) + "}"
    if isinstance(node, list):
        return "[" + ",".join(write(v, rng) for v in node) + "]"
    if isinstance(node, str):
        return '"' + write_str(node, rng) + '"'
    return json.dumps(node)


def write_str(text: str, rng: random.Random) -> str:
    return "".join(_escape_char(c, rng) for c in text)


class Pairs(list[tuple[str, Any]]):
    """A JSON object as its key-value pairs, in order; keys may repeat."""


_keys = st.text(st.sampled_from(_KEY_CHARS), max_size=3)
_scalars = st.none() | st.booleans() | st.integers(-5, 5) | _keys
documents = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.lists(st.tuples(_keys, inner), max_size=5).map(Pairs)
    ),
    max_leaves=12,
)
"""JSON values (objects as :class:`Pairs`) whose keys repeat often."""


# -- hostile inputs ---------------------------------------------------------------------

HOSTILE: list[bytes] = [
    b"",
    b"{",
    b"}",
    b"]",
    b"[}",
    b"{]",
    b'{"a"',
    b'{"a',
    b'{"a\\',
    b'{"a\\"',
    b'{"a\\\\":1,"a\\\\":2}',
    b'{"\\\\":1,"\\u005c":2}',
    b'{"\\"":1,"\\u0022":2}',
    b'{"a\\u":1}',
    b'{"a\\u00":1}',
    b'{"a\\u00zz":1}',
    b'{"a\\x":1}',
    b'{"\\ud800":1}',
    b'{"\\udc00":1}',
    b'{"\\ud800\\u0041":1}',
    b'{"\\ud800\\udc00":1,"\\ud800\\udc01":2}',
    b'{"\\ud83d\\ude00":1,"\xf0\x9f\x98\x80":2}',
    b'{"\\u00e9":1,"\xc3\xa9":2}',
    b'{"a":1,"b":{"a":1,"b":[{"a":1},{"a":2}]}}',
    b'{"a":1,"b":{"a":1,"b":[{"a":1},{"a":2,"a":3}]}}',
    b'{"a":{"x":1},"a":2}',
    b'{"":1,"":2}',
    b'{"":1,"\\u0000":2}',
    b'{"\x00":1,"\\u0000":2}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 49_999,
    b'"' * 10_001,
    b"\\" * 10_001,
    b'{"' + b"\\" * 10_001 + b'":1}',
    b'{"' + b"\\\\" * 5_000 + b'":1,"' + b"\\u005c" * 5_000 + b'":2}',
    b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(20_000)) + b"}",
    b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(20_000)) + b',"k0":0}',
    b"{" + b",".join(b'"\\u006b%d":%d' % (i, i) for i in range(3_000)) + b',"k2999":0}',
    b"\xff\xfe{}",
    b'\xef\xbb\xbf{"a":1}',
    b'{"a":1}\n{"a":1,"a":2}',
]
"""Inputs at every edge of the scan: open strings, odd and even runs of
backslashes, every escape (valid, cut short, invalid), surrogates alone and in
pairs, nesting past any stack, objects of many keys (repeated or not)."""


def mutations(seed: bytes, rng: random.Random, count: int) -> list[bytes]:
    """``count`` byte mutations of ``seed``: flips, JSON punctuation inserted or
    deleted, slices repeated, cut short."""
    tokens = [
        b"{",
        b"}",
        b"[",
        b"]",
        b'"',
        b"\\",
        b"\\u",
        b"\\ud800",
        b":",
        b",",
        b'"a":1,',
        b"\x00",
    ]
    out = []
    for _ in range(count):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            if not data:
                data.extend(rng.choice(tokens))
                continue
            at = rng.randrange(len(data))
            roll = rng.random()
            if roll < 0.25:
                data[at] ^= 1 << rng.randrange(8)
            elif roll < 0.5:
                data[at:at] = rng.choice(tokens)
            elif roll < 0.7:
                del data[at : at + rng.randint(1, 8)]
            elif roll < 0.85:
                end = min(len(data), at + rng.randint(1, 40))
                data[at:at] = data[at:end] * rng.randint(1, 3)
            else:
                del data[at:]
        out.append(bytes(data))
    return out
