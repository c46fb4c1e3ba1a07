"""evalspec's one template language: ``{field}`` substitution, and nothing that runs code.

It fills the fields of an import mapping (:mod:`evalspec.importing`) and the task
id a run log's record is scored under (``evalspec score --id-template``,
:mod:`evalspec.scoring.runlogs`).

A template is text with ``{...}`` holes; ``{{`` and ``}}`` are literal braces. A hole
names a value of the row and may pass it through filters::

    Question: {question}\\nAnswer:        a column
    {choices[0]}  {meta.subject}         an index into a list, a key of an object
    {answer|after:####|strip}            filters, left to right
    {doc_id|plus:1}                      an integer, plus a constant
    {["Unnamed: 0"]}  {meta["a key"]}    a name that is not a word, quoted
    {@row}  {@stem}                      the row number; the input file's name up to its first dot
    {@choices|lettered}                  the mapping's ``choices``, as "A. ...\\nB. ..."

This is deliberately not Jinja (which lm-evaluation-harness uses for its
``doc_to_text``): a mapping arrives in a pull request, and a template language
that can call methods or reach attributes is code from a stranger. Here a hole can
only read the row and apply one of :data:`FILTERS`, so a template is total: it
gives text or a :class:`TemplateValueError` naming the hole, never anything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from evalspec.errors import EvalspecError

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class TemplateSyntaxError(EvalspecError):
    """A template cannot be read (an unclosed brace, an unknown filter, ...)."""


class TemplateValueError(EvalspecError):
    """A template cannot be filled from one row; ``rule`` says why, for the row's report."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        super().__init__(message)


MISSING_COLUMN = "missing_column"
"""The row has no such column (or key, or index)."""
BAD_VALUE = "bad_value"
"""The row has the column, but a filter or the hole cannot use its value."""


def _text(value: Any, where: str) -> str:
    """A scalar as the text a task field holds (JSON's spelling of true, false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    if value is None:
        raise TemplateValueError(BAD_VALUE, f"{where} is null")
    if isinstance(value, (list, tuple)):
        raise TemplateValueError(
            BAD_VALUE, f"{where} is a list; pick one item ({where}[0]) or join it (|join:, )"
        )
    if isinstance(value, Mapping):
        raise TemplateValueError(BAD_VALUE, f"{where} is an object; pick one key ({where}.key)")
    # Parquet columns can hold bytes, dates, decimals: no text of theirs is assumed.
    raise TemplateValueError(BAD_VALUE, f"{where} is a {type(value).__name__} value, not text")


def _items(value: Any, where: str, name: str) -> Sequence[Any]:
    if not isinstance(value, (list, tuple)):
        raise TemplateValueError(BAD_VALUE, f"|{name} needs a list, and {where} is not one")
    return value


def _after(value: Any, where: str, arg: str) -> str:
    text = _text(value, where)
    if arg not in text:
        raise TemplateValueError(BAD_VALUE, f"|after:{arg} found no {arg!r} in {where}")
    return text.rpartition(arg)[2]


def _before(value: Any, where: str, arg: str) -> str:
    text = _text(value, where)
    if arg not in text:
        raise TemplateValueError(BAD_VALUE, f"|before:{arg} found no {arg!r} in {where}")
    return text.partition(arg)[0]


def _letter(value: Any, where: str, arg: str) -> str:
    """0 -> A, 1 -> B, ...: the answer index of a choices list, as MCQ targets spell it."""
    text = _text(value, where).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) >= len(LETTERS):
        raise TemplateValueError(
            BAD_VALUE, f"|letter needs an index from 0 to 25, and {where} is {text[:40]!r}"
        )
    return LETTERS[int(text)]


def _join(value: Any, where: str, arg: str) -> str:
    items = _items(value, where, "join")
    return arg.join(_text(v, f"{where}[{i}]") for i, v in enumerate(items))


def _lettered(value: Any, where: str, arg: str) -> str:
    """``A. first\\nB. second``: how MMLU-style prompts list their choices."""
    items = _items(value, where, "lettered")
    if len(items) > len(LETTERS):
        raise TemplateValueError(BAD_VALUE, f"{where} has more than {len(LETTERS)} choices")
    sep = arg or "\n"
    return sep.join(f"{LETTERS[i]}. {_text(v, f'{where}[{i}]')}" for i, v in enumerate(items))


_INTEGER = re.compile(r"-?[0-9]{1,18}")
"""An integer |plus adds or takes: 18 digits at most, so the sum stays a plain int."""


def _plus(value: Any, where: str, arg: str) -> str:
    """An integer plus a constant: lm-eval counts docs from 0, ``@row`` from 1."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TemplateValueError(BAD_VALUE, f"|plus needs an integer, and {where} is not one")
    text = str(value).strip()
    if not _INTEGER.fullmatch(text):
        raise TemplateValueError(BAD_VALUE, f"|plus needs an integer, and {where} is {text[:40]!r}")
    return str(int(text) + int(arg))


