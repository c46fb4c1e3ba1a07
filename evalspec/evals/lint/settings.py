"""The layout's lint settings, ``config/lint.yaml``, in ruff's terms::

    select: [card, missing_label]   # report only these rules (default: every rule)
    ignore: [owner_not_codeowner]   # never report these (wins over select)
    per-file-ignores:               # glob, relative to the layout -> rules not reported there
      "datasets/legacy_*.jsonl": [duplicate_prompt, few_shot_leak]
      "*.card.md": [seed_missing]   # a pattern without a / matches the file name

A code names a rule and every rule it is the word prefix of (as for ``--select``).
The file sits beside ``gates.yaml`` and ``labels.yaml``, so the rules of a layout
travel with it. On the command line ``--select`` replaces ``select`` and
``--ignore`` adds to ``ignore``, as in ruff.

A settings file can arrive in a pull request: it is data, read through
:mod:`evalspec.io.safeload` (size, depth and alias limits, no tags), and every key
or code it names must exist: a typo must not turn a rule off in silence, so an
unknown key or rule code is a :class:`SettingsError` naming the file, line and key.
Globs are matched segment by segment (``**`` any number of directories, ``*`` and
``?`` within one), never compiled into one regular expression a hostile pattern
could make backtrack.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import EvalspecError
from evalspec.evals.layout import Layout
from evalspec.evals.lint.report import LintProblem, LintReport, RuleSelection, covers, relative_name
from evalspec.evals.yamlfile import YamlMapping, YamlSyntaxError, load_mapping
from evalspec.io.repository import OutsideRootError, repository_of
from evalspec.io.safeload import DocumentError, read_text_inside
from evalspec.io.wording import one_line

SETTINGS_FILE = "lint.yaml"
KEYS = ("select", "ignore", "per-file-ignores")


class SettingsError(EvalspecError):
    """``config/lint.yaml`` cannot be used; ``problems`` has one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def known_rules() -> tuple[str, ...]:
    """Every rule code lint can report: the validator's and lint's own."""
    from evalspec.evals.lintrules import LINT_RULES
    from evalspec.rules import RULES

    return (*RULES, *LINT_RULES)


def unknown_code(code: str) -> str:
    """The problem with a selection code that names no rule (a typo would select nothing)."""
    return (
        f"unknown rule code {one_line(code)!r} (the rules are listed in the README's lint "
        "table and `evalspec validate`'s rule codes)"
    )


@attrs.frozen
class LintSettings:
    """What ``config/lint.yaml`` chooses (the defaults: every rule, everywhere)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``(glob, codes)`` in file order."""

    def selection(self, given: RuleSelection) -> RuleSelection:
        """These settings under the command line's: its select replaces, its ignore adds."""
        return RuleSelection(
            select=given.select or self.select, ignore=(*self.ignore, *given.ignore)
        )

    def ignored_in(self, relative: str) -> tuple[str, ...]:
        """The codes the per-file ignores give a file (its path relative to the layout)."""
        return tuple(
            code
            for pattern, codes in self.per_file_ignores
            if glob_matches(pattern, relative)
            for code in codes
        )


def read_settings(layout: Layout) -> LintSettings:
    """The settings of ``layout`` (the defaults when it has no ``config/lint.yaml``).

    :raises SettingsError: the file cannot be read, is not YAML, or names an
        unknown key, a value of the wrong type or an unknown rule code.
    :raises MissingYamlError: PyYAML is not installed.
    """
    path = layout.config / SETTINGS_FILE
    shown = relative_name(path)
    if not (path.exists() or path.is_symlink()):
        return LintSettings()
    try:
        text = read_text_inside(path, repository_of(str(layout.root)))
        mapping = load_mapping(text, what="the lint settings file")
    except OutsideRootError as exc:
        raise SettingsError([f"refusing to read {shown}: {_why(exc)}"]) from None
    except (OSError, UnicodeDecodeError, DocumentError) as exc:
        raise SettingsError([f"cannot read {shown}: {exc}"]) from None
    except YamlSyntaxError as exc:
        raise SettingsError([f"{shown}:{exc.line}: {exc.message}"]) from None
    problems: list[tuple[int, str]] = []
    settings = _settings(mapping, shown, problems)
    if problems:
        raise SettingsError([text for _, text in sorted(problems, key=lambda p: p[0])])
    return settings


