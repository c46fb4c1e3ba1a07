"""lint's semantic checks on decoded objects against the straightforward reference.

:class:`evalspec.evals.lint.SemanticChecks` checks each task on its decoded
JSON object: it builds no ``TaskSpec``, never renders the prompt (the collapsed
rendered prompt is joined from the collapsed parts), collapses ASCII text on its
bytes and writes the content hash with msgspec where that gives the same bytes.
:class:`Reference` below is the computation it replaced, kept as the oracle:
``TaskSpec`` per task, :func:`evalspec.scoring.render.render`, ``" ".join(text.split())``.
Every test here fails on the first finding, message or hash that differs.
"""

from __future__ import annotations

import gc
import json
import os
import random
import re
import struct
import sys
import unicodedata
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalspec.evals import contenthash
from evalspec.evals.contenthash import canonical, canonical_of_vouched, file_content_hash
from evalspec.evals.labels import Labels, parse_labels
from evalspec.evals.layout import Layout
from evalspec.evals.lint import (
    SemanticChecks,
    codetests,
    lint_layout,
    offered_options,
    reading,
    report,
    semantic,
    taskchecks,
)
from evalspec.evals.scaffold import scaffold
from evalspec.model import ErrorRecord, TaskSpec
from evalspec.registry.build import Registry
from evalspec.scoring.render import render
from evalspec.validation.fast import FastPath
from evalspec.validation.validator import iter_validate, validate_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import MIXES  # the benchmark's task generator

# -- the reference: the TaskSpec- and render-based checks, as they were ----------------


def _collapse(text: str) -> str:
    return " ".join(text.split())


class Reference:
    """The semantic checks computed the plain way, on ``TaskSpec`` values."""

    def __init__(self, registry: Registry, labels: Labels | None) -> None:
        self.registry, self.labels = registry, labels
        self.label_out: list[ErrorRecord] = []
        self.prompt_out: list[ErrorRecord] = []
        self.option_out: list[ErrorRecord] = []
        self.collision_out: list[ErrorRecord] = []
        self.character_out: list[ErrorRecord] = []
        self.code_out: list[ErrorRecord] = []
        self.rendered: dict[str, tuple[int, str, tuple[str, ...]]] = {}
        self.prompts: dict[str, tuple[int, str]] = {}
        self.examples: list[tuple[int, str, int, str]] = []
        self.ids: dict[str, tuple[int, str]] = {}

    def add(self, line: int, task: TaskSpec) -> None:
        tid = task.task_id
        if self.labels is not None:
            self.label_out.extend(taskchecks.label_problems(line, tid, task.metadata, self.labels))
        key = _collapse(render(task))
        first = self.rendered.get(key)
        if first is None:
            self.rendered[key] = (line, tid, tuple(task.targets))
        else:
            line0, tid0, targets0 = first
            if sorted(targets0) != sorted(task.targets):
                self.prompt_out.append(
                    ErrorRecord(
                        line,
                        "conflicting_targets",
                        "targets",
                        f"the same prompt as {tid0!r} (line {line0}) has different "
                        f"targets: {list(targets0)} there, {list(task.targets)} here",
                        tid,
                    )
                )
            else:
                self.prompt_out.append(
                    ErrorRecord(
                        line,
                        "duplicate_prompt",
                        "prompt",
                        f"the same prompt and targets as {tid0!r} (line {line0}); "
                        "the sample would be scored twice",
                        tid,
                    )
                )
        self.prompts.setdefault(_collapse(task.prompt), (line, tid))
        for i, ex in enumerate(task.few_shot_examples):
            self.examples.append((line, tid, i, _collapse(ex.prompt)))
        pairs = self.registry.spec.categories.get(task.category)
        if pairs is not None and pairs.single_target_from and len(task.targets) == 1:
            options = offered_options(task.prompt)
            if task.targets[0] not in options:
                rec = taskchecks.option_problem(line, tid, task.prompt, task.targets)
                assert rec is not None
                self.option_out.append(rec)
        key2 = unicodedata.normalize("NFKC", tid).casefold()
        hit = self.ids.get(key2)
        if hit is None:
            self.ids[key2] = (line, tid)
        elif hit[1] != tid:
            self.collision_out.append(
                ErrorRecord(
                    line,
                    "id_collision",
                    "task_id",
                    f"task_id {tid!r} collides with {hit[1]!r} (line {hit[0]}) "
                    "after case folding and Unicode normalisation",
                    tid,
                )
            )
        rec = taskchecks.id_character_problem(line, tid)
        if rec is not None:
            self.character_out.append(rec)
        if self.registry.metric(task.metric_name).sandboxed:
            # The code tests' own decision (codetests has its tests); here, which tasks
            # it is asked about and where its findings go.
            self.code_out.extend(codetests.untested_targets(line, tid, task.targets))

    def findings(self) -> list[ErrorRecord]:
        leaks = []
        for line, tid, i, key in self.examples:
            hit = self.prompts.get(key)
            if hit is not None:
                where = "itself" if hit[1] == tid else f"{hit[1]!r} (line {hit[0]})"
                leaks.append(
                    ErrorRecord(
                        line,
                        "few_shot_leak",
                        f"few_shot_examples[{i}]",
                        f"few-shot example {i} is the evaluated prompt of {where}; "
                        "the answer leaks into the prompt",
                        tid,
                    )
                )
        out = [
            *self.label_out,
            *self.prompt_out,
            *leaks,
            *self.option_out,
            *self.collision_out,
            *self.character_out,
            *self.code_out,
        ]
        out.sort(key=lambda e: e.line)
        return out


