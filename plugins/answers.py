"""Reading the answer out of a chatty model output: the rules of spec version 2.

Spec v1's rules are literal (``extract_letter`` takes the first ``A``-``E``
character, so ``"Answer: D"`` gives ``"A"``). These read the answer the way
the field's extractors do, and each says when it could not decide, so the
score report counts those outputs instead of scoring them as wrong answers.

Every function is deterministic, total over every ``str`` and linear in its
input: each regular expression is anchored on a literal or a character class
and has no nested or adjacent unbounded repeats that could backtrack.

**The answer letter** (:func:`answer_letter`, rule ``mcq``). The letters are
upper-case ``A``-``E``. The candidates are looked for in five kinds of place,
in this order of precedence; the first kind that holds any candidate decides:

1. an answer cue: ``Answer: D``, ``ANSWER: B``, ``The answer is (C)``,
   ``the correct answer is **A**``, ``answer: option B``;
2. a bold letter: ``**A**``, ``**(B)**``, ``**C.** Paris``;
3. an option label starting a line: ``B. 4``, ``(C) Kant``, ``D) none``;
4. the whole output is one letter, maybe wrapped: ``C``, ``(C)``, ``C.``;
5. a letter standing alone as a word: ``Definitely C: Kant wrote it.`` (an
   ``A`` followed by a space and a lower-case letter is the article, not a
   candidate: ``A good guess is C`` gives ``C``).

When the deciding kind holds one letter (however often), that letter is the
answer. When it holds several different letters (``Answer: A ... Answer: B``,
or the options listed back), the rule cannot decide and returns ``""``, as it
does when no kind holds a candidate; :func:`letter_undecided` says which.

**The answer number** (:func:`answer_number`, rule ``extract_number``).
GSM8K's ``#### 12`` when the output has one (the first), else the last number
in the output. A number (ASCII digits) is an optional sign, an optional currency symbol
(``$ € £ ¥``), digits with optional comma thousands separators and an
optional decimal part; what follows it (a unit, ``%``, a trailing period) is
not part of it. It is written back plainly: ``"-$1,234.50"`` gives
``"-1234.50"`` (a leading ``+`` and the separators dropped, ``.5`` written
``0.5``). :func:`as_number` reads such a string as a :class:`~decimal.Decimal`
for metric ``numeric_match``.

**The label** (:func:`label`, rule ``normalize_label``): surrounding
whitespace removed and ``str.lower`` applied, so ``" Positive\\n"`` is
``"positive"``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

LETTERS = "ABCDE"

NO_CANDIDATE = "no candidate"
SEVERAL_CANDIDATES = "several different candidates"

_LETTER_END = r"(?![A-Za-z0-9])"
_CUE = re.compile(
    r"(?i:\banswer\b)(?:\s+(?i:is)\b)?\s*(?::\s*)?(?:(?i:option|choice)\s+)?[(\[*]{0,4}([A-E])"
    + _LETTER_END
)
_BOLD = re.compile(r"\*\*\(?([A-E])" + _LETTER_END)
_LABEL = re.compile(r"^[ \t]*\(?([A-E])[.):](?![^ \t\r\n])", re.MULTILINE)
_LONE = re.compile(r"[\s(\[*]*([A-E])[\s)\]*.:]*")
_WORD = re.compile(r"(?<![A-Za-z0-9'])([A-E])(?![A-Za-z0-9'])")
_ARTICLE = re.compile(r"A\s[a-z]")


def _candidates(text: str) -> list[str]:
    """The candidate letters of the first kind of place that holds any (see module doc)."""
    for pattern in (_CUE, _BOLD, _LABEL):
        found = pattern.findall(text)
        if found:
            return found
    lone = _LONE.fullmatch(text)
    if lone is not None:
        return [lone.group(1)]
    return [m.group(1) for m in _WORD.finditer(text) if not _ARTICLE.match(text, m.start())]


def answer_letter(text: str) -> str:
    """The answer letter ``A``-``E`` of the output, or ``""`` when none or several differ."""
    found = set(_candidates(text))
    return found.pop() if len(found) == 1 else ""


def letter_undecided(text: str) -> str:
    """Why :func:`answer_letter` could not decide, or ``""`` when it did.

    ``"no candidate"`` or ``"several different candidates"``: the report counts
    both as unparsed outputs.
    """
    found = set(_candidates(text))
    if not found:
        return NO_CANDIDATE
    return SEVERAL_CANDIDATES if len(found) > 1 else ""


_DIGITS = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+"
_NUMBER = re.compile(r"(?:(?<![\w.])([-+\u2212]))?[$€£¥]?(" + _DIGITS + r")")
_GSM8K = re.compile(r"####[ \t]*([-+\u2212]?)[$€£¥]?(" + _DIGITS + r")")
_WHOLE = re.compile(r"\s*([-+\u2212]?)[$€£¥]?(" + _DIGITS + r")\s*")


def _plain(sign: str, digits: str) -> str:
    body = digits.replace(",", "")
    if body.startswith("."):
        body = "0" + body
    return ("-" if sign in ("-", "\u2212") else "") + body


def answer_number(text: str) -> str:
    """GSM8K's ``#### N`` (the first), else the last number, written plainly; ``""`` if none."""
    marked = _GSM8K.search(text)
    if marked is not None:
        return _plain(marked.group(1), marked.group(2))
    numbers = _NUMBER.findall(text)
    if not numbers:
        return ""
    sign, digits = numbers[-1]
    return _plain(sign, digits)


def no_number(text: str) -> bool:
    """The output holds no number (:func:`answer_number` gives ``""``)."""
    return answer_number(text) == ""


def letter_unparsed(text: str) -> bool:
    """:func:`answer_letter` could not decide: no candidate, or several different ones."""
    return letter_undecided(text) != ""


def as_number(text: str) -> Decimal | None:
    """The text as a number when all of it is one (as :func:`answer_number` reads
    numbers, surrounding whitespace allowed); ``None`` otherwise."""
    whole = _WHOLE.fullmatch(text)
    if whole is None:
        return None
    try:
        return Decimal(_plain(whole.group(1), whole.group(2)))
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal digits
        return None


def label(text: str) -> str:
    """Surrounding whitespace removed, then ``str.lower``."""
    return text.strip().lower()
