"""``evalspec lint``: the quality gate a dataset passes before it enters the repository.

For each dataset of a layout: the data card (present, parseable, version,
seed, spec version, sources, owner), task-spec validation at the card's spec
version, legal stratification labels, the semantic checks that silently
corrupt scores, code ownership, and, inside git, that a changed dataset came
with a version bump. Every problem is an :class:`evalspec.ErrorRecord` with
the file it belongs to.
"""

from __future__ import annotations

import io
import os
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import SpecVersionError
from evalspec.model import ErrorRecord, TaskSpec
from evalspec.project import codeowners, gitrepo
from evalspec.project.card import CardProblem, DataCard, card_path, parse_card
from evalspec.project.contenthash import content_hash
from evalspec.project.labels import Labels, parse_labels
from evalspec.project.layout import Layout
from evalspec.project.manifestlink import ManifestUnreadable, present_manifest_files
from evalspec.project.records import is_lfs_pointer, read_records
from evalspec.registry import Registry, default_registry
from evalspec.safeload import MAX_TEXT_BYTES, DocumentError, read_text_bounded
from evalspec.validate import iter_validate

_OPTION = re.compile(r"^[ \t]*(?:\(([A-Za-z])\)|([A-Za-z])[.)])(?=\s|$)", re.MULTILINE)


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


def _collapse(text: str) -> str:
    return " ".join(text.split())


# -- the checks on validated tasks ---------------------------------------------------


def check_labels(tasks: Sequence[tuple[int, TaskSpec]], labels: Labels) -> list[ErrorRecord]:
    """Required labels present and every declared label's value legal."""
    out = []
    for line, task in tasks:
        meta = task.metadata
        for name in labels.required:
            if name not in meta:
                out.append(
                    _rec(
                        line,
                        "missing_label",
                        f"metadata.{name}",
                        f"metadata has no {name!r} label (legal: {', '.join(labels.legal[name])})",
                        task.task_id,
                    )
                )
        for name, legal in labels.legal.items():
            if name not in meta:
                continue
            value = meta[name]
            if (
                isinstance(value, bool)
                or not isinstance(value, (str, int))
                or str(value) not in legal
            ):
                out.append(
                    _rec(
                        line,
                        "illegal_label",
                        f"metadata.{name}",
                        f"{name}={value!r} is not a legal value (legal: "
                        f"{', '.join(legal)}; see config/labels.yaml)",
                        task.task_id,
                    )
                )
    return out


def check_prompts(tasks: Sequence[tuple[int, TaskSpec]]) -> list[ErrorRecord]:
    """The same rendered prompt twice: conflicting targets, or the same sample scored twice."""
    out = []
    from evalspec.prompting import render

    first: dict[str, tuple[int, TaskSpec]] = {}
    for line, task in tasks:
        key = _collapse(render(task))
        if key not in first:
            first[key] = (line, task)
            continue
        line0, task0 = first[key]
        if sorted(task0.targets) != sorted(task.targets):
            out.append(
                _rec(
                    line,
                    "conflicting_targets",
                    "targets",
                    f"the same prompt as {task0.task_id!r} (line {line0}) has different "
                    f"targets: {list(task0.targets)} there, {list(task.targets)} here",
                    task.task_id,
                )
            )
        else:
            out.append(
                _rec(
                    line,
                    "duplicate_prompt",
                    "prompt",
                    f"the same prompt and targets as {task0.task_id!r} (line {line0}); "
                    "the sample would be scored twice",
                    task.task_id,
                )
            )
    return out


def check_leakage(tasks: Sequence[tuple[int, TaskSpec]]) -> list[ErrorRecord]:
    """A few-shot example whose prompt is an evaluated prompt of the same dataset."""
    prompts: dict[str, tuple[int, str]] = {}
    for line, task in tasks:
        prompts.setdefault(_collapse(task.prompt), (line, task.task_id))
    out = []
    for line, task in tasks:
        for i, ex in enumerate(task.few_shot_examples):
            hit = prompts.get(_collapse(ex.prompt))
            if hit is not None:
                where = "itself" if hit[1] == task.task_id else f"{hit[1]!r} (line {hit[0]})"
                out.append(
                    _rec(
                        line,
                        "few_shot_leak",
                        f"few_shot_examples[{i}]",
                        f"few-shot example {i} is the evaluated prompt of {where}; "
                        "the answer leaks into the prompt",
                        task.task_id,
                    )
                )
    return out


