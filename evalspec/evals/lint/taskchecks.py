"""The checks lint runs on each valid task on its own: stratification labels, a
single-letter target that is an option the prompt offers, and control characters in
task ids. :class:`~evalspec.evals.lint.semantic.SemanticChecks` calls them."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from evalspec.evals.labels import Labels
from evalspec.evals.lint.report import record
from evalspec.model import ErrorRecord

# An option letter at a line start: "A.", "B)" or "(C)" after spaces or tabs, then
# whitespace or the end. Not one MULTILINE pattern starting with "^": the regex engine
# tries that at every position; one that starts with the line break it skips to, as a
# literal, in half the time (the start of the text is tried on its own).
_OPTION_BODY = r"[ \t]*(?:\(([A-Za-z])\)|([A-Za-z])[.)])(?=\s|\Z)"
_OPTION_AT_START = re.compile(_OPTION_BODY).match
_OPTION_AFTER_BREAK = re.compile("\n" + _OPTION_BODY).finditer


def label_problems(
    line: int, task_id: str, meta: Mapping[str, Any], labels: Labels
) -> Iterator[ErrorRecord]:
    """Required labels present and every declared label's value legal."""
    for name in labels.required:
        if name not in meta:
            yield record(
                line,
                "missing_label",
                f"metadata.{name}",
                f"metadata has no {name!r} label (legal: {', '.join(labels.legal[name])})",
                task_id,
            )
    for name, legal in labels.legal.items():
        if name not in meta:
            continue
        value = meta[name]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) not in legal:
            yield record(
                line,
                "illegal_label",
                f"metadata.{name}",
                f"{name}={value!r} is not a legal value (legal: "
                f"{', '.join(legal)}; see config/labels.yaml)",
                task_id,
            )


def offered_options(prompt: str) -> list[str]:
    """Option letters at line starts: ``A.``, ``B)``, ``(C)``, in order of appearance."""
    first = _OPTION_AT_START(prompt)
    found = [] if first is None else [first]
    found.extend(_OPTION_AFTER_BREAK(prompt))
    return [(m.group(1) or m.group(2)).upper() for m in found]


def _option_search(letter: str) -> Callable[[str], Any]:
    """``search(prompt)``: a match when ``letter`` (one of ``A``-``Z``) is in
    :func:`offered_options` of the prompt, else ``None``.

    :data:`_OPTION_BODY` with the letter fixed: at each line start at most one option
    can match (one starts with ``(``, the other with the letter, after the same
    indentation), and a match never crosses a line, so :func:`offered_options` finds
    an option at every line start that has one; this finds one with the letter.
    """
    both = f"[{letter}{letter.lower()}]"
    body = rf"[ \t]*(?:\({both}\)|{both}[.)])(?=\s|\Z)"
    at_start, after_break = re.compile(body).match, re.compile("\n" + body).search
    return lambda prompt: at_start(prompt) or after_break(prompt)


class OptionSearches(dict[str, Callable[[str], Any] | None]):
    """``letter -> _option_search(letter)`` for ``A``-``Z`` (``None`` for any other
    target), each compiled when first asked for: a dataset uses a few letters, and
    52 patterns cost a lint of a small dataset ~2 ms."""

    def __missing__(self, letter: str) -> Callable[[str], Any] | None:
        search = _option_search(letter) if len(letter) == 1 and "A" <= letter <= "Z" else None
        self[letter] = search
        return search


def option_problem(
    line: int, task_id: str, prompt: str, targets: Sequence[str]
) -> ErrorRecord | None:
    """A single-letter target must be an option the prompt actually offers (called
    for the tasks of a category whose target is one letter, with one target)."""
    options = offered_options(prompt)
    target = targets[0]
    if target in options:
        return None
    offered = (
        f"the prompt offers {', '.join(options)}"
        if options
        else "the prompt offers no lettered options (lines starting 'A.', 'B)' or '(C)')"
    )
    return record(
        line,
        "mcq_option_missing",
        "targets",
        f"target {target!r} is not an option: {offered}",
        task_id,
    )


# Bidirectional-text controls (the "Trojan Source" characters): invisible, and they
# reorder what a reviewer sees.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def id_character_problem(line: int, task_id: str) -> ErrorRecord | None:
    """A task id holding a control character or a bidirectional-text control.

    The validator (spec v1, frozen) accepts them; they break terminals, logs,
    CSV exports and file names built from ids, and can hide in a review.
    """
    if task_id.isprintable():  # Cc and the bidi controls (Cf) are not printable
        return None
    bad = next(
        (c for c in task_id if unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS),
        None,
    )
    if bad is None:
        return None
    return record(
        line,
        "id_control_character",
        "task_id",
        f"task_id {task_id!r} holds the control character U+{ord(bad):04X}; "
        "use printable characters only",
        task_id,
    )
