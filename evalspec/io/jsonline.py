"""Strict parsing of one JSONL line.

The standard ``json`` module is lenient where a task file must not be: it
keeps the last of two equal keys, accepts NaN and Infinity, turns ``1e400``
into infinity, accepts lone surrogate escapes, and raises four different
exception types on bad input. :func:`parse_line` closes each of those holes
and always returns instead of raising.
"""

from __future__ import annotations

import itertools

from evalspec.io.quickjson import decoder

# Not `from typing import ...`: typing costs the warm `evalspec validate`
# milliseconds, and Any is only an annotation here. Nor json and re at import
# (with the enum re imports, ~5 ms of it): a line that parses needs neither (see
# evalspec.io.quickjson), and the few that hold a \\u escape or an error import
# them then. Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import json
    from typing import Any

_INF = float("inf")


def _surrogate_escape(text: str) -> bool:
    """Whether ``text`` holds an escape of a surrogate (``\\uD800``...``\\uDFFF``)."""
    if "\\u" not in text:  # the common line: no escape at all, and no re imported
        return False
    import re

    return re.search(r"\\u[dD][89a-fA-F]", text) is not None


class ParseProblem:
    """One reason a line does not parse: a rule code, a path (or None) and a message.

    A plain, frozen, slotted class rather than attrs: this module is on the warm
    path of ``evalspec validate``, which does not import attrs.
    """

    __slots__ = ("field", "message", "rule")

    rule: str
    field: str | None
    message: str

    def __init__(self, rule: str, field: str | None, message: str) -> None:
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "message", message)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ParseProblem is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ParseProblem is frozen: cannot delete {name!r}")

    def _key(self) -> tuple[str, str | None, str]:
        return (self.rule, self.field, self.message)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ParseProblem)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"ParseProblem(rule={self.rule!r}, field={self.field!r}, message={self.message!r})"


class _Rejected(ValueError):
    pass


class _DupDict(dict[str, object]):
    """A decoded object that repeated some keys (kept so their path can be found)."""

    __slots__ = ("duplicates",)


def _reject_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not valid JSON (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value == _INF or value == -_INF:
        raise _Rejected(f"number {text[:40]} overflows to infinity")
    return value


_repeats_seen = itertools.count()
"""Advanced (atomically: one C call) by every object that repeats a key, in any
thread: a parse that saw it stand still found none, and needs no walk."""


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    next(_repeats_seen)
    seen: set[str] = set()
    dups: list[str] = []
    for key, _ in pairs:
        if key in seen and key not in dups:
            dups.append(key)
        seen.add(key)
    out = _DupDict(obj)
    out.duplicates = dups  # type: ignore[attr-defined]
    return out


_decode = decoder(
    object_pairs_hook=_pairs_hook,
    parse_float=_finite_float,
    parse_constant=_reject_constant,
)
"""``json.JSONDecoder(...).decode`` with these hooks (its results and its errors)."""


def parse_line(text: str) -> tuple[Any, list[ParseProblem]]:
    """Parse one decoded line; ``(value, [])`` or ``(None, problems)``."""
    before = next(_repeats_seen)
    try:
        value = _decode(text)
    except _Rejected as exc:
        return None, [ParseProblem("invalid_json", None, str(exc))]
    except _json_decode_error() as exc:
        msg = f"not valid JSON: {exc.msg} at column {exc.colno}"
        return None, [ParseProblem("invalid_json", None, msg)]
    except RecursionError:
        return None, [ParseProblem("invalid_json", None, "not parseable: nesting is too deep")]
    except ValueError as exc:  # int() beyond sys.get_int_max_str_digits()
        return None, [ParseProblem("invalid_json", None, f"not parseable: {exc}")]
    problems: list[ParseProblem] = []
    if _surrogate_escape(text):
        for path in _paths_with_surrogates(value):
            problems.append(
                ParseProblem(
                    "invalid_json",
                    path,
                    "a \\u escape encodes a lone surrogate, which is not a Unicode character",
                )
            )
        if problems:
            return None, problems
    # Another thread's parse may have advanced the count too: then the walk
    # finds nothing here.
    repeated = next(_repeats_seen) != before + 1
    for path, key in _duplicate_keys(value) if repeated else ():
        where = f"in {path}" if path else "at the top level"
        problems.append(
            ParseProblem(
                "duplicate_key",
                _join(path, key),
                f"key {_dumps(key)} appears more than once {where}; "
                "JSON readers keep only the last value, so remove the repeat",
            )
        )
    if problems:
        return None, problems
    return value, []


def _json_decode_error() -> type[json.JSONDecodeError]:
    """``json.JSONDecodeError``, imported when a parse failed (the decoder imported json
    to raise it): an ``except`` clause evaluates its class only then."""
    import json

    return json.JSONDecodeError


def _dumps(key: str) -> str:
    import json

    return json.dumps(key)


def decode_bytes(raw: bytes) -> tuple[str | None, ParseProblem | None]:
    """Strict UTF-8 decoding of one line's bytes."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        msg = f"invalid UTF-8 at byte {exc.start} of the line ({exc.reason})"
        return None, ParseProblem("invalid_json", None, msg)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{_dumps(key)}]"


def _walk(value: Any) -> list[tuple[str, Any]]:
    """(path, node) for every node, iteratively (the value may be ~1000 deep)."""
    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        if isinstance(node, dict):
            stack.extend((_join(path, k), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((_join(path, i), v) for i, v in reversed(list(enumerate(node))))
    return out


def _duplicate_keys(value: Any) -> list[tuple[str, str]]:
    if not _has_dups(value):
        return []
    return [
        (path, key)
        for path, node in _walk(value)
        if isinstance(node, _DupDict)
        for key in node.duplicates  # type: ignore[attr-defined]
    ]


def _has_dups(value: Any) -> bool:
    # Fast exit for the common case: only a top-level dict without nesting needs no walk.
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _DupDict):
            return True
        if isinstance(node, dict):
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))
    return False


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _paths_with_surrogates(value: Any) -> list[str]:
    found = []
    for path, node in _walk(value):
        if isinstance(node, str) and _has_surrogate(node):
            found.append(path or "(value)")
        elif isinstance(node, dict):
            found.extend(_join(path, k) for k in node if _has_surrogate(k))
    return found