def offered_options(prompt: str) -> list[str]:
    """Option letters at line starts: ``A.``, ``B)``, ``(C)``, in order of appearance."""
    return [(m.group(1) or m.group(2)).upper() for m in _OPTION.finditer(prompt)]


def check_options(tasks: Sequence[tuple[int, TaskSpec]], registry: Registry) -> list[ErrorRecord]:
    """A single-letter target must be an option the prompt actually offers."""
    out = []
    for line, task in tasks:
        pairs = registry.spec.categories.get(task.category)
        if pairs is None or not pairs.single_target_from or len(task.targets) != 1:
            continue
        options = offered_options(task.prompt)
        target = task.targets[0]
        if target in options:
            continue
        offered = (
            f"the prompt offers {', '.join(options)}"
            if options
            else "the prompt offers no lettered options (lines starting 'A.', 'B)' or '(C)')"
        )
        out.append(
            _rec(
                line,
                "mcq_option_missing",
                "targets",
                f"target {target!r} is not an option: {offered}",
                task.task_id,
            )
        )
    return out


def check_id_collisions(tasks: Sequence[tuple[int, TaskSpec]]) -> list[ErrorRecord]:
    """Distinct task ids that are equal after NFKC normalisation and case folding."""
    seen: dict[str, tuple[int, str]] = {}
    out = []
    for line, task in tasks:
        key = unicodedata.normalize("NFKC", task.task_id).casefold()
        hit = seen.get(key)
        if hit is None:
            seen[key] = (line, task.task_id)
        elif hit[1] != task.task_id:
            out.append(
                _rec(
                    line,
                    "id_collision",
                    "task_id",
                    f"task_id {task.task_id!r} collides with {hit[1]!r} (line {hit[0]}) "
                    "after case folding and Unicode normalisation",
                    task.task_id,
                )
            )
    return out


# Bidirectional-text controls (the "Trojan Source" characters): invisible, and they
# reorder what a reviewer sees.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def check_id_characters(tasks: Sequence[tuple[int, TaskSpec]]) -> list[ErrorRecord]:
    """Task ids holding a control character or a bidirectional-text control.

    The validator (spec v1, frozen) accepts them; they break terminals, logs,
    CSV exports and file names built from ids, and can hide in a review.
    """
    out = []
    for line, task in tasks:
        bad = next(
            (c for c in task.task_id if unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS),
            None,
        )
        if bad is not None:
            out.append(
                _rec(
                    line,
                    "id_control_character",
                    "task_id",
                    f"task_id {task.task_id!r} holds the control character U+{ord(bad):04X}; "
                    "use printable characters only",
                    task.task_id,
                )
            )
    return out


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
            data = dataset.read_bytes()
        except OSError as exc:
            self.report.io_errors.append(f"cannot read {result.path}: {exc.strerror or exc}")
            return result
        card = self._card(cpath, result)
        if is_lfs_pointer(data):
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
        records = read_records(data)
        result.tasks = len(records.values) + len(records.unparsed)
        if records.complete:
            result.content_hash = content_hash(v for _, v in records.values)
        registry = self._registry(card, result)
        tasks: list[tuple[int, TaskSpec]] = []
        for verdict in iter_validate(io.BytesIO(data), registry=registry):
            if verdict.task is not None:
                tasks.append((verdict.line, verdict.task))
            result.problems.extend(Problem(result.path, e) for e in verdict.errors)
        semantic: list[ErrorRecord] = []
        if self.labels is not None:
            semantic += check_labels(tasks, self.labels)
        semantic += check_prompts(tasks)
        semantic += check_leakage(tasks)
        semantic += check_options(tasks, registry)
        semantic += check_id_collisions(tasks)
        semantic += check_id_characters(tasks)
        semantic.sort(key=lambda e: e.line)
        raw_lines = data.split(b"\n")
        for e in semantic:
            text = raw_lines[e.line - 1].rstrip(b"\r").decode("utf-8", "replace")
            result.problems.append(Problem(result.path, attrs.evolve(e, text=_short(text))))
        if card is not None:
            self._check_owner(dataset, card, result)
            self._check_bump(dataset, cpath, data, card, result)
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
        self, dataset: Path, cpath: Path, data: bytes, card: DataCard, result: DatasetLint
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
        if old is None or not _content_differs(old, data):
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


def _content_differs(old: bytes, new: bytes) -> bool:
    if old == new:
        return False
    a, b = read_records(old), read_records(new)
    if a.complete and b.complete:
        return content_hash(v for _, v in a.values) != content_hash(v for _, v in b.values)
    return True


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
