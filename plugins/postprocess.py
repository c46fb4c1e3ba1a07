"""The post-process rules: the six of spec v1, and the three spec v2 adds.

Each is deterministic, stateless, total over every ``str`` (lone surrogates
included) and linear in its input. v1's are plain string methods and forward
``str.find`` scans, no backtracking regex; v2's (``mcq``, ``extract_number``,
``normalize_label``) read the answer out of chatty outputs and live in
:mod:`evalspec_plugins.answers`, which documents their precedence.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from evalspec import PostProcessRule, hookimpl

from . import answers

FENCE = "```"
LETTERS = frozenset("ABCDE")


def none(text: str) -> str:
    """The text unchanged."""
    return text


def strip_whitespace(text: str) -> str:
    """Leading and trailing whitespace (``str.isspace``) removed."""
    return text.strip()


def lower(text: str) -> str:
    """``str.lower`` (not ``casefold``: ``'ß'`` stays ``'ß'``)."""
    return text.lower()


def extract_letter(text: str) -> str:
    """The first character of the text in ``[A-E]`` (upper case only), or ``""``.

    Literal by design: ``"Answer: C"`` gives ``"A"`` (the A of "Answer"). A
    smarter letter rule is a new rule in a new spec version.
    """
    for ch in text:
        if ch in LETTERS:
            return ch
    return ""


def extract_code_block(text: str) -> str:
    """The body of the first triple-backtick fenced block.

    The opening fence line (with its optional language tag) is excluded; the
    body runs to the next triple backtick, and one newline (``\\n`` or
    ``\\r\\n``) right before the closing fence is dropped. An unclosed fence
    yields everything after the fence line; text with no fence is returned
    unchanged.
    """
    start = text.find(FENCE)
    if start < 0:
        return text
    line_end = text.find("\n", start + len(FENCE))
    if line_end < 0:
        return ""  # the fence line is all there is
    body_start = line_end + 1
    close = text.find(FENCE, body_start)
    if close < 0:
        return text[body_start:]
    body = text[body_start:close]
    if body.endswith("\r\n"):
        return body[:-2]
    if body.endswith("\n"):
        return body[:-1]
    return body


def extract_first_line(text: str) -> str:
    """The first line that is not whitespace only, without its line ending; ``""`` if none.

    Lines are split as ``str.splitlines`` splits them.
    """
    for line in text.splitlines():
        if line and not line.isspace():
            return line
    return ""


def mcq(text: str) -> str:
    """The answer letter A-E read from answer cues, bold, labels or a lone letter; '' if unsure."""
    return answers.answer_letter(text)


def extract_number(text: str) -> str:
    """GSM8K's '#### N', else the last number, written plainly (no separators, currency)."""
    return answers.answer_number(text)


def normalize_label(text: str) -> str:
    """Surrounding whitespace removed and str.lower applied: ' Positive\\n' is 'positive'."""
    return answers.label(text)


RULES = (none, strip_whitespace, lower, extract_letter, extract_code_block, extract_first_line)
V2_RULES = (mcq, extract_number, normalize_label)


# -- what the rest of evalspec needs to know about each rule ---------------------------
# Declared here, on the entries, so the core names no rule: the score report
# counts unparsed outputs, the conformance kit fuzzes contracts and
# idempotence, and the strategies draw shaped outputs from these.


def no_letter(raw: str) -> bool:
    """``extract_letter`` found no character in ``A-E``."""
    return extract_letter(raw) == ""


def no_fence(raw: str) -> bool:
    """``extract_code_block`` found no triple-backtick fence (it returns the text unchanged)."""
    return FENCE not in raw


def only_blank_lines(raw: str) -> bool:
    """``extract_first_line`` found only blank (or whitespace-only) lines."""
    return extract_first_line(raw) == ""


def _one_letter_or_empty(out: str) -> bool:
    return out == "" or out in LETTERS


def _no_line_break(out: str) -> bool:
    return out == "" or out.splitlines() == [out]


def _no_surrounding_whitespace(out: str) -> bool:
    return out == out.strip()


def _plain_number_or_empty(out: str) -> bool:
    return out == "" or re.fullmatch(r"-?[0-9]+(?:\.[0-9]+)?", out) is not None


def _shapes(name: str) -> Callable[[], Any]:
    """A factory of the hypothesis strategy ``evalspec_plugins.shapes.<name>``, imported on use."""

    def make() -> Any:
        # By name: the shapes import hypothesis, which registering the rules must not need.
        return getattr(importlib.import_module("evalspec_plugins.shapes"), name)()

    make.__name__ = make.__qualname__ = name
    return make


KNOWLEDGE: dict[Callable[[str], str], dict[str, Any]] = {
    none: {"idempotent": True},
    strip_whitespace: {
        "idempotent": True,
        "contract": _no_surrounding_whitespace,
        "contract_description": "no surrounding whitespace",
        "shaped_outputs": _shapes("padded"),
    },
    lower: {"idempotent": True},
    extract_letter: {
        "unparsed": no_letter,
        "contract": _one_letter_or_empty,
        "contract_description": "'' or one letter A-E",
        "shaped_outputs": _shapes("letters"),
    },
    extract_code_block: {"unparsed": no_fence, "shaped_outputs": _shapes("code_blocks")},
    mcq: {
        "unparsed": answers.letter_unparsed,
        "idempotent": True,
        "contract": _one_letter_or_empty,
        "contract_description": "'' or one letter A-E",
        "shaped_outputs": _shapes("letters"),
    },
    extract_number: {
        "unparsed": answers.no_number,
        "idempotent": True,
        "contract": _plain_number_or_empty,
        "contract_description": "'' or a plain number (-?digits, maybe .digits)",
        "shaped_outputs": _shapes("numbers"),
    },
    normalize_label: {
        "idempotent": True,
        "contract": _no_surrounding_whitespace,
        "contract_description": "no surrounding whitespace",
        "shaped_outputs": _shapes("padded"),
    },
    extract_first_line: {
        "unparsed": only_blank_lines,
        "idempotent": True,
        "contract": _no_line_break,
        "contract_description": "no line break",
        "shaped_outputs": _shapes("multi_line"),
    },
}
"""Rule function -> the keyword arguments of its :class:`evalspec.PostProcessRule`."""


@hookimpl
def evalspec_register_post_processors(register: Callable[[PostProcessRule], None]) -> None:
    for fn in RULES + V2_RULES:
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        register(PostProcessRule(fn.__name__, fn, doc, **KNOWLEDGE[fn]))