def _plain(method: Callable[[str], str]) -> Callable[[Any, str, str], str]:
    return lambda value, where, arg: method(_text(value, where))


NO_ARGUMENT, ARGUMENT, OPTIONAL_ARGUMENT, INTEGER_ARGUMENT = (
    "none",
    "required",
    "optional",
    "integer",
)
"""A filter's argument: none, required text, optional text, a required integer
(refused when the template is read, not row by row)."""

FILTERS: Mapping[str, tuple[str, Callable[[Any, str, str], str]]] = {
    "strip": (NO_ARGUMENT, _plain(str.strip)),
    "rstrip": (NO_ARGUMENT, _plain(str.rstrip)),
    "lower": (NO_ARGUMENT, _plain(str.lower)),
    "upper": (NO_ARGUMENT, _plain(str.upper)),
    "after": (ARGUMENT, _after),
    "before": (ARGUMENT, _before),
    "letter": (NO_ARGUMENT, _letter),
    "join": (ARGUMENT, _join),
    "lettered": (OPTIONAL_ARGUMENT, _lettered),
    "plus": (INTEGER_ARGUMENT, _plus),
}
"""name -> (whether it takes an argument, function of (value, where, argument)).

``after:SEP`` is the text after the last SEP, ``before:SEP`` before the first (a
value without SEP is a row problem, not an empty string: GSM8K's ``#### 18`` missing
from a row must be seen); ``join:SEP`` joins a list; ``lettered[:SEP]`` lists it as
``A. x`` lines; ``letter`` turns an index into its letter. In an argument, ``\\n``
and ``\\t`` are a newline and a tab, ``\\|``, ``\\}`` and ``\\\\`` the character."""

_NAME = re.compile(r"@?\w+|\[\"((?:[^\"\\]|\\.)*)\"\]")
_STEP = re.compile(r"\[(-?\d+)\]|\.(\w+)|\[\"((?:[^\"\\]|\\.)*)\"\]")
_ESCAPES = {"n": "\n", "t": "\t", "|": "|", "}": "}", "\\": "\\", "{": "{", '"': '"'}


@attrs.frozen
class Hole:
    """One ``{...}``: where the value comes from, the steps into it, the filters after."""

    name: str
    special: bool
    """``name`` is one of the ``@names`` (written bare: ``{["@row"]}`` is a column)."""
    steps: tuple[int | str, ...]
    filters: tuple[tuple[str, str], ...]
    source: str
    """The hole as written, for messages."""

    def value(self, row: Mapping[str, Any], specials: Mapping[str, Any]) -> Any:
        """The value before filters: the column (or special name), then each step into it."""
        if self.special:
            value = specials[self.name]
        elif self.name in row:
            value = row[self.name]
        else:
            known = ", ".join(sorted(row)[:12]) or "none"
            raise TemplateValueError(
                MISSING_COLUMN, f"the row has no column {self.name!r} (columns: {known})"
            )
        where = self.name
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, (list, tuple)) or not -len(value) <= step < len(value):
                    size = f"a list of {len(value)}" if isinstance(value, (list, tuple)) else None
                    raise TemplateValueError(
                        MISSING_COLUMN,
                        f"{where}[{step}]: {where} is {size or 'not a list'}",
                    )
                value = value[step]
                where = f"{where}[{step}]"
            else:
                if not isinstance(value, Mapping) or step not in value:
                    what = "has no key" if isinstance(value, Mapping) else "is not an object, so no"
                    raise TemplateValueError(MISSING_COLUMN, f"{where} {what} {step!r}")
                value = value[step]
                where = f"{where}.{step}"
        return value

    def fill(self, row: Mapping[str, Any], specials: Mapping[str, Any]) -> Any:
        """The hole's value after its filters (text once any filter ran)."""
        value = self.value(row, specials)
        where = self.source
        for name, arg in self.filters:
            value = FILTERS[name][1](value, where, arg)
        return value


