"""The semantic checks on a dataset's valid tasks, fed one task at a time
(:class:`SemanticChecks`): the per-task ones of :mod:`.taskchecks` and :mod:`.codetests`
as each task comes,
and the cross-task ones (the same rendered prompt twice, few-shot leakage, task id
collisions) on cheap keys first, then exactly on the few tasks recalled."""

from __future__ import annotations

import hashlib
import unicodedata
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Any

import attrs

from evalspec.evals.labels import Labels
from evalspec.evals.lint.codetests import untested_targets
from evalspec.evals.lint.report import record
from evalspec.evals.lint.taskchecks import (
    OptionSearches,
    id_character_problem,
    label_problems,
    option_problem,
)
from evalspec.model import ErrorRecord
from evalspec.registry.build import Registry

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
    """128-bit BLAKE2b digest of the _collapsed prompt."""
    rendered: bytes
    """Digest of the _collapsed rendered prompt."""
    examples: tuple[bytes, ...]
    """Digest of each few-shot example's _collapsed prompt."""


def _exact(task: Any) -> _Exact:
    """The exact keys of one task. The rendered prompt is never built: _collapsed, it is
    the _collapsed example prompts, completions and prompt (the empty ones left out)
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


class Decoded:
    """A decoded task object seen through the attributes of the fast path's structs."""

    __slots__ = (
        "category",
        "few_shot_examples",
        "metadata",
        "metric_name",
        "prompt",
        "targets",
        "task_id",
    )

    def __init__(self, task: Mapping[str, Any]) -> None:
        self.task_id: str = task["task_id"]
        self.category: str = task["category"]
        self.metric_name: str = task["metric_name"]
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
    and decides on their exact forms (_collapsed texts, ids, targets). It returns,
    sorted by line, what the checks found, in the order the checks were run over
    whole task lists before: labels, prompts, leakage, options, id collisions, id
    characters, then the code tests of :mod:`.codetests` (targets of a sandboxed
    metric that never call the program).

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
        self._option_searches = OptionSearches()
        # metrics that run the prediction against its targets as test programs
        self._sandboxed = frozenset(n for n, m in registry.metrics.items() if m.sandboxed)
        self._kept: dict[int, Any] | None = {} if keep_tasks else None
        self.flagged: list[int] = []
        """The line of each per-task finding as it is found, so that a reader can keep
        the text of those lines while it has them (the cross-task findings come from
        :meth:`findings`, on recalled lines)."""
        self._label_out: list[ErrorRecord] = []
        self._option_out: list[ErrorRecord] = []
        self._character_out: list[ErrorRecord] = []
        self._test_out: list[ErrorRecord] = []
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
        self.add_struct(line, Decoded(task))

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
        sandboxed, test_out = self._sandboxed, self._test_out
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
                    rec = option_problem(line, tid, prompt, targets)
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
                rec = id_character_problem(line, tid)
                if rec is not None:
                    character_out.append(rec)
                    flag(line)
            if sandboxed and task.metric_name in sandboxed:
                found = untested_targets(line, tid, targets)
                if found:
                    test_out.extend(found)
                    flag(line)

        return add

    def _check_labels(self, line: int, tid: str, meta: Mapping[str, Any]) -> None:
        """:func:`label_problems`, for a task the per-task check's quick test (required
        labels present, the declared ones a legal string) did not clear."""
        assert self._labels is not None
        found = list(label_problems(line, tid, meta, self._labels))
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
            recall = partial(recall_kept, kept)
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
            *self._test_out,
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
                yield record(
                    line,
                    "conflicting_targets",
                    "targets",
                    f"the same prompt as {first.task_id!r} (line {line0}) has different "
                    f"targets: {list(first.targets)} there, {list(task.targets)} here",
                    task.task_id,
                )
            else:
                yield record(
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
            yield record(
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
                yield record(
                    line,
                    "id_collision",
                    "task_id",
                    f"task_id {tid!r} collides with {first.task_id!r} (line {line0}) "
                    "after case folding and Unicode normalisation",
                    tid,
                )


def recall_kept(kept: Mapping[int, Any], lines: set[int]) -> Iterator[tuple[int, Any]]:
    return ((n, kept[n]) for n in lines if n in kept)
