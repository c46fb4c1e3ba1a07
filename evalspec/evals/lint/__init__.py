"""``evalspec lint``: the quality gate a dataset passes before it enters the repository.

For each dataset of a layout: the data card (present, parseable, version,
seed, spec version, sources, owner), task-spec validation at the card's spec
version, legal stratification labels, the semantic checks that silently
corrupt scores, code ownership, and, inside git, that a changed dataset came
with a version bump. Every problem is an :class:`evalspec.ErrorRecord` with
the file it belongs to.

The package is cut at its seams: :mod:`.report` (what lint reports),
:mod:`.taskchecks` (the checks on one task), :mod:`.semantic` (the checks fed task
by task, the cross-task ones among them), :mod:`.reading` (the streaming read of a
dataset) and :mod:`.linter` (the card, registry, CODEOWNERS and version-bump checks,
and the dataset loop). The entry points are here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalspec.evals.layout import Layout
from evalspec.evals.lint.linter import Linter
from evalspec.evals.lint.report import (
    DatasetLint,
    LintProblem,
    LintReport,
    RuleSelection,
    relative_name,
)
from evalspec.evals.lint.semantic import SemanticChecks
from evalspec.evals.lint.settings import SettingsError, apply_settings, read_settings
from evalspec.evals.lint.taskchecks import offered_options
from evalspec.evals.manifestlink import ManifestUnreadable, present_manifest_files


def manifest_datasets(layout: Layout) -> list[Path]:
    """Datasets the layout's manifest lists whose file is present locally (see manifest)."""
    return [p for p in present_manifest_files(layout.root) if p.suffix == ".jsonl"]


def lint_layout(
    layout: Layout,
    files: Sequence[Path] | None = None,
    *,
    base: str = "HEAD",
    check_git: bool = True,
    selection: RuleSelection | None = None,
) -> LintReport:
    """Lint ``files`` (default: every dataset of the layout and its manifest) of ``layout``.

    The report holds the problems of the rules ``selection`` (the command line's
    ``--select`` / ``--ignore``) and the layout's ``config/lint.yaml`` keep
    (:mod:`.settings`).

    :raises SettingsError: the settings file cannot be used; nothing is linted (a
        typo there must not change the verdict in silence).
    :raises MissingYamlError: PyYAML is not installed.
    """
    settings = read_settings(layout)
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
    apply_settings(linter.report, layout, settings, selection or RuleSelection())
    return linter.report


__all__ = [
    "DatasetLint",
    "LintProblem",
    "LintReport",
    "Linter",
    "RuleSelection",
    "SemanticChecks",
    "SettingsError",
    "lint_layout",
    "manifest_datasets",
    "offered_options",
    "relative_name",
]
