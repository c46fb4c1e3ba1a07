"""evalspec.io.quickjson decodes as json does: the same values, the same errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from evalspec.io import quickjson

DOCUMENTS = [
    '{"a": 1, "b": [1, 2.5, -3e2, true, false, null], "c": {"d": "\\u00e9\\n"}}',
    "  [1, 2]  \r\n\t",
    '"text"',
    "12345678901234567890123",
    '{"a": 1, "a": 2}',
    "NaN",
    "[Infinity, -Infinity]",
    "1e400",
    '"\\ud800"',
    "\ufeff[1]",
    "",
    "   ",
    "[1, 2",
    "[1, 2] x",
    "[1,]",
    '{"a" 1}',
    "'a'",
    '"\x01"',
    '{"a": [}',
    "[" * 100 + "]" * 100,
    "[" * 5000 + "]" * 5000,
]


def _outcome(decode: object, text: object) -> tuple[str, object]:
    try:
        value = decode(text)  # type: ignore[operator]
    except Exception as exc:  # the exception is what is compared
        return type(exc).__name__, str(exc)
    return "ok", json.dumps(value, allow_nan=True)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_loads_is_json_loads(text: str) -> None:
    assert _outcome(quickjson.loads, text) == _outcome(json.loads, text)
    data = text.encode("utf-8")
    assert _outcome(quickjson.loads, data) == _outcome(json.loads, data)


@pytest.mark.parametrize(
    "data",
    [b"\xef\xbb\xbf[1]", b"\xff\xfe[\x001\x00]\x00", b'"\xed\xa0\x80"', b"\x80", b"[1]\x00"],
)
def test_bytes_in_other_encodings_decode_as_json_loads_decodes_them(data: bytes) -> None:
    assert _outcome(quickjson.loads, data) == _outcome(json.loads, data)


class _Rejected(ValueError):
    pass


def _hooks() -> dict[str, object]:
    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        return {"pairs": [list(p) for p in items]}

    def finite(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            raise _Rejected(text)
        return value

    def constant(name: str) -> object:
        raise _Rejected(name)

    return {"object_pairs_hook": pairs, "parse_float": finite, "parse_constant": constant}


@pytest.mark.parametrize("text", DOCUMENTS)
def test_a_decoder_with_hooks_is_json_decoders(text: str) -> None:
    hooks = _hooks()
    quick = quickjson.decoder(**hooks)  # type: ignore[arg-type]
    standard = json.JSONDecoder(**hooks).decode  # type: ignore[arg-type]
    assert _outcome(quick, text) == _outcome(standard, text)


def test_a_document_that_decodes_imports_neither_json_nor_re() -> None:
    code = (
        "import sys\n"
        "had = {'json', 're'} & set(sys.modules)\n"  # an editable install's finder loads re
        "from evalspec.io.quickjson import decoder, loads\n"
        "assert loads(b'{\"a\": [1, 2.5, null]}') == {'a': [1, 2.5, None]}\n"
        "assert decoder(object_pairs_hook=dict)('{\"b\": {}}') == {'b': {}}\n"
        "print(sorted({'json', 're'} & set(sys.modules) - had))\n"
        "try:\n"
        "    loads('[1,')\n"
        "except ValueError as exc:\n"
        "    print(type(exc).__module__, type(exc).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == ["[]", "json.decoder JSONDecodeError"]
