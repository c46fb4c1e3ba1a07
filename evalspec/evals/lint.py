"""``evalspec lint``: the quality gate a dataset passes before it enters the repository.

For each dataset of a layout: the data card (present, parseable, version,
seed, spec version, sources, owner), task-spec validation at the card's spec
version, legal stratification labels, the semantic checks that silently
corrupt scores, code ownership, and, inside git, that a changed dataset came
with a version bump. Every problem is an :class:`evalspec.ErrorRecord` with
the file it belongs to.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import unicodedata
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import SpecVersionError
from evalspec.evals import codeowners, gitrepo
from evalspec.evals.card import CardProblem, DataCard, card_path, parse_card
from evalspec.evals.contenthash import PREFIX, canonical, canonical_of_vouched, content_hash
from evalspec.evals.labels import Labels, parse_labels
from evalspec.evals.layout import Layout
from evalspec.evals.manifestlink import ManifestUnreadable, present_manifest_files
from evalspec.evals.records import is_lfs_pointer, read_records
from evalspec.io.fileidentity import FileChanged, changed, file_signature
from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.linelimit import bounded_lines
from evalspec.io.safeload import MAX_TEXT_BYTES, DocumentError, read_text_bounded
from evalspec.model import ErrorRecord
from evalspec.registry.build import Registry, default_registry
from evalspec.validation.validator import (
    LineResult,
    duplicate_record,
    line_content,
    line_verdict,
    read_lines,
)

# An option letter at a line start: "A.", "B)" or "(C)" after spaces or tabs, then
# whitespace or the end. Not one MULTILINE pattern starting with "^": the regex engine
# tries that at every position; one that starts with the line break it skips to, as a
# literal, in half the time (the start of the text is tried on its own).
_OPTION_BODY = r"[ \t]*(?:\(([A-Za-z])\)|([A-Za-z])[.)])(?=\s|\Z)"
_OPTION_AT_START = re.compile(_OPTION_BODY).match
_OPTION_AFTER_BREAK = re.compile("\n" + _OPTION_BODY).finditer


@attrs.frozen
class Problem:
    """One lint finding: the file it is in and the error record."""

    file: str
    error: ErrorRecord

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, **self.error.to_dict()}


@attrs.define
class DatasetLint:
    """What lint learned about one dataset."""

    path: str
    card: str
    name: str
    tasks: int = 0
    content_hash: str | None = None
    version: str | None = None
    spec_version: int | None = None
    problems: list[Problem] = attrs.Factory(list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.name,
            "path": self.path,
            "card": self.card,
            "tasks": self.tasks,
            "content_hash": self.content_hash,
            "version": self.version,
            "spec_version": self.spec_version,
            "problems": len(self.problems),
        }


@attrs.define
class LintReport:
    """Every dataset linted, layout-level problems, and files that could not be read."""

    datasets: list[DatasetLint] = attrs.Factory(list)
    layout_problems: list[Problem] = attrs.Factory(list)
    io_errors: list[str] = attrs.Factory(list)

    def problems(self) -> Iterator[Problem]:
        yield from self.layout_problems
        for d in self.datasets:
            yield from d.problems

    @property
    def ok(self) -> bool:
        return not self.io_errors and next(self.problems(), None) is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "datasets": [d.to_dict() for d in self.datasets],
            "problems": [p.to_dict() for p in self.problems()],
            "io_errors": list(self.io_errors),
        }


def display(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return Path(os.path.relpath(path)).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:  # another drive on Windows
        return str(path)


def _rec(
    line: int,
    rule: str,
    field: str | None,
    message: str,
    task_id: str | None = None,
) -> ErrorRecord:
    return ErrorRecord(line, rule, field, message, task_id)


def _from_card(file: str, p: CardProblem) -> Problem:
    return Problem(file, _rec(p.line, p.rule, p.field, p.message))


def _short(text: str, limit: int = 1000) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


# -- the checks on validated tasks ---------------------------------------------------


def _label_problems(
    line: int, task_id: str, meta: Mapping[str, Any], labels: Labels
) -> Iterator[ErrorRecord]:
    """Required labels present and every declared label's value legal."""
    for name in labels.required:
        if name not in meta:
            yield _rec(
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
            yield _rec(
                line,
                "illegal_label",
                f"metadata.{name}",
                f"{name}={value!r} is not a legal value (legal: "
                f"{', '.join(legal)}; see config/labels.yaml)",
                task_id,
            )


# What str.split() splits ASCII text at: tab, LF, VT, FF, CR, 0x1c-0x1f and space.
_ASCII_SPACES = bytes(c for c in range(0x80) if chr(c).isspace())
_TO_SPACE = bytes.maketrans(_ASCII_SPACES, b" " * len(_ASCII_SPACES))


def _collapsed(text: str) -> bytes:
    """``" ".join(text.split())`` in UTF-8: runs of whitespace made one space, none at
    either end.

    ASCII text is collapsed on its bytes, without a string per word: mapping its
    whitespace (:data:`_ASCII_SPACES`) to spaces, halving runs of spaces until none
    is left and stripping the ends gives the same bytes. Other text is split (the
    byte way, after a search for whitespace beyond ASCII, measured no faster on
    the multilingual benchmark mix).
    """
    if text.isascii():
        data = text.encode("ascii").translate(_TO_SPACE)
        while b"  " in data:
            data = data.replace(b"  ", b" ")
        return data.strip(b" ")
    return " ".join(text.split()).encode("utf-8", "surrogatepass")


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


class _OptionSearches(dict[str, Callable[[str], Any] | None]):
    """``letter -> _option_search(letter)`` for ``A``-``Z`` (``None`` for any other
    target), each compiled when first asked for: a dataset uses a few letters, and
    52 patterns cost a lint of a small dataset ~2 ms."""

    def __missing__(self, letter: str) -> Callable[[str], Any] | None:
        search = _option_search(letter) if len(letter) == 1 and "A" <= letter <= "Z" else None
        self[letter] = search
        return search


def _option_problem(
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
    return _rec(
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


def _id_character_problem(line: int, task_id: str) -> ErrorRecord | None:
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
    return _rec(
        line,
        "id_control_character",
        "task_id",
        f"task_id {task_id!r} holds the control character U+{ord(bad):04X}; "
        "use printable characters only",
        task_id,
    )


_NONE: Any = object()

# The bytes of the UTF-8 forms of the whitespace characters (str.isspace): tab, LF, VT,
# FF, CR, 0x1c-0x1f and space, and the bytes of U+0085, U+00A0, U+1680,
# U+2000-U+200A, U+2028, U+2029, U+202F, U+205F and U+3000 (a test derives them).
_WHITESPACE_BYTES = bytes.fromhex("090a0b0c0d1c1d1e1f20808182838485868788898a9a9fa0a8a9afc2e1e2e3")


_KEY_MASK = (1 << 60) - 1
"""Sketches cut to 60 bits: an int below 2**60 takes 32 bytes, a wider one 36 (40 as
allocated); a rare extra candidate costs only a recalled line."""


def _sketch(text: str) -> int:
    """A cheap key that two texts which collapse alike (:func:`_collapsed`) share:
    ``hash`` of the text's UTF-8 without any byte of :data:`_WHITESPACE_BYTES`
    (60 bits of it).

    Deleting those bytes removes every whitespace character whole and leaves each
    word as the same bytes wherever it stands, so the result depends on the words
    only. Texts that do not collapse alike may share it too (other word breaks,
    bytes of other characters deleted, ``hash`` collisions): an equal sketch is a
    candidate, which :meth:`SemanticChecks.findings` decides on the exact form.
    """
    flat = text.encode("utf-8", "surrogatepass").translate(None, _WHITESPACE_BYTES)
    return hash(flat) & _KEY_MASK


def _fold(task_id: str) -> str:
    """The id NFKC-normalised and case-folded (ids equal so collide)."""
    return unicodedata.normalize("NFKC", task_id).casefold()


def _digest(flat: bytes) -> bytes:
    return hashlib.blake2b(flat, digest_size=16).digest()


@attrs.frozen
class _Exact:
    """What the cross-task checks compare, exactly, for one recalled task."""

    task_id: str
    targets: tuple[str, ...]
    prompt: bytes
    """128-bit BLAKE2b digest of the collapsed prompt."""
    rendered: bytes
    """Digest of the collapsed rendered prompt."""
    examples: tuple[bytes, ...]
    """Digest of each few-shot example's collapsed prompt."""


def _exact(task: Any) -> _Exact:
    """The exact keys of one task. The rendered prompt is never built: collapsed, it is
    the collapsed example prompts, completions and prompt (the empty ones left out)
    joined with single spaces, since :func:`evalspec.scoring.render.render` joins them with
    whitespace only, and splitting at whitespace distributes over such a join."""
    flat = _collapsed(task.prompt)
    examples: list[bytes] = []
    parts: list[bytes] = []
    for ex in task.few_shot_examples or ():  # msgspec.UNSET is false
        part = _collapsed(ex.prompt)
        examples.append(_digest(part))
        parts.append(part)
        parts.append(_collapsed(ex.completion))
    key = _digest(flat)
    if not parts:
        return _Exact(task.task_id, tuple(task.targets), key, key, ())
    parts.append(flat)
    rendered = _digest(b" ".join(p for p in parts if p))
    return _Exact(task.task_id, tuple(task.targets), key, rendered, tuple(examples))


Recall = Callable[[set[int]], Iterable[tuple[int, Any]]]
"""Given lines, the task :meth:`SemanticChecks.add_struct` (or ``add``) was given for
each, as ``(line, task)`` pairs in any order (a line left out is not decided on)."""


class _Example:
    __slots__ = ("completion", "prompt")

    def __init__(self, example: Mapping[str, str]) -> None:
        self.prompt = example["prompt"]
        self.completion = example["completion"]


class _Decoded:
    """A decoded task object seen through the attributes of the fast path's structs."""

    __slots__ = ("category", "few_shot_examples", "metadata", "prompt", "targets", "task_id")

    def __init__(self, task: Mapping[str, Any]) -> None:
        self.task_id: str = task["task_id"]
        self.category: str = task["category"]
        self.prompt: str = task["prompt"]
        self.targets: list[str] = list(task["targets"])  # kept: a copy of the caller's
        self.few_shot_examples = [_Example(ex) for ex in task.get("few_shot_examples", ())]
        self.metadata: Mapping[str, Any] = task.get("metadata", {})


class SemanticChecks:
    """The semantic checks on a dataset's valid tasks, fed one task at a time.

    The per-task checks (labels, options, id characters) run as each task comes.
    The cross-task ones (the same rendered prompt twice, few-shot leakage, id
    collisions) keep, per task, only its line under a cheap key (:func:`_sketch` of
    its rendered prompt and of its prompt, its folded id) and, per few-shot example,
    a sketch; :meth:`findings` then recalls the few tasks whose keys met another's
    and decides on their exact forms (collapsed texts, ids, targets). It returns,
    sorted by line, what the checks found, in the order the checks were run over
    whole task lists before: labels, prompts, leakage, options, id collisions, id
    characters.

    A task comes as its decoded JSON object (:meth:`add`: as the validator's fast
    path's ``vouch`` returns it, or :meth:`evalspec.TaskSpec.to_dict`) or as the
    fast path's msgspec struct (:meth:`add_struct`), never as a ``TaskSpec``; tasks
    come in line order, one per line. With ``keep_tasks`` (the default) the checker
    keeps each task to recall it itself; lint reads the lines again instead
    (``findings(recall)``), so that its tables hold a few numbers per task.

    ``seen`` is the caller's table of each task id's first line, if it keeps one
    (lint's reader does, to find repeated ids): it must hold a task's id before
    the task is added. The id collision check looks ids that are their own folded
    form up there instead of keeping them twice; without it the checker keeps
    such a table itself.
    """

    def __init__(
        self,
        registry: Registry,
        labels: Labels | None,
        *,
        keep_tasks: bool = True,
        seen: dict[str, int] | None = None,
    ) -> None:
        self._labels = labels
        self._required: tuple[str, ...] = ()
        self._legal: tuple[tuple[str, frozenset[str]], ...] = ()
        if labels is not None:
            self._required = labels.required
            self._legal = tuple((n, frozenset(v)) for n, v in labels.legal.items())
        # categories whose one target is a letter the prompt must offer
        self._lettered = frozenset(
            name for name, cat in registry.spec.categories.items() if cat.single_target_from
        )
        self._option_searches = _OptionSearches()
        self._kept: dict[int, Any] | None = {} if keep_tasks else None
        self.flagged: list[int] = []
        """The line of each per-task finding as it is found, so that a reader can keep
        the text of those lines while it has them (the cross-task findings come from
        :meth:`findings`, on recalled lines)."""
        self._label_out: list[ErrorRecord] = []
        self._option_out: list[ErrorRecord] = []
        self._character_out: list[ErrorRecord] = []
        # Sketch of a prompt or of a rendered prompt -> the first task's line that had
        # it, and the later lines that had it too (one table: a task without few-shot
        # examples, the common one, is its rendered prompt, so it adds one key).
        self._firsts: dict[int, int] = {}
        self._more: dict[int, list[int]] = {}
        # Each few-shot example, in order: its prompt's sketch, its line and index
        # (arrays: 17 bytes an example, no object).
        self._example_keys = array("q")
        self._example_lines = array("q")
        self._example_index = array("B")  # fewer than 256 examples: MAX_FEW_SHOT is 8
        # Id -> its first line; an id that is its own NFKC-normalised, case-folded
        # form (the common one) is the key of its folded form there. Folded id ->
        # the first line of an id that is not its own folded form. (line, id, the
        # first line with the same folded id) of each later task.
        self.seen: dict[str, int] = {} if seen is None else seen
        self._insert_seen = seen is None
        self._folds: dict[str, int] = {}
        self._collisions: list[tuple[int, str, int]] = []
        self.add_struct: Callable[[int, Any], None] = self._adder()
        """Check one valid task given as :attr:`evalspec.validation.fast.FastPath.vouch_struct`
        returns it (or with the same attributes)."""

    def add(self, line: int, task: Mapping[str, Any]) -> None:
        """Check one valid task, given as its decoded JSON object (tasks come in
        line order)."""
        self.add_struct(line, _Decoded(task))

    def _adder(self) -> Callable[[int, Any], None]:
        """:attr:`add_struct`, with what it touches per task bound as locals (it runs once
        per task: attribute look-ups and calls are a good part of its cost)."""
        labels = self._labels is not None
        required, legal_sets = self._required, self._legal
        # The rare paths reach the checker through a weak proxy: the closure, kept on
        # the checker, must not hold it, or the checker and its tables (a few objects
        # per task) would be freed only by the cycle collector, which walks them all.
        me = weakref.proxy(self)
        spaces, none = _WHITESPACE_BYTES, _NONE
        keep = None if self._kept is None else self._kept.__setitem__
        example_key = self._example_keys.append
        example_line = self._example_lines.append
        example_index = self._example_index.append
        firsts, more, mask = self._firsts, self._more, _KEY_MASK
        seen, folds, collisions = self.seen, self._folds, self._collisions
        insert_seen, fold = self._insert_seen, _fold
        lettered, searches = self._lettered, self._option_searches
        option_out, character_out = self._option_out, self._character_out
        normalize, flag = unicodedata.normalize, self.flagged.append

        def add(line: int, task: Any) -> None:
            tid: str = task.task_id
            prompt: str = task.prompt
            targets: list[str] = task.targets
            if keep is not None:
                keep(line, task)
            if labels:
                meta = task.metadata or {}  # msgspec.UNSET is false
                # A quick test that clears the common task; _check_labels for the rest.
                for name in required:
                    if name not in meta:
                        me._check_labels(line, tid, meta)
                        break
                else:
                    for name, legal in legal_sets:
                        value = meta.get(name, none)
                        if value is not none and (type(value) is not str or value not in legal):
                            me._check_labels(line, tid, meta)
                            break
            # _sketch, inline: whitespace bytes deleted, one C pass, no string per word
            flat = prompt.encode("utf-8", "surrogatepass").translate(None, spaces)
            key = hash(flat) & mask
            shots = task.few_shot_examples
            if shots:  # msgspec.UNSET is false
                # Deleting whitespace distributes over the rendering's join: the
                # rendered prompt's sketch is that of its parts, concatenated.
                parts: list[bytes] = []
                for i, ex in enumerate(shots):
                    part = ex.prompt.encode("utf-8", "surrogatepass").translate(None, spaces)
                    example_key(hash(part) & mask)
                    example_line(line)
                    example_index(i)
                    parts.append(part)
                    parts.append(
                        ex.completion.encode("utf-8", "surrogatepass").translate(None, spaces)
                    )
                parts.append(flat)
                whole = hash(b"".join(parts)) & mask
                if whole != key:
                    first = firsts.setdefault(whole, line)
                    if first != line:
                        more.setdefault(whole, []).append(line)
            # else rendered, the task is its prompt
            first = firsts.setdefault(key, line)
            if first != line:
                more.setdefault(key, []).append(line)
            if task.category in lettered and len(targets) == 1:
                letter = targets[0]
                search = searches[letter]
                # "\nA. " is an option line the search would find, and the usual one
                if search is None or (f"\n{letter}. " not in prompt and search(prompt) is None):
                    rec = _option_problem(line, tid, prompt, targets)
                    if rec is not None:
                        option_out.append(rec)
                        flag(line)
            # NFKC leaves ASCII as it is, and case folds it as lower() does
            folded = tid.lower() if tid.isascii() else normalize("NFKC", tid).casefold()
            if insert_seen:
                seen.setdefault(tid, line)
            if folded == tid:  # in seen: an earlier id folded alike is in folds
                hit = folds.get(tid)
                if hit is not None and seen[tid] < hit:
                    hit = None  # this very id came first (given twice: not a collision)
            else:
                hit = folds.setdefault(folded, line)
                if hit == line:
                    hit = None
                # the first id that is this folded form, if it is its own folded form
                own = seen.get(folded)
                if own is not None and (hit is None or own < hit) and fold(folded) == folded:
                    hit = own
            if hit is not None:
                collisions.append((line, tid, hit))
            if not tid.isprintable():
                rec = _id_character_problem(line, tid)
                if rec is not None:
                    character_out.append(rec)
                    flag(line)

        return add

    def _check_labels(self, line: int, tid: str, meta: Mapping[str, Any]) -> None:
        """:func:`_label_problems`, for a task the per-task check's quick test (required
        labels present, the declared ones a legal string) did not clear."""
        assert self._labels is not None
        found = list(_label_problems(line, tid, meta, self._labels))
        if found:
            self._label_out.extend(found)
            self.flagged.append(line)

    def _leak_candidates(self) -> Iterator[tuple[int, int, int]]:
        """``(line, index, sketch)`` of each few-shot example whose prompt's sketch is
        a prompt's, in order."""
        prompts = self._firsts
        lines, index = self._example_lines, self._example_index
        for at, key in enumerate(self._example_keys):
            if key in prompts:
                yield lines[at], index[at], key

    def _group(self, key: int) -> Iterator[int]:
        """The lines of the tasks whose prompt or rendered prompt has sketch ``key``, in
        order (every task whose prompt has it among them)."""
        yield self._firsts[key]
        yield from self._more.get(key, ())

    def _wanted(self, leaks: list[tuple[int, int, int]]) -> set[int]:
        """The lines the cross-task checks must see exactly."""
        wanted: set[int] = set()
        for key, more in self._more.items():
            wanted.add(self._firsts[key])
            wanted.update(more)
        wanted.update(line for line, _, _ in leaks)
        for key in {key for _, _, key in leaks}:
            wanted.update(self._group(key))
        wanted.update(first for _, _, first in self._collisions)
        return wanted

    def findings(self, recall: Recall | None = None) -> list[ErrorRecord]:
        """Every finding, sorted by line (stable: per line, in the order above).

        ``recall`` gives back the tasks of the lines the cross-task checks ask for;
        without it, the tasks kept (``keep_tasks``).
        """
        if recall is None:
            kept = self._kept
            assert kept is not None, "no recall and no tasks kept"
            recall = partial(_recall_kept, kept)
        leaks = list(self._leak_candidates())
        wanted = self._wanted(leaks)
        exact = {line: _exact(task) for line, task in recall(wanted)} if wanted else {}
        out = [
            *self._label_out,
            *self._repeated_prompts(exact),
            *self._leaks(leaks, exact),
            *self._option_out,
            *self._id_collisions(exact),
            *self._character_out,
        ]
        out.sort(key=lambda e: e.line)
        return out

    def _repeated_prompts(self, exact: Mapping[int, _Exact]) -> Iterator[ErrorRecord]:
        """The same rendered prompt twice: conflicting targets, or the same sample
        scored twice (each later task against the first with its exact prompt).

        Every task whose rendered prompt another task shares is among the recalled
        ones (the sketches of both met), so going through those in line order finds
        what going through all tasks finds.
        """
        firsts: dict[bytes, tuple[int, _Exact]] = {}
        for line, task in sorted(exact.items()):
            line0, first = firsts.setdefault(task.rendered, (line, task))
            if line0 == line:
                continue
            if sorted(first.targets) != sorted(task.targets):
                yield _rec(
                    line,
                    "conflicting_targets",
                    "targets",
                    f"the same prompt as {first.task_id!r} (line {line0}) has different "
                    f"targets: {list(first.targets)} there, {list(task.targets)} here",
                    task.task_id,
                )
            else:
                yield _rec(
                    line,
                    "duplicate_prompt",
                    "prompt",
                    f"the same prompt and targets as {first.task_id!r} (line {line0}); "
                    "the sample would be scored twice",
                    task.task_id,
                )

    def _leaks(
        self, leaks: list[tuple[int, int, int]], exact: Mapping[int, _Exact]
    ) -> Iterator[ErrorRecord]:
        """A few-shot example whose prompt is an evaluated prompt of the same dataset
        (the first task with that prompt named)."""
        # Each exact prompt's first task, over the recalled ones: a task whose prompt
        # is an example's shares the example's sketch, so it was recalled with its
        # group. (A dict, not a walk of each group per example: a group can hold
        # thousands of prompts that differ only in where their spaces fall.)
        first_with: dict[bytes, int] = {}
        for line, recalled in sorted(exact.items()):
            first_with.setdefault(recalled.prompt, line)
        for line, i, _key in leaks:
            task = exact.get(line)
            if task is None:
                continue
            line0 = first_with.get(task.examples[i])
            if line0 is None:
                continue
            hit = exact[line0]
            where = "itself" if hit.task_id == task.task_id else f"{hit.task_id!r} (line {line0})"
            yield _rec(
                line,
                "few_shot_leak",
                f"few_shot_examples[{i}]",
                f"few-shot example {i} is the evaluated prompt of {where}; "
                "the answer leaks into the prompt",
                task.task_id,
            )

    def _id_collisions(self, exact: Mapping[int, _Exact]) -> Iterator[ErrorRecord]:
        """Distinct task ids that are equal after NFKC normalisation and case folding
        (each later id against the first)."""
        for line, tid, line0 in self._collisions:
            first = exact.get(line0)
            if first is not None and first.task_id != tid:
                yield _rec(
                    line,
                    "id_collision",
                    "task_id",
                    f"task_id {tid!r} collides with {first.task_id!r} (line {line0}) "
                    "after case folding and Unicode normalisation",
                    tid,
                )


def _recall_kept(kept: Mapping[int, Any], lines: set[int]) -> Iterator[tuple[int, Any]]:
    return ((n, kept[n]) for n in lines if n in kept)


# -- the linter ------------------------------------------------------------------------


@attrs.define
class Linter:
    """Lints the datasets of one layout; reusable across datasets (config read once)."""

    layout: Layout
    base: str = "HEAD"
    check_git: bool = True
    labels: Labels | None = attrs.field(init=False, default=None)
    report: LintReport = attrs.field(init=False, factory=LintReport)
    _git_root: Path | None = attrs.field(init=False, default=None)
    _owner_root: Path = attrs.field(init=False)
    _codeowners: list[codeowners.Rule] | None = attrs.field(init=False, default=None)
    _codeowners_file: Path | None = attrs.field(init=False, default=None)
    _base_exists: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._read_labels()
        self._git_root = gitrepo.toplevel(self.layout.root)
        if self._git_root is not None and self.check_git:
            self._base_exists = gitrepo.has_commit(self._git_root, self.base)
            # A repository without commits has nothing to compare with; a base
            # that does not resolve is a mistake that must not skip the check.
            if not self._base_exists and gitrepo.has_commit(self._git_root, "HEAD"):
                self.report.io_errors.append(
                    f"--base {self.base}: not a revision of {self._git_root}"
                )
        self._owner_root = self._git_root or self.layout.root
        self._codeowners_file = codeowners.find_codeowners(self._owner_root)
        if self._codeowners_file is not None:
            try:
                text = read_text_bounded(self._codeowners_file, MAX_TEXT_BYTES)
            except (OSError, UnicodeDecodeError, DocumentError) as exc:
                self.report.io_errors.append(f"cannot read {display(self._codeowners_file)}: {exc}")
            else:
                self._codeowners = codeowners.parse_codeowners(text)

    def _read_labels(self) -> None:
        path = self.layout.labels_file
        shown = display(path)
        if not path.is_file():
            self.report.layout_problems.append(
                Problem(
                    shown,
                    _rec(
                        1,
                        "labels_missing",
                        None,
                        "no config/labels.yaml: declare the legal values of each "
                        "stratification label (run `evalspec init` to scaffold one)",
                    ),
                )
            )
            return
        try:
            text = read_text_bounded(path)
        except (OSError, UnicodeDecodeError, DocumentError) as exc:
            self.report.io_errors.append(f"cannot read {shown}: {exc}")
            return
        labels, problems = parse_labels(text)
        self.report.layout_problems.extend(_from_card(shown, p) for p in problems)
        self.labels = labels

    def lint(self, dataset: Path) -> DatasetLint:
        """Lint one dataset file and record the result in :attr:`report`."""
        cpath = card_path(dataset)
        result = DatasetLint(display(dataset), display(cpath), self.layout.dataset_name(dataset))
        self.report.datasets.append(result)
        try:
            with dataset.open("rb") as f:
                head = f.read(_LFS_POINTER_MAX + 1)
        except OSError as exc:
            self.report.io_errors.append(f"cannot read {result.path}: {exc.strerror or exc}")
            return result
        card = self._card(cpath, result)
        if is_lfs_pointer(head):
            result.problems.append(
                Problem(
                    result.path,
                    _rec(
                        1,
                        "lfs_pointer",
                        None,
                        "this file is a Git LFS pointer, not the dataset: run `git lfs pull` "
                        "(or `git lfs install` first) and lint again",
                    ),
                )
            )
            return result
        registry = self._registry(card, result)
        checks = SemanticChecks(registry, self.labels, keep_tasks=False, seen={})
        try:
            hashed = _read_dataset(dataset, registry, result, checks)
        except OSError as exc:
            self.report.io_errors.append(f"cannot read {result.path}: {exc.strerror or exc}")
            return result
        result.content_hash = hashed.content_hash
        semantic = checks.findings(hashed.recall)
        shown = hashed.shown  # the text of the lines flagged as they were read, or recalled
        try:
            if hashed.errors:
                raise hashed.errors[0]
            # the others' (none, unless a line could not be recalled)
            rest = _line_texts(dataset, {e.line for e in semantic} - shown.keys())
        except OSError as exc:
            self.report.io_errors.append(f"cannot read {result.path}: {exc.strerror or exc}")
            rest = {}
        for e in semantic:
            text = shown.get(e.line)
            if text is None:
                text = _short(rest.get(e.line, ""))
            error = ErrorRecord(e.line, e.rule, e.field, e.message, e.task_id, text)
            result.problems.append(Problem(result.path, error))
        if card is not None:
            self._check_owner(dataset, card, result)
            self._check_bump(dataset, cpath, hashed, card, result)
        return result

    def _card(self, cpath: Path, result: DatasetLint) -> DataCard | None:
        if not cpath.is_file():
            result.problems.append(
                Problem(
                    result.path,
                    _rec(
                        1,
                        "card_missing",
                        None,
                        f"no data card: write {result.card} with a front-matter block declaring "
                        "version, spec_version, seed, sources and owner",
                    ),
                )
            )
            return None
        try:
            text = read_text_bounded(cpath, MAX_TEXT_BYTES)
        except (OSError, UnicodeDecodeError, DocumentError) as exc:
            self.report.io_errors.append(f"cannot read {result.card}: {exc}")
            return None
        card, problems = parse_card(text)
        result.problems.extend(_from_card(result.card, p) for p in problems)
        if card is not None:
            result.version = card.version
            result.spec_version = card.spec_version
        return card

    def _registry(self, card: DataCard | None, result: DatasetLint) -> Registry:
        if card is None:
            return default_registry()
        try:
            return default_registry(card.spec_version)
        except SpecVersionError as exc:
            result.problems.append(
                Problem(
                    result.card,
                    _rec(
                        card.line_of("spec_version"),
                        "card_field",
                        "spec_version",
                        f"{exc}; validating at the newest spec version instead",
                    ),
                )
            )
            return default_registry()

    def _check_owner(self, dataset: Path, card: DataCard, result: DatasetLint) -> None:
        line = card.line_of("owner")
        if self._codeowners is None:
            result.problems.append(
                Problem(
                    result.card,
                    _rec(
                        line,
                        "owner_not_codeowner",
                        "owner",
                        f"no CODEOWNERS file in {display(self._owner_root) or '.'} (looked in "
                        ".github/, the root and docs/), so no owner approves changes to this "
                        "dataset; "
                        "`evalspec init` writes one from the cards' owners",
                    ),
                )
            )
            return
        try:
            rel = dataset.resolve().relative_to(self._owner_root.resolve()).as_posix()
        except ValueError:
            rel = dataset.as_posix()
        owners, rule = codeowners.owners_of(self._codeowners, rel)
        for owner in card.owners:
            if any(codeowners.same_owner(owner, o) for o in owners):
                continue
            assert self._codeowners_file is not None
            where = display(self._codeowners_file)
            if rule is None:
                why = f"no pattern in {where} matches {rel}"
            else:
                who = ", ".join(rule.owners) or "nobody"
                why = f"{where}:{rule.line} ({rule.pattern}) gives {rel} to {who}"
            result.problems.append(
                Problem(
                    result.card,
                    _rec(
                        line,
                        "owner_not_codeowner",
                        "owner",
                        f"card owner {owner} is not a code owner of the dataset: {why}",
                    ),
                )
            )

    def _check_bump(
        self, dataset: Path, cpath: Path, new: _Hashed, card: DataCard, result: DatasetLint
    ) -> None:
        if self._git_root is None or not self.check_git or not self._base_exists:
            return
        root = self._git_root
        try:
            rel = dataset.resolve().relative_to(root.resolve()).as_posix()
            crel = cpath.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return
        old = gitrepo.show(root, self.base, rel)
        if old is None or not _content_differs(old, dataset, new):
            return  # new in this change, or unchanged
        old_card_text = gitrepo.show(root, self.base, crel)
        if old_card_text is None:
            return  # the card is new too: this change declares the version
        old_card, _ = parse_card(old_card_text.decode("utf-8", "replace"))
        if old_card is None or old_card.version != card.version:
            return
        result.problems.append(
            Problem(
                result.card,
                _rec(
                    card.line_of("version"),
                    "version_not_bumped",
                    "version",
                    f"{result.path} differs from {self.base} but its card still declares version "
                    f"{card.version}; bump the version so old and new scores are never compared",
                ),
            )
        )


def _content_differs(old: bytes, dataset: Path, new: _Hashed) -> bool:
    if _same_bytes(dataset, old):
        return False
    a = read_records(old)
    if a.complete and new.content_hash is not None:
        return content_hash(v for _, v in a.values) != new.content_hash
    return True


def _same_bytes(path: Path, data: bytes) -> bool:
    """Whether the file at ``path`` holds exactly ``data`` (compared block by block)."""
    view = memoryview(data)
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size != len(data):
                return False
            at = 0
            while block := f.read(1 << 20):
                if view[at : at + len(block)] != block:
                    return False
                at += len(block)
            return at == len(data)
    except OSError:
        return False


# -- reading a dataset: one streaming pass -------------------------------------------

_LFS_POINTER_MAX = 1024
"""No Git LFS pointer is longer; only a file this short needs the pointer test."""


@attrs.frozen
class _Hashed:
    """What one pass over a dataset's bytes found besides the verdicts."""

    content_hash: str | None
    """:func:`~evalspec.evals.contenthash.content_hash` of its records, or ``None``
    when a line does not parse."""
    shown: dict[int, str]
    """The text (shortened, as error records show it) of each line a semantic check
    flagged while the dataset was read, and of each line ``recall`` read again."""
    recall: Recall
    """The tasks of given lines, read again (for :meth:`SemanticChecks.findings`)."""
    errors: list[OSError]
    """Why ``recall`` could not read the dataset again, if it could not."""


def _read_dataset(
    dataset: Path, registry: Registry, result: DatasetLint, checks: SemanticChecks
) -> _Hashed:
    """Validate ``dataset`` line by line, never holding its bytes or its tasks: errors
    go to ``result``, each valid task (the first of its id) to ``checks`` as it is
    read; returned: the content hash of its records.

    Each line is decoded once. A line the validator's fast path vouches for comes
    back decoded exactly as the precise parser decodes it (with msgspec, as the
    struct it was decoded into), which is what the content hash needs; only the
    other lines are parsed again, precisely.

    :raises OSError: the file cannot be read.
    """
    from evalspec.validation.fast import FastPath

    spec = registry.spec
    fast = FastPath(spec)
    vouch: Callable[[bytes], Any]
    add: Callable[[int, Any], None]
    task_id: Callable[[Any], str]
    if fast.vouch_struct is not None:
        vouch, add, task_id = fast.vouch_struct, checks.add_struct, attrgetter("task_id")
    else:
        vouch, add, task_id = fast.vouch, checks.add, itemgetter("task_id")
    canonical_task = canonical_of_vouched()
    flagged = checks.flagged
    shown_texts: dict[int, str] = {}
    records = hashlib.sha256()
    update = records.update
    complete = True
    first_seen = checks.seen  # shared: the checker's collision check looks ids up there
    problems = result.problems
    shown = result.path
    total = 0
    # The tables grow by a few objects per task and hold no reference cycles: the
    # collector's passes over them, triggered by the allocations, find nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with dataset.open("rb") as f:
            opened = file_signature(f)
            for number, raw in enumerate(bounded_lines(f), start=1):  # as read_lines(f)
                # An overlong line is its first bytes only: never vouched for.
                obj = vouch(raw) if type(raw) is bytes else None
                if obj is not None:
                    total += 1
                    if complete:
                        update(canonical_task(obj))
                        update(b"\n")
                    tid = task_id(obj)
                    first = first_seen.setdefault(tid, number)  # one probe of a big table
                    if first == number:
                        add(number, obj)
                        if flagged and flagged[-1] == number:
                            shown_texts[number] = _shown_text(raw)
                    else:
                        problems.append(Problem(shown, duplicate_record(number, tid, first, raw)))
                    continue
                verdict = line_verdict(number, raw, spec)
                value = _parsed(raw, number)
                if value is _UNPARSED:
                    complete = False
                if verdict is None:
                    continue  # a blank line
                total += 1
                if value is not _UNPARSED and complete:
                    update(canonical(value))
                    update(b"\n")
                task = verdict.task
                if task is not None:
                    first = first_seen.setdefault(task.task_id, number)
                    if first == number:
                        checks.add(number, task.to_dict())
                        if flagged and flagged[-1] == number:
                            shown_texts[number] = _shown_text(raw)
                        continue
                    verdict = LineResult(
                        number, None, (duplicate_record(number, task.task_id, first, raw),)
                    )
                problems.extend(Problem(shown, e) for e in verdict.errors)
            read = file_signature(f)
            if read != opened:
                raise _changed()
    finally:
        if collecting:
            # Everything allocated meanwhile sits in the youngest generation: the
            # first collection after enable() would walk it all (~1 s per million
            # tasks) to find nothing. freeze() + unfreeze() moves it, unwalked, to
            # the oldest generation, where long-lived objects belong.
            gc.freeze()
            gc.unfreeze()
            gc.enable()
    result.tasks = total
    hashed = PREFIX + records.hexdigest() if complete else None
    errors: list[OSError] = []

    def recall(wanted: set[int]) -> Iterator[tuple[int, Any]]:
        try:
            yield from _recall(dataset, spec, vouch, wanted, shown_texts, read)
        except OSError as exc:
            errors.append(exc)

    return _Hashed(hashed, shown_texts, recall, errors)


def _changed() -> FileChanged:
    # The error of a --jobs worker that finds its file replaced, in lint's words.
    return changed("it changed while lint read it; run lint again")


def _recall(
    dataset: Path,
    spec: Any,
    vouch: Callable[[bytes], Any],
    wanted: set[int],
    texts: dict[int, str],
    read: tuple[int, ...],
) -> Iterator[tuple[int, Any]]:
    """The tasks of the ``wanted`` lines, decoded as :func:`_read_dataset` decoded them
    (valid tasks all: only those were checked), in a second streaming pass; each
    line's text goes to ``texts``, as its findings will show it.

    :raises FileChanged: the file is not the one the first pass read (``read`` is
        its :func:`~evalspec.io.fileidentity.file_signature` then), or a wanted line
        is no valid task now.
    """
    last = max(wanted, default=0)
    found = 0
    with dataset.open("rb") as f:
        if file_signature(f) != read:
            raise _changed()
        for number, raw in enumerate(bounded_lines(f), start=1):  # as _read_dataset
            if number > last:
                break
            if number not in wanted:
                continue
            obj = vouch(raw) if type(raw) is bytes else None
            if obj is None:
                verdict = line_verdict(number, raw, spec)
                if verdict is None or verdict.task is None:
                    raise _changed()
                obj = _Decoded(verdict.task.to_dict())
            elif type(obj) is dict:
                obj = _Decoded(obj)
            texts[number] = _shown_text(raw)
            found += 1
            yield number, obj
        if found != len(wanted) or file_signature(f) != read:
            raise _changed()


_UNPARSED: Any = object()


def _parsed(raw: bytes, number: int) -> Any:
    """The JSON value of one non-blank line as :func:`read_records` reads it, or
    ``_UNPARSED``."""
    text, problem = decode_bytes(line_content(raw, number))
    if problem is not None or text is None:
        return _UNPARSED
    if not text.strip():
        return None  # blank: no verdict either, never hashed
    value, problems = parse_line(text)
    return _UNPARSED if problems else value


def _line_text(raw: bytes) -> str:
    """A line's text, without its end of line, as error records take it."""
    return raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")


def _shown_text(raw: bytes) -> str:
    """A line's text as an error record shows it."""
    return _short(_line_text(raw))


def _line_texts(dataset: Path, wanted: set[int]) -> dict[int, str]:
    """The text of each wanted line (for error records), in a second streaming pass."""
    texts: dict[int, str] = {}
    if not wanted:
        return texts
    last = max(wanted)
    with dataset.open("rb") as f:
        for number, raw in enumerate(read_lines(f), start=1):
            if number in wanted:
                texts[number] = _line_text(raw)
            if number >= last:
                break
    return texts


def manifest_datasets(layout: Layout) -> list[Path]:
    """Datasets the layout's manifest lists whose file is present locally (see manifest)."""
    return [p for p in present_manifest_files(layout.root) if p.suffix == ".jsonl"]


def lint_layout(
    layout: Layout,
    files: Sequence[Path] | None = None,
    *,
    base: str = "HEAD",
    check_git: bool = True,
) -> LintReport:
    """Lint ``files`` (default: every dataset of the layout and its manifest) of ``layout``."""
    linter = Linter(layout, base=base, check_git=check_git)
    if files is None:
        found = {p.resolve(): p for p in layout.dataset_files()}
        try:
            listed = manifest_datasets(layout)
        except ManifestUnreadable as exc:
            linter.report.io_errors.append(str(exc))
            listed = []
        for p in listed:
            found.setdefault(p.resolve(), p)
        files = [found[k] for k in sorted(found)]
    for path in files:
        linter.lint(path)
    return linter.report