# -- task lists that trip every semantic check ---------------------------------------------

# Whitespace of every kind, ASCII and beyond (str.isspace), to vary prompts with.
SPACES = [" ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\xa0", "\u3000", "\u2028"]
WORDS = ["Question:", "17", "+", "24", "Answer:", "答案\uff1a", "Ответ", "😀", "A.", "(B)", "x"]
# Words whose UTF-8 is made only of bytes that also occur in whitespace characters'
# (U+3001, U+2080, U+00A8): the sketch key drops them whole, so texts that differ by
# them alone share a sketch and must be told apart exactly; and a NUL.
WORDS += ["\u3001", "\u2080", "x\u00a8", "\x00"]
_VALID_LINE = (
    '{"task_id": "t1", "category": "arithmetic", "prompt": "1 + 1 =", "targets": ["2"], '
    '"metric_name": "exact_match", "post_process": "none", "metadata": {"source": "web"}}'
)
LABELS_YAML = "labels:\n  difficulty: [easy, hard, 3]\n  source: [web, book]\nrequired: [source]\n"


def _text(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        out.append(rng.choice(WORDS))
        out.append(rng.choice(SPACES) if rng.random() < 0.4 else " ")
    return "".join(out).strip() or "x"


def _respace(rng: random.Random, text: str) -> str:
    """The same words, other whitespace (the same collapsed text)."""
    words = text.split()
    lead = rng.choice(["", "", " ", "\n", "\u3000"])
    return lead + "".join(w + rng.choice(SPACES) for w in words).rstrip() or text


def _rebreak(rng: random.Random, text: str) -> str:
    """The same non-whitespace characters, broken into words elsewhere (the same
    sketch key, another collapsed text, unless no break moved)."""
    chars = [c for c in text if not c.isspace()]
    return "".join(c + (rng.choice(SPACES) if rng.random() < 0.3 else "") for c in chars) or text


def _task(
    rng: random.Random, registry: Registry, i: int, seen: list[dict[str, Any]]
) -> dict[str, Any]:
    spec = registry.spec
    lettered = sorted(n for n, c in spec.categories.items() if c.single_target_from)
    name = rng.choice(sorted(spec.categories))
    cat = spec.categories[name]
    j = i if rng.random() < 0.7 else rng.randrange(i + 1)  # ids that fold together
    tid = rng.choice(
        [
            f"t{j}",
            f"T{j}",
            f"\uff54{j}",
            f"t{j}\x1b",
            f"t{j}\u202e",
            f"t{j}\u200b",
            f"ß{j}",
            f"SS{j}",
            f"ss{j}",
            f"\u1e9e{j}",
        ]
    )
    if cat.single_target_from:
        letters = list(cat.single_target_from)
        body = _text(rng, rng.randint(1, 6))
        style = rng.choice(["A. x\nB) y\n(C) z", "a. x\n  b) y", "(A) x (B) y", "E.\tx", ""])
        prompt = f"{body}\n{style}\nAnswer:".strip()
        targets = [rng.choice(letters)]
    else:
        prompt = _text(rng, rng.randint(1, 12))
        targets = [_text(rng, 1) for _ in range(rng.randint(1, 3))]
    task: dict[str, Any] = {
        "task_id": tid,
        "category": name,
        "prompt": prompt,
        "targets": targets,
        "metric_name": cat.metrics[0],
        "post_process": cat.post_processes[0],
    }
    r = rng.random()
    if seen and r < 0.25:  # the same prompt again, respaced, same or other targets
        other = rng.choice(seen)
        task["prompt"] = _respace(rng, other["prompt"])
        task["category"] = other["category"]
        task["targets"] = list(other["targets"]) if rng.random() < 0.5 else list(targets)
        if rng.random() < 0.5 and "few_shot_examples" in other:
            task["few_shot_examples"] = [
                {"prompt": _respace(rng, e["prompt"]) if e["prompt"].strip() else e["prompt"],
                 "completion": e["completion"]}
                for e in other["few_shot_examples"]
            ]  # fmt: skip
    elif seen and r < 0.32:  # the same characters, other word breaks, or a dropped word
        other = rng.choice(seen)
        task["prompt"] = rng.choice(
            [_rebreak(rng, other["prompt"]), other["prompt"] + rng.choice(["\u3001", "\u2080"])]
        )
        task["category"] = other["category"]
        task["targets"] = list(other["targets"])
    elif seen and r < 0.37 and lettered:  # a lettered task without its option
        task["category"] = lettered[0]
        task["prompt"] = "Pick one:\nA. x\nB. y"
        task["targets"] = [rng.choice(["C", "D", "A"])]
    if rng.random() < 0.5 and "few_shot_examples" not in task:
        shots = []
        for _ in range(rng.randint(0, 4)):
            p = rng.choice(
                [
                    _text(rng, rng.randint(0, 4)),
                    _respace(rng, rng.choice(seen)["prompt"]) if seen else "x",
                    _rebreak(rng, rng.choice(seen)["prompt"]) if seen else "x",
                    "",
                    " \n ",
                ]
            )
            c = rng.choice(["4", "A", "", " ", "two words", "x\ty", "中文", _text(rng, 2)])
            shots.append({"prompt": p, "completion": c})
        task["few_shot_examples"] = shots
    if rng.random() < 0.2 and task.get("few_shot_examples"):
        # the same rendered prompt, cut elsewhere between example and completion
        ex = task["few_shot_examples"][0]
        words = (ex["prompt"] + " " + ex["completion"]).split()
        if len(words) > 1:
            task["few_shot_examples"][0] = {"prompt": " ".join(words[:-1]), "completion": words[-1]}
    if rng.random() < 0.8:
        meta: dict[str, Any] = {}
        if rng.random() < 0.9:
            meta["source"] = rng.choice(["web", "book", "web", "tv", 3, None, ["web"]])
        if rng.random() < 0.7:
            meta["difficulty"] = rng.choice(["easy", "hard", 3, "3", True, 3.0, "medium"])
        if rng.random() < 0.3:
            meta["weight"] = rng.choice([0.5, 1e-7, 2.5e16, -0.0, 10**30])
        task["metadata"] = meta
    return task


def _task_lists(registry: Registry, seeds: int = 40, n: int = 60) -> Iterator[list[dict[str, Any]]]:
    for seed in range(seeds):
        rng = random.Random(seed)
        tasks: list[dict[str, Any]] = []
        for i in range(n):
            tasks.append(_task(rng, registry, i, tasks))
        yield tasks


def _labels() -> Labels:
    labels, problems = parse_labels(LABELS_YAML)
    assert labels is not None and not problems
    return labels


def test_the_task_lists_trip_every_semantic_check(registry: Registry) -> None:
    rules: set[str] = set()
    for tasks in _task_lists(registry):
        ref = Reference(registry, _labels())
        for i, task in enumerate(tasks, start=1):
            ref.add(i, TaskSpec.from_dict(task))
        rules |= {e.rule for e in ref.findings()}
    assert rules == {
        "missing_label",
        "illegal_label",
        "conflicting_targets",
        "duplicate_prompt",
        "few_shot_leak",
        "mcq_option_missing",
        "id_collision",
        "id_control_character",
        "test_never_calls_program",
    }


@pytest.mark.parametrize("with_labels", [True, False])
def test_the_checks_on_decoded_objects_find_what_the_reference_finds(
    registry: Registry, with_labels: bool
) -> None:
    labels = _labels() if with_labels else None
    for tasks in _task_lists(registry):
        ours, ref = SemanticChecks(registry, labels), Reference(registry, labels)
        for i, task in enumerate(tasks, start=1):
            ours.add(i, task)
            ref.add(i, TaskSpec.from_dict(task))
        assert ours.findings() == ref.findings(), tasks


def test_the_checks_on_the_fast_paths_structs_find_what_the_reference_finds(
    registry: Registry,
) -> None:
    """lint hands the fast path's msgspec structs over as they are (examples and
    metadata unset when absent); lines it does not vouch for come as objects."""
    vouch = FastPath(registry.spec).vouch_struct
    assert vouch is not None  # msgspec: the `fast` extra is in `test`
    vouched = 0
    for tasks in _task_lists(registry):
        ours, ref = SemanticChecks(registry, _labels()), Reference(registry, _labels())
        for i, task in enumerate(tasks, start=1):
            struct = vouch(json.dumps(task).encode())
            if struct is None:
                ours.add(i, task)
            else:
                vouched += 1
                ours.add_struct(i, struct)
            ref.add(i, TaskSpec.from_dict(task))
        assert ours.findings() == ref.findings(), tasks
    assert vouched > 1000


@pytest.mark.parametrize(
    "ids",
    [
        ["ss1", "SS1", "ss1"],
        ["SS1", "ss1", "SS1", "ß1"],
        ["ß1", "ss1", "ß1", "SS1", "ss1"],
        ["t1", "T1", "\uff541", "t1", "T1"],
    ],
)
def test_ids_given_twice_collide_as_the_reference_says(registry: Registry, ids: list[str]) -> None:
    """Through ``add`` an id may come twice (lint's reader never passes a repeat on):
    the first task of a folded id decides, and an id is no collision with itself."""
    ours, ref = SemanticChecks(registry, None), Reference(registry, None)
    for i, tid in enumerate(ids, start=1):
        task = {**json.loads(_VALID_LINE), "task_id": tid, "prompt": f"p{i}"}
        ours.add(i, task)
        ref.add(i, TaskSpec.from_dict(task))
    assert ours.findings() == ref.findings()
    assert any(e.rule == "id_collision" for e in ref.findings())


def test_the_task_lists_hold_sketch_keys_the_exact_check_rejects(registry: Registry) -> None:
    """Texts that share a sketch key but not their collapsed form (other word breaks, a
    character the sketch drops whole), and ids that fold alike being the same id: the
    candidates the recalled, exact check must turn down, or the tests above would not
    show that it does."""
    repeated = leaked = collided = 0
    found: dict[str, int] = {}
    for tasks in _task_lists(registry):
        ours = SemanticChecks(registry, None)
        for i, task in enumerate(tasks, start=1):
            ours.add(i, task)
        for e in ours.findings():
            found[e.rule] = found.get(e.rule, 0) + 1
        repeated += sum(map(len, ours._more.values()))
        leaked += len(list(ours._leak_candidates()))
        collided += len(ours._collisions)
    assert repeated > found["conflicting_targets"] + found["duplicate_prompt"] > 0
    assert leaked > found["few_shot_leak"] > 0
    assert collided > found["id_collision"] > 0


def test_a_large_group_of_prompts_sharing_a_sketch_is_decided_as_the_reference(
    registry: Registry,
) -> None:
    """Prompts that differ only in where their spaces fall share one sketch; each task
    also holds a few-shot example that is another task's prompt, or almost. Every
    leak is looked up once (the group is not walked per example: quadratic)."""
    letters = "abcdefghijkl"
    spacings = [
        "".join(
            c + (" " if bit == "1" else "") for c, bit in zip(letters, f"{n:011b}0", strict=True)
        )
        for n in range(300)
    ]
    base = json.loads(_VALID_LINE)
    tasks = []
    for n, prompt in enumerate(spacings):
        example = spacings[(n * 7) % len(spacings)] if n % 3 else prompt.replace(" ", "  ") + "z"
        tasks.append(
            {
                **base,
                "task_id": f"t{n}",
                "prompt": prompt.strip() + " Answer:",
                "few_shot_examples": [{"prompt": example.strip() + " Answer:", "completion": "x"}],
            }
        )
    ours, ref = SemanticChecks(registry, None), Reference(registry, None)
    for i, task in enumerate(tasks, start=1):
        ours.add(i, task)
        ref.add(i, TaskSpec.from_dict(task))
    found = ours.findings()
    assert found == ref.findings()
    assert sum(e.rule == "few_shot_leak" for e in found) == 200  # the check ran


def test_the_sketch_key_drops_exactly_the_bytes_of_whitespace() -> None:
    every = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert bytes(sorted({b for c in every for b in c.encode()})) == semantic._WHITESPACE_BYTES


_any_char = st.characters(exclude_categories=())  # lone surrogates too
_any_space = st.sampled_from([*SPACES, "\x85", "\u1680", "\u2000", "\u200a", "\u202f", "\u205f"])


@given(st.lists(st.text(_any_char, min_size=1), max_size=8), st.data())
@settings(max_examples=300)
def test_texts_that_collapse_alike_share_their_sketch_key(words: list[str], data: Any) -> None:
    """Any words (surrogates, NUL, bytes of whitespace characters inside other
    characters), any whitespace between and around them."""
    words = [w for word in words for w in word.split()]
    a = " ".join(words)
    b = "".join(data.draw(_any_space) + w for w in words) + data.draw(_any_space)
    assert semantic._collapsed(a) == semantic._collapsed(b)
    assert semantic._sketch(a) == semantic._sketch(b)


def test_a_recalled_line_that_fails_is_not_decided_on_and_is_reported(
    layout: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lint reads the candidates' lines again; when it cannot, it reports the file
    as unreadable (exit 2) rather than a finding it could not decide."""
    tasks = [json.loads(_VALID_LINE), {**json.loads(_VALID_LINE), "task_id": "t2"}]
    dataset = layout / "datasets" / "example.jsonl"
    dataset.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    problems, _ = _lint_problems(layout, dataset)
    assert [p[1] for p in problems] == ["duplicate_prompt"]

    def unreadable(*args: Any) -> Iterator[tuple[int, Any]]:
        raise PermissionError(13, "Permission denied")
        yield  # a generator, as the real one

    monkeypatch.setattr(reading, "_recall", unreadable)
    report = lint_layout(Layout(layout), check_git=False)
    assert report.io_errors == [f"cannot read {report.datasets[0].path}: Permission denied"]
    assert not any(p.error.rule == "duplicate_prompt" for p in report.problems())


@pytest.mark.parametrize("change", ["same size", "shorter", "mtime set back"])
def test_a_dataset_changed_between_the_two_reads_is_reported_not_decided_on(
    layout: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """lint decides on lines it reads twice: if the file changed in between, the
    second read would decide findings about bytes the first never checked."""
    tasks = [json.loads(_VALID_LINE), {**json.loads(_VALID_LINE), "task_id": "t2"}]
    dataset = layout / "datasets" / "example.jsonl"
    dataset.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    real_recall = reading._recall

    def changed_first(*args: Any) -> Iterator[tuple[int, Any]]:
        before = dataset.stat()
        first, second = dataset.read_text(encoding="utf-8").splitlines()
        if change == "shorter":
            dataset.write_text(first + "\n", encoding="utf-8")
        else:  # one character of the second prompt, same size: no duplicate any more
            at = second.index('"prompt": "') + len('"prompt": "')
            swapped = "Y" if second[at] == "X" else "X"
            second = second[:at] + swapped + second[at + 1 :]
            dataset.write_text(first + "\n" + second + "\n", encoding="utf-8")
            assert dataset.stat().st_size == before.st_size
        if change == "mtime set back":
            os.utime(dataset, ns=(before.st_atime_ns, before.st_mtime_ns))
        yield from real_recall(*args)

    monkeypatch.setattr(reading, "_recall", changed_first)
    report = lint_layout(Layout(layout), check_git=False)
    path = report.datasets[0].path
    assert report.io_errors == [
        f"cannot read {path}: it changed while lint read it; run lint again"
    ]
    assert not any(p.error.rule == "duplicate_prompt" for p in report.problems())


def test_the_checks_are_freed_without_the_cycle_collector(registry: Registry) -> None:
    """No reference cycle keeps the checker (and its tables, a few objects per task)
    alive: the collector would walk them all to free them (~0.3 s per 100,000 tasks)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        checks = SemanticChecks(registry, _labels())
        for i, task in enumerate(next(_task_lists(registry, seeds=1)), start=1):
            checks.add(i, task)
        assert checks.findings()
        freed = weakref.ref(checks)
        del checks
        assert freed() is None
    finally:
        if collecting:
            gc.enable()


def test_a_task_given_as_taskspec_to_dict_is_checked_the_same(registry: Registry) -> None:
    """The precise path hands valid tasks over as ``TaskSpec.to_dict()`` (empty
    examples and metadata present), the fast path as decoded (absent)."""
    for tasks in _task_lists(registry, seeds=10):
        a, b = SemanticChecks(registry, _labels()), SemanticChecks(registry, _labels())
        for i, task in enumerate(tasks, start=1):
            a.add(i, task)
            b.add(i, TaskSpec.from_dict(task).to_dict())
        assert a.findings() == b.findings()


# -- the pieces, each against its definition ---------------------------------------------


def test_every_whitespace_character_but_space_is_unprintable() -> None:
    """What lets a completion without " " that is printable stand for its collapsed self."""
    for c in range(sys.maxunicode + 1):
        ch = chr(c)
        if ch.isspace() and ch != " ":
            assert not ch.isprintable(), hex(c)


@given(st.text(st.characters(max_codepoint=0x7F)))
@settings(max_examples=500)
def test_ascii_text_collapses_on_its_bytes_as_split_and_join(text: str) -> None:
    assert semantic._collapsed(text) == " ".join(text.split()).encode("ascii")


@given(st.text())
@settings(max_examples=300)
def test_any_text_collapses_as_split_and_join(text: str) -> None:
    expected = " ".join(text.split()).encode("utf-8", "surrogatepass")
    assert semantic._collapsed(text) == expected


def test_ascii_ids_fold_as_lower_does() -> None:
    """What lets an ASCII task id skip NFKC and case folding in the collision check."""
    every = "".join(map(chr, range(0x80)))
    assert unicodedata.normalize("NFKC", every).casefold() == every.lower()
    for c in every:
        assert unicodedata.normalize("NFKC", c).casefold() == c.lower()


def test_the_ascii_whitespace_bytes_are_what_split_splits_at() -> None:
    assert semantic._ASCII_SPACES == b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
    every = "".join(map(chr, range(0x80)))
    assert semantic._collapsed(every + every) == " ".join((every + every).split()).encode()


_option_line = st.sampled_from(
    ["A. x", "b) y", "(C) z", "  (d) w", "\tE.", "F.x", "G", "(H)", "(i)\u3000j", "J)", "K .", "x"]
)


def test_the_letter_searches_are_compiled_for_single_capitals_only() -> None:
    searches = taskchecks.OptionSearches()
    assert searches["C"]("Pick:\n(c) x") is not None and searches["C"]("C) x") is not None
    assert searches["C"]("Pick: C. x") is None
    assert searches["AB"] is None and searches["a"] is None and searches["É"] is None
    assert sorted(searches) == ["AB", "C", "a", "É"]


# offered_options as first written: one MULTILINE pattern.
_REFERENCE_OPTION = re.compile(r"^[ \t]*(?:\(([A-Za-z])\)|([A-Za-z])[.)])(?=\s|$)", re.MULTILINE)


@given(
    st.lists(_option_line, max_size=6),
    st.sampled_from(["\n", "\r\n", " ", "\n\n", "\u2028", "\n \t"]),
    st.sampled_from(["", "\n", " ", "\r", "\u3000"]),
)
@settings(max_examples=500)
def test_the_letter_search_finds_exactly_the_offered_options(
    lines: list[str], sep: str, end: str
) -> None:
    prompt = sep.join(lines) + end
    offered = offered_options(prompt)
    assert offered == [
        (m.group(1) or m.group(2)).upper() for m in _REFERENCE_OPTION.finditer(prompt)
    ]
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        found = taskchecks._option_search(letter)(prompt) is not None
        assert found == (letter in offered), (prompt, letter)
        if f"\n{letter}. " in prompt:  # the per-task check's quick test
            assert found, (prompt, letter)


# -- the content hash ----------------------------------------------------------------------


def test_the_vouched_canonical_form_is_canonical_on_every_code_point() -> None:
    fast = canonical_of_vouched()
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    for at in range(0, len(chars), 4096):
        chunk = chars[at : at + 4096]
        record = {"prompt": "".join(chunk), "targets": chunk[:64], "metadata": {"k": chunk[-1]}}
        assert fast(record) == canonical(record)


def test_the_vouched_canonical_form_is_canonical_on_floats() -> None:
    fast = canonical_of_vouched()
    rng = random.Random(0)
    floats = [0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 5e-324]
    floats += [float(f"{rng.randint(1, 10**17)}e{e}") for e in range(-340, 300) for _ in range(20)]
    floats += [struct.unpack("d", rng.randbytes(8))[0] for _ in range(100_000)]
    floats = [x for x in floats if x == x and abs(x) != float("inf")]
    for x in floats:  # the floats left to json.dumps are those it writes with an exponent
        assert contenthash._exponent_float(x) == ("e" in repr(x)), x
    assert contenthash._exponent_float({"a": [1, {"b": float("nan")}]})
    assert not contenthash._exponent_float({"a": [1, {"b": 0.5, "c": -0.0}], "d": "1e-9"})
    for at in range(0, len(floats), 50):
        part = floats[at : at + 50]
        for record in ({"metadata": {"x": part}}, {"metadata": {"x": part[0], "y": [part[-1]]}}):
            assert fast(record) == canonical(record)


def test_exponent_floats_are_found_at_any_depth() -> None:
    """The walk recurses per container; past the interpreter's stack, with a list."""
    for inner, expected in ((1e-9, True), (0.5, False), (2.0**60, True), (float("nan"), True)):
        deep: Any = inner
        for i in range(5000):
            deep = [deep] if i % 2 else {"k": deep, "s": "1e-9"}
        assert contenthash._exponent_float(deep) is expected
        assert contenthash._exponent_float_walked(deep) is expected
        shallow = {"a": [1, {"b": [inner]}], "c": "x"}
        assert contenthash._exponent_float(shallow) is expected


def test_the_vouched_canonical_form_is_canonical_on_generated_tasks(registry: Registry) -> None:
    fast, vouch = canonical_of_vouched(), FastPath(registry.spec).vouch
    vouched = 0
    for mix in sorted(MIXES):
        for raw in MIXES[mix](3000):
            obj = vouch(raw)
            if obj is not None:
                vouched += 1
                assert fast(obj) == canonical(obj)
    assert vouched > 5000


# -- end to end: lint against validation and the reference -----------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "evals"
    scaffold(root)
    (root / "config" / "labels.yaml").write_text(LABELS_YAML, encoding="utf-8")
    return root


def _reference_problems(path: Path, registry: Registry) -> list[tuple[Any, ...]]:
    """What lint reports for the dataset at ``path``: the validator's errors, then the
    reference's semantic findings with their lines' text, at the spec version its
    data card names (the scaffold's card: ``spec_version: 1``), as lint validates."""
    registry = registry.at_version(card_spec_version(path))
    errors = [e.to_dict() for e in validate_file(path, registry=registry).errors]
    ref = Reference(registry, _labels())
    for result in iter_validate(path, registry=registry):
        if result.task is not None:
            ref.add(result.line, result.task)
    lines = path.read_bytes().split(b"\n")
    for e in ref.findings():
        text = lines[e.line - 1].rstrip(b"\r").decode("utf-8", "replace")
        errors.append({**e.to_dict(), "text": report.shorten(text)})
    return [tuple(d.values()) for d in errors]


def card_spec_version(dataset: Path) -> int:
    card = dataset.with_name(dataset.stem + ".card.md").read_text(encoding="utf-8")
    found = re.search(r"^spec_version:\s*(\d+)", card, re.MULTILINE)
    assert found is not None, "the scaffold's card names its spec version"
    return int(found.group(1))


def _lint_problems(root: Path, dataset: Path) -> tuple[list[tuple[Any, ...]], str | None]:
    data = lint_layout(Layout(root), check_git=False).datasets[0]
    shown = data.path
    problems = [tuple(p.error.to_dict().values()) for p in data.problems if p.file == shown]
    return problems, data.content_hash


@pytest.mark.parametrize("decoder", ["msgspec", "orjson"])
@pytest.mark.parametrize("seed", range(6))
def test_lint_reports_what_validation_and_the_reference_report(
    layout: Path, registry: Registry, seed: int, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With msgspec lint checks the fast path's structs; without it (orjson) the
    dicts ``FastPath.vouch`` returns, and hashes with :func:`canonical`."""
    if decoder == "orjson":
        monkeypatch.setitem(sys.modules, "msgspec", None)  # import msgspec: ImportError
        assert FastPath(registry.spec).parser == "orjson"
    rng = random.Random(seed)
    tasks = list(_task_lists(registry, seeds=seed + 1, n=80))[-1]
    raw = [json.dumps(t, ensure_ascii=rng.random() < 0.5) for t in tasks]
    for _ in range(6):  # lines the precise path decides: invalid, duplicate id, odd keys
        at = rng.randrange(len(raw))
        raw.insert(
            at,
            rng.choice(
                [
                    raw[rng.randrange(len(raw))],
                    "{not json",
                    json.dumps({**tasks[0], "task_id": "dup", "extra": 1}),
                    raw[0].replace('"task_id"', '"task\\u005fid"', 1),
                    "",
                ]
            ),
        )
    raw = [r + "\r" if rng.random() < 0.2 else r for r in raw]  # some CRLF endings
    dataset = layout / "datasets" / "example.jsonl"
    dataset.write_text("\n".join(raw) + "\n", encoding="utf-8")
    problems, _ = _lint_problems(layout, dataset)
    assert problems == _reference_problems(dataset, registry)


def test_an_overlong_line_is_reported_as_the_validator_reports_it(
    layout: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the line limit only the first bytes of a line are kept (never vouched
    for): a valid task padded with spaces beyond the limit is ``invalid_json``."""
    line = json.dumps(json.loads(_VALID_LINE), separators=(",", ":"))
    dataset = layout / "datasets" / "example.jsonl"
    dataset.write_text(line + "\n" + line.replace('"t1"', '"t2"') + " " * 400 + "\n")
    monkeypatch.setenv("EVALSPEC_MAX_LINE_BYTES", str(len(line) + 100))
    problems, _ = _lint_problems(layout, dataset)
    assert [(p[0], p[1]) for p in problems] == [(2, "invalid_json")]
    assert problems == _reference_problems(dataset, registry)


@pytest.mark.parametrize("decoder", ["msgspec", "orjson"])
@pytest.mark.parametrize("mix", sorted(MIXES))
def test_lint_hashes_a_clean_generated_dataset_as_its_records(
    layout: Path, registry: Registry, mix: str, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a dataset every line of which parses, the hash is computed on every record,
    most of them through msgspec (or, without it, ``json.dumps``): it must be the
    hash of the records."""
    if decoder == "orjson":
        monkeypatch.setitem(sys.modules, "msgspec", None)
    dataset = layout / "datasets" / "example.jsonl"
    lines = [raw for raw in MIXES[mix](1500) if reading._parsed(raw, 1) is not reading._UNPARSED]
    dataset.write_bytes(b"\n".join(lines) + b"\n")
    problems, hashed = _lint_problems(layout, dataset)
    assert hashed is not None and hashed == file_content_hash(dataset)
    assert problems == _reference_problems(dataset, registry)


def test_the_vouched_canonical_form_uses_msgspec_when_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tests above compare msgspec's bytes, not :func:`canonical` with itself; and
    without msgspec the hash is still written, by :func:`canonical`."""
    assert canonical_of_vouched() is not canonical  # the `fast` extra is in `test`
    monkeypatch.setitem(sys.modules, "msgspec", None)  # import msgspec: ImportError
    assert canonical_of_vouched() is canonical
