"""The :class:`Linter`: one dataset after another, its data card, the spec version
the card names (the registry to validate at), code ownership (CODEOWNERS) and, inside
git, that a changed dataset came with a version bump; the tasks themselves are read
by :mod:`.reading` and checked by :mod:`.semantic`."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import attrs

from evalspec.errors import SpecVersionError
from evalspec.evals import codeowners, gitrepo
from evalspec.evals.card import DataCard, Suppression, card_path, parse_card
from evalspec.evals.contenthash import content_hash
from evalspec.evals.labels import Labels, parse_labels
from evalspec.evals.layout import Layout
from evalspec.evals.lint.reading import LFS_POINTER_MAX, Hashed, line_texts, read_dataset
from evalspec.evals.lint.report import (
    DatasetLint,
    LintProblem,
    LintReport,
    SuppressedProblem,
    covers,
    from_card,
    record,
    relative_name,
    shorten,
)
from evalspec.evals.lint.semantic import SemanticChecks
from evalspec.evals.lint.settings import known_rules, unknown_code
from evalspec.evals.lintrules import LINT_RULES
from evalspec.evals.records import is_lfs_pointer, read_records
from evalspec.io.repository import OutsideRootError, repository_of
from evalspec.io.safeload import MAX_TEXT_BYTES, DocumentError, read_text_inside
from evalspec.io.wording import one_line
from evalspec.model import ErrorRecord
from evalspec.registry.build import Registry, default_registry

UNREADABLE = (OSError, UnicodeDecodeError, DocumentError, OutsideRootError)
"""Why a card, the labels file or CODEOWNERS could not be read (an I/O error)."""


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
    _repository: str = attrs.field(init=False, default="")
    """What the layout's files are read inside: a symlink out of it is refused."""

    def __attrs_post_init__(self) -> None:
        self._repository = repository_of(str(self.layout.root))
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
                text = read_text_inside(self._codeowners_file, self._repository, MAX_TEXT_BYTES)
            except UNREADABLE as exc:
                self.report.io_errors.append(
                    f"cannot read {relative_name(self._codeowners_file)}: {exc}"
                )
            else:
                self._codeowners = codeowners.parse_codeowners(text)

    def _read_labels(self) -> None:
        path = self.layout.labels_file
        shown = relative_name(path)
        if not path.is_file():
            self.report.layout_problems.append(
                LintProblem(
                    shown,
                    record(
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
            text = read_text_inside(path, self._repository)
        except UNREADABLE as exc:
            self.report.io_errors.append(f"cannot read {shown}: {exc}")
            return
        labels, problems = parse_labels(text)
        self.report.layout_problems.extend(from_card(shown, p) for p in problems)
        self.labels = labels

    def lint(self, dataset: Path) -> DatasetLint:
        """Lint one dataset file and record the result in :attr:`report`."""
        cpath = card_path(dataset)
        result = DatasetLint(
            relative_name(dataset), relative_name(cpath), self.layout.dataset_name(dataset)
        )
        self.report.datasets.append(result)
        try:
            with dataset.open("rb") as f:
                head = f.read(LFS_POINTER_MAX + 1)
        except OSError as exc:
            self.report.io_errors.append(f"cannot read {result.path}: {exc.strerror or exc}")
            return result
        card = self._card(cpath, result)
        if is_lfs_pointer(head):
            result.problems.append(
                LintProblem(
                    result.path,
                    record(
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
            hashed = read_dataset(dataset, registry, result, checks)
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
            rest = line_texts(dataset, {e.line for e in semantic} - shown.keys())
        except OSError as exc:
            self.report.io_errors.append(f"cannot read {result.path}: {exc.strerror or exc}")
            rest = {}
        for e in semantic:
            text = shown.get(e.line)
            if text is None:
                text = shorten(rest.get(e.line, ""))
            error = ErrorRecord(e.line, e.rule, e.field, e.message, e.task_id, text)
            result.problems.append(LintProblem(result.path, error))
        if card is not None:
            self._check_owner(dataset, card, result)
            self._check_bump(dataset, cpath, hashed, card, result)
            _suppress(card.suppressions, result)
        return result

    def _card(self, cpath: Path, result: DatasetLint) -> DataCard | None:
        if not cpath.is_file():
            result.problems.append(
                LintProblem(
                    result.path,
                    record(
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
            text = read_text_inside(cpath, self._repository, MAX_TEXT_BYTES)
        except UNREADABLE as exc:
            self.report.io_errors.append(f"cannot read {result.card}: {exc}")
            return None
        card, problems = parse_card(text)
        result.problems.extend(from_card(result.card, p) for p in problems)
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
                LintProblem(
                    result.card,
                    record(
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

        def not_a_code_owner(message: str) -> None:
            problem = record(line, "owner_not_codeowner", "owner", message)
            result.problems.append(LintProblem(result.card, problem))

        if self._codeowners is None:
            not_a_code_owner(
                f"no CODEOWNERS file in {relative_name(self._owner_root) or '.'} (looked in "
                ".github/, the root and docs/), so no owner approves changes to this dataset; "
                "`evalspec init` writes one from the cards' owners"
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
            where = relative_name(self._codeowners_file)
            if rule is None:
                why = f"no pattern in {where} matches {rel}"
            else:
                who = ", ".join(rule.owners) or "nobody"
                why = f"{where}:{rule.line} ({rule.pattern}) gives {rel} to {who}"
            not_a_code_owner(f"card owner {owner} is not a code owner of the dataset: {why}")

    def _check_bump(
        self, dataset: Path, cpath: Path, new: Hashed, card: DataCard, result: DatasetLint
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
            LintProblem(
                result.card,
                record(
                    card.line_of("version"),
                    "version_not_bumped",
                    "version",
                    f"{result.path} differs from {self.base} but its card still declares version "
                    f"{card.version}; bump the version so old and new scores are never compared",
                ),
            )
        )


def _suppress(suppressions: Sequence[Suppression], result: DatasetLint) -> None:
    """Move the tasks' problems the card suppresses to ``result.suppressed``; report
    each code of an entry that suppresses nothing (``unused_suppression``, as ruff's
    RUF100), and each code that names no lint rule. Only lint's own rules can be
    suppressed: a task the spec rejects stays rejected, or lint would pass a file
    that validate and score refuse."""
    if not suppressions:
        return
    entries: dict[str, list[tuple[Suppression, str]]] = defaultdict(list)
    for s in suppressions:
        for code in s.rules:
            if any(covers(code, rule) for rule in LINT_RULES):
                entries[s.task_id].append((s, code))
                continue
            if any(covers(code, rule) for rule in known_rules()):
                message = (
                    f"{one_line(code)} is a task-spec rule, which no suppression lifts: "
                    "the task would still fail validate and score; fix the task"
                )
            else:
                message = unknown_code(code)
            problem = record(s.line, "card_field", f"{s.field}.rules", message)
            result.problems.append(LintProblem(result.card, problem))
    used: set[tuple[Suppression, str]] = set()
    remaining: list[LintProblem] = []
    for p in result.problems:
        task = p.error.task_id
        matching = [
            (s, code)
            for s, code in (entries.get(task, ()) if p.file == result.path and task else ())
            if covers(code, p.error.rule) and p.error.rule in LINT_RULES
        ]
        if matching:
            used.update(matching)
            result.suppressed.append(SuppressedProblem(p, matching[0][0].reason))
        else:
            remaining.append(p)
    result.problems[:] = remaining
    for pairs in entries.values():
        for s, code in pairs:
            if (s, code) not in used:
                message = (
                    f"suppresses {one_line(code)} for task {one_line(s.task_id)!r}, which has "
                    "no such problem: remove it, so it cannot hide a later one"
                )
                problem = record(s.line, "unused_suppression", s.field, message)
                result.problems.append(LintProblem(result.card, problem))


def _content_differs(old: bytes, dataset: Path, new: Hashed) -> bool:
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