@attrs.frozen
class Template:
    """A compiled template: literal text and holes, in order."""

    source: str
    parts: tuple[str | Hole, ...]

    @property
    def single(self) -> Hole | None:
        """The hole when the template is exactly one hole (its value may be a list)."""
        return self.parts[0] if len(self.parts) == 1 and isinstance(self.parts[0], Hole) else None

    def render(self, row: Mapping[str, Any], specials: Mapping[str, Any]) -> str:
        """The template filled from ``row``. :raises TemplateValueError:"""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(_text(part.fill(row, specials), part.source))
        return "".join(out)

    def values(self, row: Mapping[str, Any], specials: Mapping[str, Any]) -> list[str]:
        """A list of texts: a single hole whose value is a list gives its items, any other
        template its one text. :raises TemplateValueError:"""
        hole = self.single
        if hole is not None:
            value = hole.fill(row, specials)
            if isinstance(value, (list, tuple)):
                return [_text(v, f"{hole.source}[{i}]") for i, v in enumerate(value)]
        return [self.render(row, specials)]


def _unescape(arg: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), arg)


def _split_filters(body: str) -> list[str]:
    """``name|f1:a\\|b|f2`` split at the unescaped ``|``."""
    pieces, current, i = [], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            current.append(body[i : i + 2])
            i += 2
            continue
        if c == "|":
            pieces.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    pieces.append("".join(current))
    return pieces


def _hole(body: str, specials: Sequence[str]) -> Hole:
    head, *filter_texts = _split_filters(body)
    head = head.strip()
    match = _NAME.match(head)
    if match is None:
        raise TemplateSyntaxError(f"{{{body}}} does not start with a column name")
    # {["Unnamed: 0"]}: a column whose name is not a word.
    name = match[0] if match[1] is None else _unescape(match[1])
    special = match[1] is None and name.startswith("@")
    rest = head[match.end() :]
    if special and name not in specials:
        raise TemplateSyntaxError(
            f"{{{body}}}: unknown name {name!r} (known: {', '.join(specials)})"
        )
    steps: list[int | str] = []
    while rest:
        step = _STEP.match(rest)
        if step is None:
            raise TemplateSyntaxError(
                f"{{{body}}}: cannot read {rest!r} (write [N] for an index, .key or "
                '["any key"] for a key)'
            )
        if step[1] is not None:
            steps.append(int(step[1]))
        else:
            steps.append(step[2] if step[2] is not None else _unescape(step[3]))
        rest = rest[step.end() :]
    filters = []
    for text in filter_texts:
        fname, colon, raw_arg = text.partition(":")
        fname = fname.strip()
        if fname not in FILTERS:
            raise TemplateSyntaxError(
                f"{{{body}}}: unknown filter {fname!r} (known: {', '.join(FILTERS)})"
            )
        argument = FILTERS[fname][0]
        if argument in (ARGUMENT, INTEGER_ARGUMENT) and not (colon and raw_arg):
            raise TemplateSyntaxError(f"{{{body}}}: |{fname} needs an argument (|{fname}:TEXT)")
        if argument == NO_ARGUMENT and colon:
            raise TemplateSyntaxError(f"{{{body}}}: |{fname} takes no argument")
        if argument == INTEGER_ARGUMENT and not _INTEGER.fullmatch(raw_arg.strip()):
            raise TemplateSyntaxError(f"{{{body}}}: |{fname} needs an integer (|{fname}:1)")
        filters.append((fname, _unescape(raw_arg)))
    return Hole(name, special, tuple(steps), tuple(filters), "{" + body + "}")


def compile_template(source: str, specials: Sequence[str] = ()) -> Template:
    """Read ``source``; ``specials`` are the ``@names`` it may use.

    :raises TemplateSyntaxError: with what is wrong and where.
    """
    parts: list[str | Hole] = []
    literal: list[str] = []
    i = 0
    while i < len(source):
        c = source[i]
        if source.startswith("{{", i) or source.startswith("}}", i):
            literal.append(c)
            i += 2
        elif c == "{":
            end, j = -1, i + 1
            while j < len(source):
                if source[j] == "\\":
                    j += 2
                    continue
                if source[j] == "}":
                    end = j
                    break
                if source[j] == "{":
                    break
                j += 1
            if end < 0:
                raise TemplateSyntaxError(f"the brace at character {i + 1} is never closed")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(_hole(source[i + 1 : end], specials))
            i = end + 1
        elif c == "}":
            raise TemplateSyntaxError(
                f"a lone }} at character {i + 1} (write }}}} for a literal brace)"
            )
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append("".join(literal))
    return Template(source, tuple(parts))


__all__ = [
    "FILTERS",
    "Hole",
    "Template",
    "TemplateSyntaxError",
    "TemplateValueError",
    "compile_template",
]
