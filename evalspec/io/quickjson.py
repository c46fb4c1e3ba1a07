"""JSON decoding without importing :mod:`json` on the warm path of ``evalspec validate``.

``import json`` imports :mod:`re` (and with it :mod:`enum`) and compiles its
patterns: ~5 ms of a warm ``evalspec validate``, whose own work on a small file
is a few milliseconds. :func:`decoder` builds the decoder ``json.JSONDecoder``
builds, on the same C scanner (``_json.make_scanner``, which is what
``JSONDecoder.scan_once`` is), and skips white space as ``JSONDecoder.decode``
does. Only the successful parse is taken from it: when the scanner raises
anything (a syntax error, a hook's exception, a nesting too deep), the text is
decoded again by :mod:`json` itself, so every error, its type and message are
exactly the standard library's. Where the C scanner is missing (another
Python), :mod:`json` decodes everything.
"""

from __future__ import annotations

# Annotations only: typing costs the warm path milliseconds. Type checkers treat
# any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_make_scanner: Callable[[Any], Callable[[str, int], tuple[Any, int]]] | None
try:
    from _json import make_scanner as _make_scanner
except ImportError:  # no C accelerator: json decodes (and imports re)
    _make_scanner = None

_WHITESPACE = " \t\n\r"
"""What ``json.decoder.WHITESPACE`` matches around a document."""

_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
"""``json.decoder``'s default ``parse_constant`` table."""


class _Context:
    """The attributes ``_json.make_scanner`` reads from a ``JSONDecoder``."""

    def __init__(
        self,
        object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
        parse_float: Callable[[str], Any] | None,
        parse_constant: Callable[[str], Any] | None,
    ) -> None:
        # The defaults are JSONDecoder's: the scanner takes its fast path for float
        # and int themselves.
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.array_hook = None  # read by newer scanners
        self.parse_float = parse_float or float
        self.parse_int = int
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__
        self.strict = True
        self.memo: dict[str, str] = {}


def decoder(
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_float: Callable[[str], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """``json.JSONDecoder(object_pairs_hook=..., parse_float=..., parse_constant=...).decode``,
    with the same results and the same errors, that imports :mod:`json` only to
    report an error."""
    keywords = {
        "object_pairs_hook": object_pairs_hook,
        "parse_float": parse_float,
        "parse_constant": parse_constant,
    }
    fallback: list[Callable[[str], Any]] = []

    def standard(text: str) -> Any:
        if not fallback:
            import json

            fallback.append(json.JSONDecoder(**keywords).decode)  # type: ignore[arg-type]
        return fallback[0](text)

    if _make_scanner is None:
        return standard
    scan = _make_scanner(_Context(object_pairs_hook, parse_float, parse_constant))

    def decode(text: str) -> Any:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except Exception:  # decoded again, to raise exactly as json does
            return standard(text)
        if end != len(text) and text[end:].strip(_WHITESPACE):
            return standard(text)  # "Extra data", as json says it
        return value

    return decode


_plain = decoder()


def loads(data: bytes | str) -> Any:
    """``json.loads(data)`` for a document in UTF-8 (or text); anything else, and every
    error, goes to :func:`json.loads` itself."""
    text: str
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if "\x00" in text[:2]:  # json.loads would take it for UTF-16 or UTF-32
            text = ""
    else:
        text = data
    if not text or text[0] == "\ufeff":  # a BOM json.loads reads past or refuses
        import json

        return json.loads(data)  # its encoding detection, its errors
    return _plain(text)


__all__ = ["decoder", "loads"]