def _why(exc: OutsideRootError) -> str:
    """The reason of an :class:`OutsideRootError`, without the path it repeats."""
    return str(exc).split(": ", 1)[-1]


def _settings(mapping: YamlMapping, shown: str, problems: list[tuple[int, str]]) -> LintSettings:
    rules = known_rules()

    def problem(path: tuple[str, ...], message: str) -> None:
        line = mapping.line_at(*path)
        problems.append((line, f"{shown}:{line}: {one_line('.'.join(path))}: {message}"))

    def codes(value: Any, path: tuple[str, ...]) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            problem(path, "must be a list of rule codes, e.g. [duplicate_prompt, card]")
            return ()
        for code in value:
            if not any(covers(code, rule) for rule in rules):
                problem(path, unknown_code(code))
        return tuple(value)

    for key in mapping.data:
        if key not in KEYS:
            problem((key,), f"unknown key: the lint settings have {', '.join(KEYS)}")
    select = codes(mapping.data["select"], ("select",)) if "select" in mapping.data else ()
    ignore = codes(mapping.data["ignore"], ("ignore",)) if "ignore" in mapping.data else ()
    raw = mapping.data.get("per-file-ignores", {})
    per_file: list[tuple[str, tuple[str, ...]]] = []
    if not isinstance(raw, dict):
        problem(("per-file-ignores",), "must map a glob to the rule codes it ignores")
        raw = {}
    for pattern, value in raw.items():
        where = ("per-file-ignores", str(pattern))
        if not isinstance(pattern, str) or not pattern or pattern.startswith("/"):
            problem(where, "a pattern is a glob relative to the layout, e.g. datasets/old_*.jsonl")
            continue
        per_file.append((pattern, codes(value, where)))
    return LintSettings(select, ignore, tuple(per_file))


def glob_matches(pattern: str, relative: str) -> bool:
    """Whether ``relative`` (a ``/``-separated path) matches ``pattern``: a pattern
    without ``/`` matches the file name, else the whole path, ``**`` standing for
    any number of directories."""
    parts = tuple(relative.split("/"))
    if "/" not in pattern:
        return fnmatch.fnmatchcase(parts[-1], pattern)
    return _match(tuple(pattern.strip("/").split("/")), parts)


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    @functools.cache
    def at(i: int, j: int) -> bool:  # pattern[i:] against parts[j:]
        if i == len(pattern):
            return j == len(parts)
        if pattern[i] == "**":
            return any(at(i + 1, k) for k in range(j, len(parts) + 1))
        return j < len(parts) and fnmatch.fnmatchcase(parts[j], pattern[i]) and at(i + 1, j + 1)

    return at(0, 0)


def layout_relative(layout: Layout, shown: str) -> str | None:
    """The path of a problem's file (as shown: relative to the working directory or
    absolute) relative to the layout, or None when it is outside it."""
    root = os.path.realpath(layout.root)
    for candidate in (os.path.abspath(shown), os.path.realpath(shown)):
        relative = os.path.relpath(candidate, root)
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            return Path(relative).as_posix()
    return None


def apply_settings(
    report: LintReport, layout: Layout, settings: LintSettings, given: RuleSelection
) -> None:
    """Drop from ``report`` what the selection (the settings under ``given``) and the
    per-file ignores do not keep."""
    selection = settings.selection(given)

    @functools.cache
    def selection_for(file: str) -> RuleSelection:
        relative = layout_relative(layout, file)
        extra = settings.ignored_in(relative) if relative is not None else ()
        return RuleSelection(selection.select, (*selection.ignore, *extra))

    def kept(problem: LintProblem) -> bool:
        return selection_for(problem.file).keeps(problem.error.rule)

    report.layout_problems[:] = filter(kept, report.layout_problems)
    for d in report.datasets:
        d.problems[:] = filter(kept, d.problems)
        d.suppressed[:] = [s for s in d.suppressed if kept(s.problem)]


__all__ = [
    "KEYS",
    "SETTINGS_FILE",
    "LintSettings",
    "SettingsError",
    "apply_settings",
    "glob_matches",
    "known_rules",
    "read_settings",
    "unknown_code",
]
