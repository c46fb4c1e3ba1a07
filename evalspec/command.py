"""The commands as library functions: one plain function per ``evalspec`` command.

Each function does the command's work and returns a result value; none prints,
exits or parses arguments. The command line (:mod:`evalspec.cli.commands`) is
built over them: a subcommand parses its arguments, calls its one function here
and prints the result with its exit code. Alembic's ``alembic.command`` is the
model.

Inputs are what the command line takes: paths (``-`` is standard input where the
command reads one), and options as keyword arguments. Bad input a command finds
is in its result (with :attr:`exit_code` 1 or 2); a usage error (options that do
not go together) raises :class:`CommandUsageError`, and the errors of the layers
below (a plugin that fails to load, a missing optional dependency) propagate as
the :class:`~evalspec.errors.EvalspecError` they are.

The result classes are plain slotted read-only classes, not attrs ones: a warm
``evalspec validate`` of a valid file imports neither attrs nor typing
(``tests/cli/test_startup.py`` pins it), and it imports this module.
"""

from __future__ import annotations

import os

from evalspec.errors import EvalspecError
from evalspec.io.exitcodes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from evalspec.io.inputs import STDIN, expand, govern_path, input_name, per_project

# Annotations only (the warm `evalspec validate` imports neither typing nor the
# value classes). Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import contextlib
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path
    from typing import IO, Any, Protocol

    from evalspec.authoring.check import SpecReport
    from evalspec.evals.diff import DatasetDiff
    from evalspec.evals.gates import SandboxErrors, Verdict
    from evalspec.evals.layout import Layout
    from evalspec.evals.lint import LintReport
    from evalspec.manifest import AddResult, FetchResult, Manifest, ManifestProblem
    from evalspec.model import ErrorRecord
    from evalspec.registry.project import Project
    from evalspec.registry.tables import AnySpec
    from evalspec.scoring.pipeline import ScoreOptions
    from evalspec.validation.engine import Tally
    from evalspec.validation.validator import LineResult

    class ProgressLine(Protocol):
        """What :func:`validate` draws a file's progress on (``cli.progress.Progress``)."""

        def update(self, counts: Tally) -> None: ...

        def clear(self) -> None: ...


class CommandUsageError(EvalspecError):
    """Options given to a library command that do not go together."""


class _Result:
    """A read-only slotted value: fields are set once, by ``__init__``."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _set(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Result) or type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"


# --- validate -----------------------------------------------------------------


class FileValidation(_Result):
    """The verdict on one task file (or one shard of a dataset).

    ``errors`` holds every error in line order, unless :func:`validate` streamed
    them to its ``on_error`` instead (then it is empty and ``first_error`` is still
    set). A file that could not be read or checked has ``failure`` (``"cannot
    read"`` or ``"cannot check"``, when a ``jobs`` worker was lost) and ``reason``.
    """

    __slots__ = ("errors", "failure", "first_error", "hint", "invalid", "name", "reason", "total")

    name: str
    total: int
    invalid: int
    errors: tuple[ErrorRecord, ...]
    first_error: ErrorRecord | None
    failure: str | None
    reason: str | None
    hint: str | None

    def __init__(
        self,
        name: str,
        *,
        total: int = 0,
        invalid: int = 0,
        errors: tuple[ErrorRecord, ...] = (),
        first_error: ErrorRecord | None = None,
        failure: str | None = None,
        reason: str | None = None,
        hint: str | None = None,
    ) -> None:
        self._set(
            name=name,
            total=total,
            invalid=invalid,
            errors=errors,
            first_error=first_error,
            failure=failure,
            reason=reason,
            hint=hint,
        )

    @property
    def valid(self) -> int:
        return self.total - self.invalid


class DatasetValidation(_Result):
    """A sharded dataset (a glob or URL) checked as one: its shards' verdicts, task
    ids unique across them."""

    __slots__ = ("pattern", "shards")

    pattern: str
    shards: tuple[FileValidation, ...]

    def __init__(self, pattern: str, shards: tuple[FileValidation, ...]) -> None:
        self._set(pattern=pattern, shards=shards)

    @property
    def total(self) -> int:
        return sum(s.total for s in self.shards)

    @property
    def invalid(self) -> int:
        return sum(s.invalid for s in self.shards)


class ValidateResult(_Result):
    """What :func:`validate` found: the problems with the paths themselves (a
    directory without task files, a symlink out of the repository, ``-`` twice),
    then one entry per file or dataset, in the order given."""

    __slots__ = ("entries", "input_problems")

    input_problems: tuple[str, ...]
    entries: tuple[FileValidation | DatasetValidation, ...]

    def __init__(
        self,
        input_problems: tuple[str, ...],
        entries: tuple[FileValidation | DatasetValidation, ...],
    ) -> None:
        self._set(input_problems=input_problems, entries=entries)

    @property
    def files(self) -> Iterator[FileValidation]:
        """Every file's verdict, a dataset's shards in its place."""
        for entry in self.entries:
            if isinstance(entry, DatasetValidation):
                yield from entry.shards
            else:
                yield entry

    @property
    def exit_code(self) -> int:
        """2 when a path could not be used or read, else 1 when a task is invalid, else 0."""
        if self.input_problems or any(
            isinstance(e, FileValidation) and e.failure is not None for e in self.entries
        ):
            return EXIT_USAGE
        return EXIT_PROBLEMS if any(f.invalid for f in self.files) else EXIT_OK


def validate(
    paths: Sequence[str],
    *,
    spec_version: int | None = None,
    jobs: int | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    on_input_problem: Callable[[str], None] | None = None,
    on_error: Callable[[str, ErrorRecord], None] | None = None,
    on_entry: Callable[[FileValidation | DatasetValidation], None] | None = None,
    progress: Callable[[str], ProgressLine] | None = None,
    shard_progress: Callable[[str, int, int], None] | None = None,
) -> ValidateResult:
    """Validate task files line by line (``evalspec validate``).

    ``paths`` are files, directories (their ``*.jsonl`` files), ``-`` for standard
    input, or a quoted glob or fsspec URL naming the shards of one dataset (checked
    as one: task ids unique across shards). ``executor="ray"`` checks every path as
    a dataset on a Ray cluster (``ray_address``, default: found as Ray finds it).

    Valid tasks are never built or held. To stream a big file's errors rather than
    hold them, pass ``on_error(name, error)``: each error of a file read one by one
    goes there, in line order, instead of into the result. ``on_input_problem`` is
    told of each problem with the paths before any file is read; ``on_entry`` is called
    with each file's or dataset's verdict as soon as it is complete; ``progress(name)``
    gives the line to draw a file's progress on, ``shard_progress(pattern, done,
    total)`` is told of each shard checked.

    :raises CommandUsageError: ``ray_address`` without ``executor="ray"``.
    :raises EvalspecError: the spec version cannot be had (a plugin fails to load,
        an unknown ``spec_version``), or Ray is asked for and not installed.
    """
    if ray_address is not None and executor != "ray":
        raise CommandUsageError("--ray-address needs --executor ray")
    if executor == "ray":
        from evalspec.cluster.ray import import_ray

        import_ray()  # without the extra: say how to install it before reading anything
    from evalspec.registry.snapshot import tables_in_force

    files, problems = expand(paths)
    # The spec version in force for each file is its project's (the nearest
    # pyproject.toml above the file, whatever the working directory), from the
    # registry snapshot when it is current (as plain tables: no registry, no attrs);
    # plugin errors surface before any file is read.
    specs = per_project(files, lambda: tables_in_force(spec_version))
    if on_input_problem is not None:
        for problem in problems:
            on_input_problem(problem)
    entries: list[FileValidation | DatasetValidation] = []
    for path in files:
        entry: FileValidation | DatasetValidation
        spec = specs[govern_path(path)]
        if _sharded(path, executor):
            entry = _validate_dataset(path, spec_version, executor, ray_address, shard_progress)
        else:
            entry = _validate_file(path, spec_version, jobs, spec, on_error, progress)
        entries.append(entry)
        if on_entry is not None:
            on_entry(entry)
    return ValidateResult(tuple(problems), tuple(entries))


def _validate_file(
    path: str,
    spec_version: int | None,
    jobs: int | None,
    spec: AnySpec,
    on_error: Callable[[str, ErrorRecord], None] | None,
    progress: Callable[[str], ProgressLine] | None,
) -> FileValidation:
    from evalspec.validation.engine import Tally
    from evalspec.validation.messages import not_jsonl_hint

    name = input_name(path)
    errors: list[ErrorRecord] = []
    tally = Tally()
    line = progress(name) if progress is not None else None
    first_error: ErrorRecord | None = None
    try:
        for verdict in _problems(path, spec_version, jobs, tally, line, spec):
            if first_error is None and verdict.errors:
                first_error = verdict.errors[0]
            if on_error is None:
                errors.extend(verdict.errors)
            else:
                for e in verdict.errors:
                    on_error(name, e)
    except OSError as exc:
        from evalspec.validation.pool import WorkerLost

        # A lost jobs worker is not the file's fault: say so.
        failure = "cannot check" if isinstance(exc, WorkerLost) else "cannot read"
        return FileValidation(name, failure=failure, reason=exc.strerror or str(exc))
    finally:
        if line is not None:
            line.clear()
    return FileValidation(
        name,
        total=tally.total,
        invalid=tally.invalid,
        errors=tuple(errors),
        first_error=first_error,
        hint=not_jsonl_hint(path, first_error),
    )


def _problems(
    path: str,
    spec_version: int | None,
    jobs: int | None,
    tally: Tally,
    line: ProgressLine | None,
    spec: AnySpec,
) -> Iterator[LineResult]:
    if path != STDIN:
        from evalspec.validation.engine import iter_problems

        return iter_problems(
            path,
            spec_version=spec_version,
            jobs=jobs,
            tally=tally,
            on_chunk=None if line is None else line.update,
            spec=spec,
        )
    return _stdin_problems(spec_version, tally)


def _stdin_problems(spec_version: int | None, tally: Tally) -> Iterator[LineResult]:
    from evalspec.io.inputs import stdin_binary
    from evalspec.validation.validator import iter_validate

    # A pipe is read once, in this process: the same verdicts as iter_problems.
    for verdict in iter_validate(stdin_binary(), spec_version=spec_version):
        tally.total += 1
        if verdict.task is None:
            tally.invalid += 1
            yield verdict


def _sharded(path: str, executor: str) -> bool:
    """Whether ``path`` names a sharded dataset (a glob or URL, or anything under Ray)."""
    if path == STDIN:
        return False
    if executor == "ray":
        return True
    # A file whose name merely looks like a glob ("data[1].jsonl") is that file
    # (and the shards module is imported only for what may be a pattern).
    if os.path.exists(path):
        return False
    from evalspec.validation.shards import is_pattern

    return is_pattern(path)


def _refuse_escaping(shards: list[str]) -> None:
    """A local shard is read as a named task file is: not through a symlink out of
    the repository (see :func:`evalspec.io.inputs.escape_problem`).

    :raises ShardError: one is.
    """
    from evalspec.io.inputs import escape_problem
    from evalspec.io.repository import repository_of
    from evalspec.validation.shards import ShardError

    root = repository_of(os.getcwd())
    for shard in shards:
        problem = None if "://" in shard else escape_problem(shard, root)
        if problem is not None:
            raise ShardError(problem)


def _validate_dataset(
    pattern: str,
    spec_version: int | None,
    executor: str,
    ray_address: str | None,
    shard_progress: Callable[[str, int, int], None] | None,
) -> FileValidation | DatasetValidation:
    """The shards of ``pattern`` validated as one dataset (a :class:`FileValidation`
    with its ``failure`` when they cannot be listed or read)."""
    from evalspec.validation.shards import ShardError, validate_shards_local, validate_shards_ray
    from evalspec.validation.shards import expand as expand_shards

    def told(done: int, total: int) -> None:
        if shard_progress is not None:
            shard_progress(pattern, done, total)

    try:
        shards = expand_shards(pattern)
        _refuse_escaping(shards)
        if executor == "ray":
            from evalspec.cluster.ray import stdout_kept_for_reports

            with stdout_kept_for_reports():
                found = validate_shards_ray(
                    shards,
                    spec_version,
                    address=ray_address,
                    progress=told if shard_progress is not None else None,
                )
        else:
            found = validate_shards_local(
                shards, spec_version, progress=told if shard_progress is not None else None
            )
    except (OSError, ShardError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return FileValidation(pattern, failure="cannot read", reason=reason)
    return DatasetValidation(
        pattern,
        tuple(
            FileValidation(
                shard.shard,
                total=shard.total,
                invalid=shard.invalid,
                errors=tuple(e for verdict in shard.errors for e in verdict.errors),
            )
            for shard in found
        ),
    )


# --- lint ---------------------------------------------------------------------


class LintResult(_Result):
    """What :func:`lint` found: the problems with the paths given (nothing was
    linted then, ``report`` is None), or the lint report of every layout named."""

    __slots__ = ("path_problems", "report")

    path_problems: tuple[str, ...]
    report: LintReport | None

    def __init__(self, path_problems: tuple[str, ...], report: LintReport | None) -> None:
        self._set(path_problems=path_problems, report=report)

    @property
    def exit_code(self) -> int:
        """2 when a path cannot be linted or a file read, else 1 on any problem, else 0."""
        if self.report is None or self.report.io_errors:
            return EXIT_USAGE
        return EXIT_OK if self.report.ok else EXIT_PROBLEMS


def lint(
    paths: Sequence[str] = (),
    *,
    base: str = "HEAD",
    check_git: bool = True,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> LintResult:
    """Lint the datasets of evals-as-code layouts (``evalspec lint``).

    ``paths`` are layout directories, ``datasets/`` directories or ``NAME.jsonl``
    files; a directory outside any layout stands for the layouts below it (default:
    ``.``). Each layout is linted under its own ``[tool.evalspec]``, whatever the
    working directory. ``base`` is the revision a changed dataset must have bumped
    its version against; ``check_git`` False skips that check. ``select`` and
    ``ignore`` are rule codes (a code also names the rules it is the word prefix
    of), as ruff's: the report holds only the selected, not ignored problems;
    ``select`` replaces the layout's ``config/lint.yaml`` ``select``, ``ignore`` adds
    to its ``ignore``, and its ``per-file-ignores`` apply (:mod:`evalspec.evals.lint.settings`).
    An unknown code, a settings file that cannot be used, or PyYAML missing (the
    data cards are YAML), is a path problem.
    """
    from evalspec.evals.lint import LintReport, SettingsError, lint_layout
    from evalspec.evals.lint.report import RuleSelection
    from evalspec.evals.lint.settings import known_rules, unknown_code
    from evalspec.evals.yamlfile import MissingYamlError
    from evalspec.io.governing import govern

    selection = RuleSelection(select=tuple(select), ignore=tuple(ignore))
    groups, problems = _lint_targets(paths)
    unknown = [unknown_code(code) for code in selection.unknown(known_rules())]
    problems = unknown + (problems or _unreadable(groups))
    if problems:
        return LintResult(tuple(problems), None)
    report = LintReport()
    try:
        for layout, files in groups:
            # The layout's own [tool.evalspec] decides the spec versions, from any directory.
            govern(layout.root)
            part = lint_layout(layout, files, base=base, check_git=check_git, selection=selection)
            report.datasets.extend(part.datasets)
            report.layout_problems.extend(part.layout_problems)
            report.io_errors.extend(part.io_errors)
    except MissingYamlError as exc:
        return LintResult((str(exc),), None)
    except SettingsError as exc:
        return LintResult(tuple(exc.problems), None)
    return LintResult((), report)


def _lint_targets(paths: Sequence[str]) -> tuple[list[tuple[Layout, list[Path] | None]], list[str]]:
    """Group the paths by layout: ``[(layout, files or None for all)]``."""
    from pathlib import Path

    from evalspec.evals.layout import DATASETS, find_layout, layouts_below

    groups: dict[Path, tuple[Layout, list[Path] | None]] = {}
    errors: list[str] = []
    for raw in paths or ["."]:
        if raw == STDIN:
            errors.append(
                "- (standard input): lint checks datasets beside their data cards; "
                "give a layout, its datasets/ directory or NAME.jsonl files"
            )
            continue
        path = Path(raw)
        if not path.exists():
            errors.append(f"{raw}: no such file or directory")
            continue
        layout = find_layout(path)
        if layout is None:
            below = layouts_below(path) if path.is_dir() else []
            for found in below:  # a repository's root: every layout under it, like ruff
                groups[found.root] = (found, None)
            if not below:
                errors.append(
                    f"{raw}: not inside an evals layout (no {DATASETS}/ directory at or "
                    "above it, no layout below it); run `evalspec init` to create one"
                )
            continue
        key = layout.root
        if path.is_dir() and path.resolve() == layout.root.resolve():
            groups[key] = (layout, None)
            continue
        files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
        current = groups.get(key)
        if current is not None and current[1] is None:
            continue
        before = current[1] if current is not None and current[1] is not None else []
        groups[key] = (layout, [*before, *files])
    return list(groups.values()), errors


def _unreadable(groups: list[tuple[Layout, list[Path] | None]]) -> list[str]:
    """The datasets lint must not open, one problem each: a symlink out of the
    repository (its lines would be printed back as invalid tasks' text), a dangling
    symlink, a named pipe or a device (each silently left out of the lint before).
    The rules are validate's (:mod:`evalspec.io.inputs`)."""
    from evalspec.io.inputs import escape_problem, special_problem
    from evalspec.io.repository import repository_of

    problems: list[str] = []
    here = os.getcwd()
    for layout, files in groups:
        root = repository_of(str(layout.root))
        for path in files if files is not None else sorted(layout.datasets.rglob("*.jsonl")):
            if path.is_dir():
                continue  # not a dataset file, as for the layout's own listing
            absolute = os.path.abspath(path)
            shown = (
                os.path.relpath(absolute, here) if absolute.startswith(here + os.sep) else absolute
            )
            problem = escape_problem(shown, root) or special_problem(shown)
            if problem is not None:
                problems.append(problem)
    return problems


# --- score --------------------------------------------------------------------


class ScoreResult(_Result):
    """What :func:`score` did: its exit status, the report (None when none was
    built: the run was refused or stopped), and every diagnostic line in the order
    it arose (also given to ``on_message`` as it arose)."""

    __slots__ = ("exit_code", "messages", "report")

    exit_code: int
    report: dict[str, Any] | None
    messages: tuple[str, ...]

    def __init__(
        self, exit_code: int, report: dict[str, Any] | None, messages: tuple[str, ...]
    ) -> None:
        self._set(exit_code=exit_code, report=report, messages=messages)


def score(
    tasks: str,
    predictions: str,
    *,
    options: ScoreOptions | None = None,
    spec_version: int | None = None,
    on_message: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ScoreResult:
    """Post-process, score and report a model's outputs (``evalspec score``).

    ``tasks`` is the task file and ``predictions`` the model's outputs (one
    ``{"task_id", "output"}`` JSON line per task); either (not both) may be ``-``
    for standard input. ``options`` are the run's choices (refusing invalid tasks,
    code_exec, the sandbox tier, pass@k, the executor, the bootstrap); the report
    is the documented score report (``format_report`` renders it). ``progress(done,
    total)`` is told of each task scored.

    :raises CommandUsageError: both inputs are standard input.
    :raises EvalspecError: the spec version cannot be had, or Ray is asked for
        and not installed.
    """
    from evalspec.registry.build import default_registry
    from evalspec.scoring.pipeline import ScoreOptions, UnreadableInput, read_input, score_inputs
    from evalspec.scoring.swapped import looks_swapped
    from evalspec.validation.messages import not_jsonl_hint

    options = options if options is not None else ScoreOptions()
    messages: list[str] = []

    def say(line: str) -> None:
        messages.append(line)
        if on_message is not None:
            on_message(line)

    if options.executor == "ray":
        from evalspec.cluster.ray import import_ray

        import_ray()  # without the extra: say how to install it before reading anything
    govern_path(tasks)  # the tasks' project decides the spec, from any directory
    registry = default_registry(spec_version)
    if tasks == STDIN and predictions == STDIN:
        raise CommandUsageError("TASKS and PREDICTIONS cannot both be - (standard input)")
    read: list[bytes] = []
    # An inspect .eval log is a zip archive: it has no lines to limit.
    inspect_log = options.predictions_format == "inspect"
    for path, lines in ((tasks, True), (predictions, not inspect_log)):
        try:
            read.append(read_input(path, lines=lines))
        except UnreadableInput as exc:
            say(f"evalspec: error: {exc}")
    if len(read) < 2:
        return ScoreResult(EXIT_USAGE, None, tuple(messages))
    tasks_bytes, predictions_bytes = read
    tasks_name, predictions_name = input_name(tasks), input_name(predictions)
    if options.predictions_format == "evalspec" and looks_swapped(tasks_bytes, predictions_bytes):
        say(
            f"evalspec: error: {tasks_name} holds predictions and {predictions_name} holds "
            "tasks: the arguments look swapped"
        )
        say(f"evalspec: hint: tasks come first: evalspec score {predictions_name} {tasks_name}")
        return ScoreResult(EXIT_USAGE, None, tuple(messages))
    outcome = score_inputs(
        tasks_bytes,
        predictions_bytes,
        tasks_path=tasks,
        tasks_name=tasks_name,
        predictions_name=predictions_name,
        registry=registry,
        options=options,
        say=say,
        progress=progress,
        first_error_hint=lambda first: not_jsonl_hint(tasks, first),
    )
    return ScoreResult(outcome.exit_code, outcome.report, tuple(messages))


# --- gate ---------------------------------------------------------------------


class GateResult(_Result):
    """What :func:`gate` found. ``errors`` are the lines saying why no gate was
    checked (an unreadable config or report, an invalid config, a baseline that is
    not comparable, a report with sandbox errors); otherwise ``verdicts`` holds each
    check in config order, ``compared_anyway`` the differences from the baseline
    that ``allow_incomparable`` accepted, ``gated_anyway`` the sandbox errors that
    ``allow_sandbox_errors`` accepted, and ``uncovered`` the reported datasets no
    gate covers; ``config`` names the gates file read. ``sandbox_errors`` counts,
    per report and baseline, the tasks the sandbox could not run (refused or gated
    anyway), and ``refused`` is ``"sandbox_errors"`` when that refused the run."""

    __slots__ = (
        "compared_anyway",
        "config",
        "errors",
        "gated_anyway",
        "refused",
        "sandbox_errors",
        "uncovered",
        "verdicts",
    )

    errors: tuple[str, ...]
    config: str | None
    verdicts: tuple[Verdict, ...]
    compared_anyway: tuple[str, ...]
    gated_anyway: tuple[str, ...]
    uncovered: tuple[str, ...]
    sandbox_errors: tuple[SandboxErrors, ...]
    refused: str | None

    def __init__(
        self,
        errors: tuple[str, ...] = (),
        verdicts: tuple[Verdict, ...] = (),
        compared_anyway: tuple[str, ...] = (),
        uncovered: tuple[str, ...] = (),
        config: str | None = None,
        gated_anyway: tuple[str, ...] = (),
        sandbox_errors: tuple[SandboxErrors, ...] = (),
        refused: str | None = None,
    ) -> None:
        self._set(
            errors=errors,
            verdicts=verdicts,
            compared_anyway=compared_anyway,
            gated_anyway=gated_anyway,
            uncovered=uncovered,
            config=config,
            sandbox_errors=sandbox_errors,
            refused=refused,
        )

    @property
    def failed(self) -> int:
        return sum(1 for v in self.verdicts if v.passed is False)

    @property
    def skipped(self) -> int:
        return sum(1 for v in self.verdicts if v.passed is None)

    @property
    def exit_code(self) -> int:
        """2 when nothing could be checked, else 1 when any gate failed, else 0."""
        if self.errors:
            return EXIT_USAGE
        return EXIT_PROBLEMS if self.failed else EXIT_OK

    def to_markdown(self) -> str:
        """The verdicts as a Markdown summary (for a pull request)."""
        from evalspec.evals.gates import to_markdown

        return to_markdown(self.verdicts)

    def to_json(self) -> dict[str, Any]:
        """The run as ``gate --format json``'s object (README.md, *Gate*)."""
        from evalspec.evals.gates import to_json

        return to_json(
            list(self.verdicts),
            config=self.config or "",
            uncovered=list(self.uncovered),
            compared_anyway=list(self.compared_anyway),
            sandbox_errors=list(self.sandbox_errors),
            refused=self.refused,
        )


def gate(
    reports: Sequence[str],
    *,
    baselines: Sequence[str] | None = None,
    config: str | None = None,
    allow_incomparable: bool = False,
    allow_sandbox_errors: bool = False,
) -> GateResult:
    """Check score reports against the red lines of a gates file (``evalspec gate``).

    ``reports`` (and ``baselines``, for ``max_drop``) are score report files
    (``evalspec score --format json``); one of them all may be ``-`` for standard
    input. ``config`` is the gates file (default: ``config/gates.yaml`` of the
    layout holding the first report, else of the layout here). A baseline scored on
    other tasks, spec version, metrics or number of tasks is refused unless
    ``allow_incomparable``; a report holding tasks the sandbox could not run
    (``sandbox_error``) is refused unless ``allow_sandbox_errors``.
    """
    from evalspec.evals.gates import (
        REFUSED_SANDBOX_ERRORS,
        GateConfigError,
        ReportError,
        by_dataset,
        check,
        incomparable,
        parse_gates,
        sandbox_error_counts,
    )
    from evalspec.evals.lint import manifest_datasets, relative_name
    from evalspec.evals.manifestlink import ManifestUnreadable
    from evalspec.evals.yamlfile import MissingYamlError
    from evalspec.io.governing import govern
    from evalspec.io.repository import OutsideRootError
    from evalspec.io.safeload import MAX_YAML_BYTES, DocumentError, read_in_repository
    from evalspec.io.wording import counted
    from evalspec.registry.build import default_registry

    config_path, layout = _gates_file(config, reports)
    try:
        text = read_in_repository(config_path, MAX_YAML_BYTES).decode("utf-8")
    except (DocumentError, OutsideRootError) as exc:
        # These messages already begin with the path.
        return GateResult((f"evalspec: error: cannot read gates config {exc}",))
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        return GateResult((f"evalspec: error: cannot read gates config {config_path}: {reason}",))
    datasets = None
    labels = None
    if layout is not None:
        try:
            listed = manifest_datasets(layout)
        except ManifestUnreadable as exc:
            return GateResult((f"evalspec: error: {exc}",))
        files = [*layout.dataset_files(), *listed]
        datasets = {layout.dataset_name(p) for p in files}
        labels = _legal_labels(layout.labels_file)
        govern(layout.root)  # the layout's own [tool.evalspec] names its metrics
    registry = default_registry()
    try:
        gates = parse_gates(
            text,
            relative_name(config_path.resolve()),
            datasets=datasets,
            metrics=set(registry.metrics),
            labels=labels,
            categories=set(registry.spec.categories),
        )
        named = [*reports, *(baselines or [])]
        if named.count(STDIN) > 1:
            raise ReportError("- (standard input) can be given only once")
        read = by_dataset([_score_report(r) for r in reports])
        read_baselines = (
            None if baselines is None else by_dataset([_score_report(b) for b in baselines])
        )
    except GateConfigError as exc:
        lines = [f"{exc.path}:{line}: {msg}" for line, msg in exc.problems]
        lines.append(
            f"evalspec: error: {counted(len(exc.problems), 'problem')} in the gates config "
            f"{exc.path}; no gate was checked"
        )
        return GateResult(tuple(lines))
    except (ReportError, MissingYamlError) as exc:
        return GateResult((f"evalspec: error: {exc}",))
    differences = incomparable(read, read_baselines or {})
    errored = tuple(sandbox_error_counts(read, read_baselines or {}))
    unrun = [e.message for e in errored]
    name = relative_name(config_path.resolve())
    refusals = (
        (
            differences,
            allow_incomparable,
            "refusing to compare with the baseline "
            "(pass --allow-incomparable if the comparison is intended)",
            None,
        ),
        (
            unrun,
            allow_sandbox_errors,
            "refusing to gate a report with sandbox errors: "
            "score those tasks again (or pass --allow-sandbox-errors to gate the tasks that ran)",
            REFUSED_SANDBOX_ERRORS,
        ),
    )
    for messages, allowed, refusal, refused in refusals:
        if messages and not allowed:
            return GateResult(
                tuple(f"evalspec: error: {m}" for m in [*messages, refusal]),
                config=name,
                sandbox_errors=errored if refused else (),
                refused=refused,
            )
    gated = {g.dataset for g in gates}
    return GateResult(
        verdicts=tuple(check(gates, read, read_baselines)),
        compared_anyway=tuple(differences),
        gated_anyway=tuple(unrun),
        uncovered=tuple(sorted(set(read) - gated)),
        config=name,
        sandbox_errors=errored,
    )


def _gates_file(config: str | None, reports: Sequence[str]) -> tuple[Path, Layout | None]:
    """The gates file and the layout it belongs to.

    ``config`` names the file; its layout is the one holding it. Otherwise the
    layout is found as lint finds it: walking up from the first report named (so
    ``gate evals/reports/main.json`` works from the repository root), else from the
    current directory, else the one layout below the current directory.
    """
    from pathlib import Path

    from evalspec.evals.layout import find_layout, layouts_below

    if config is not None:
        path = Path(config)
        in_config = path.parent.name == "config"
        return path, find_layout(path.parent.parent if in_config else Path.cwd())
    starts = [Path(r) for r in reports if r != STDIN][:1]
    layout = next(filter(None, (find_layout(p) for p in [*starts, Path.cwd()])), None)
    if layout is None:
        below = layouts_below(Path.cwd())
        layout = below[0] if len(below) == 1 else None
    if layout is None:
        return Path("config") / "gates.yaml", None
    return layout.gates_file, layout


def _legal_labels(path: Path) -> dict[str, tuple[str, ...]] | None:
    """The legal label values, when the layout has a valid labels file (lint reports it if not)."""
    from evalspec.evals.labels import parse_labels
    from evalspec.io.repository import OutsideRootError
    from evalspec.io.safeload import MAX_YAML_BYTES, DocumentError, read_in_repository

    try:
        parsed, _ = parse_labels(read_in_repository(path, MAX_YAML_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, DocumentError, OutsideRootError):
        return None  # lint reports it
    return None if parsed is None else parsed.legal


def _score_report(name: str) -> tuple[Path, dict[str, Any]]:
    from pathlib import Path

    from evalspec.evals.gates import ReportError, load_report
    from evalspec.io.inputs import STDIN_NAME, stdin_binary

    if name == STDIN:
        from evalspec.io.safeload import MAX_JSON_BYTES

        try:
            # One byte past the limit is enough to refuse an endless stream.
            text = stdin_binary().read(MAX_JSON_BYTES + 1)
        except OSError as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ReportError(f"cannot read {STDIN_NAME}: {reason}") from None
        return Path(STDIN_NAME), load_report(Path(STDIN_NAME), text)
    return Path(name), load_report(Path(name))


# --- diff ---------------------------------------------------------------------


class DiffResult(_Result):
    """What :func:`diff` found: the change report (``diff``, titled ``title``), or
    the line saying why the two sides could not be compared (``error``)."""

    __slots__ = ("diff", "error", "exit_code", "title")

    title: str | None
    diff: DatasetDiff | None
    error: str | None
    exit_code: int

    def __init__(
        self,
        exit_code: int,
        *,
        title: str | None = None,
        diff: DatasetDiff | None = None,
        error: str | None = None,
    ) -> None:
        self._set(exit_code=exit_code, title=title, diff=diff, error=error)


def diff(
    paths: Sequence[str],
    *,
    rev: str | None = None,
    fail_on_removal: bool = False,
    fail_on_duplicate: bool = False,
) -> DiffResult:
    """The tasks added, removed and changed between two versions of a dataset
    (``evalspec diff``): ``paths`` are OLD and NEW files, or with ``rev`` (``A..B``;
    an empty B is the working tree, ``A...B`` starts from the merge base) one file
    at two git revisions. The exit code is 1 when ``fail_on_removal`` and a task
    was removed, or ``fail_on_duplicate`` and an id is on two lines of a side."""
    import contextlib

    from evalspec.evals.diff import diff_files
    from evalspec.evals.records import is_lfs_pointer
    from evalspec.io.wording import one_line

    with contextlib.ExitStack() as stack:
        try:
            old, new, old_label, new_label, title, old_card, new_card = _diff_sides(
                paths, rev, stack
            )
        except _DiffUsage as exc:
            return DiffResult(EXIT_USAGE, error=str(exc))
        except OSError as exc:
            reason = exc.strerror or exc
            return DiffResult(
                EXIT_USAGE, error=f"cannot read {one_line(str(exc.filename))}: {reason}"
            )
        for side, stream in (("old", old), ("new", new)):
            data = _head(stream)
            if data is not None and is_lfs_pointer(data):
                return DiffResult(
                    EXIT_USAGE,
                    error=f"the {side} side of {title} is a Git LFS pointer, not the data; "
                    "run `git lfs pull`",
                )
        try:
            found = diff_files(old, new, old_label, new_label)
        except OSError as exc:
            return DiffResult(
                EXIT_USAGE, error=f"cannot read {one_line(title)}: {exc.strerror or exc}"
            )
    found.old_version = _card_version(old_card)
    found.new_version = _card_version(new_card)
    failed = (fail_on_removal and bool(found.removed)) or (
        fail_on_duplicate and bool(found.repeated)
    )
    return DiffResult(EXIT_PROBLEMS if failed else EXIT_OK, title=title, diff=found)


def _card_version(data: bytes | None) -> str | None:
    from evalspec.evals.card import parse_card

    if data is None:
        return None
    card, _ = parse_card(data.decode("utf-8", "replace"))
    return card.version if card is not None else None


def _read_card(path: Path) -> bytes | None:
    from evalspec.io.repository import OutsideRootError
    from evalspec.io.safeload import MAX_TEXT_BYTES, DocumentError, read_in_repository

    try:
        return read_in_repository(path, MAX_TEXT_BYTES)
    except FileNotFoundError:
        return None
    except (DocumentError, OutsideRootError) as exc:
        raise _DiffUsage(str(exc)) from None


def _open_side(root: Path, rel: Path, stack: contextlib.ExitStack) -> IO[bytes] | None:
    """The working tree's side, opened once inside the git work tree ``root``: a pull
    request's symlink out of it is refused, since diff prints what it reads."""
    from evalspec.io.repository import OutsideRootError, open_inside

    try:
        return stack.enter_context(open_inside(root / rel, root))
    except FileNotFoundError:
        return None
    except OutsideRootError as exc:
        raise _DiffUsage(str(exc)) from None


def _open_given(path: Path, stack: contextlib.ExitStack) -> IO[bytes]:
    """An OLD or NEW file named on the command line, opened once (as
    :func:`evalspec.io.repository.open_for_reading` does: checked when spelled
    inside the working directory's repository, as asked when named outside it)."""
    from evalspec.io.repository import OutsideRootError, open_for_reading, repository_of

    try:
        return stack.enter_context(open_for_reading(path, repository_of(os.getcwd())))
    except OutsideRootError as exc:
        raise _DiffUsage(str(exc)) from None


def _diff_sides(
    paths: Sequence[str], rev: str | None, stack: contextlib.ExitStack
) -> tuple[IO[bytes] | None, IO[bytes] | None, str, str, str, bytes | None, bytes | None]:
    """The two sides as seekable binary files (closed by ``stack``), labels and cards."""
    import tempfile
    from pathlib import Path

    from evalspec.evals import gitrepo
    from evalspec.evals.card import card_path
    from evalspec.io.safeload import MAX_TEXT_BYTES
    from evalspec.io.wording import one_line

    if rev is None:
        if len(paths) != 2:
            raise _DiffUsage("give OLD and NEW files, or --rev A..B PATH")
        old_p, new_p = Path(paths[0]), Path(paths[1])
        for p in (old_p, new_p):
            if not p.exists():
                raise _DiffUsage(f"{one_line(str(p))}: no such file")
            if not p.is_file():  # a device, a named pipe, a directory: it cannot be reread
                raise _DiffUsage(
                    f"{one_line(str(p))}: not a regular file (diff reads each side twice)"
                )
        return (
            _open_given(old_p, stack),
            _open_given(new_p, stack),
            str(old_p),
            str(new_p),
            str(new_p),
            _read_card(card_path(old_p)),
            _read_card(card_path(new_p)),
        )
    if len(paths) != 1:
        raise _DiffUsage("--rev A..B takes exactly one PATH")
    three_dots = "..." in rev
    a, sep, b = rev.partition("..." if three_dots else "..")
    if not sep or not a:
        raise _DiffUsage(f"--rev takes A..B (B may be empty for the working tree), got {rev!r}")
    # The path as git tracks it: its directory resolved, not the file, so a symlink
    # is diffed as the tracked link it is (and its working copy opened by
    # _open_side, which refuses one that leads out of the repository).
    path = Path(paths[0]).absolute().parent.resolve() / Path(paths[0]).name
    root = gitrepo.toplevel(path.parent)
    if root is None:
        raise _DiffUsage(f"{one_line(paths[0])}: not inside a git repository")
    label_a = a
    if three_dots:
        # As in a pull request: compare from where B's history left A's.
        try:
            base = gitrepo.merge_base(root, a, b or "HEAD")
        except gitrepo.GitError as exc:
            raise _DiffUsage(str(exc)) from None
        label_a, a = f"{a}...", base
    rel = path.relative_to(root.resolve())
    crel = card_path(rel)

    def at(rev: str, p: Path) -> IO[bytes] | None:
        if not rev:
            return _open_side(root, p, stack)
        # Spooled to a temp file, so a big dataset is never held in memory.
        spool: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        try:
            return spool if gitrepo.show_into(root, rev, p.as_posix(), spool) else None
        except gitrepo.GitError as exc:
            raise _DiffUsage(str(exc)) from None

    def card_at(rev: str, p: Path) -> bytes | None:
        if not rev:
            return _read_card(root / p)
        try:
            data = gitrepo.show(root, rev, p.as_posix())
        except gitrepo.GitError as exc:
            raise _DiffUsage(str(exc)) from None
        return data if data is None or len(data) <= MAX_TEXT_BYTES else None

    old, new = at(a, rel), at(b, rel)
    if old is None and new is None:
        raise _DiffUsage(
            f"{rel.as_posix()} exists neither at {label_a} nor at {b or 'the working tree'}"
        )
    return (
        old,
        new,
        label_a,
        b or "working tree",
        rel.as_posix(),
        card_at(a, crel),
        card_at(b, crel),
    )


class _DiffUsage(Exception):
    """Why the two sides cannot be had (the result's one error line)."""


def _head(stream: IO[bytes] | None) -> bytes | None:
    """The first bytes of a side, enough to tell a Git LFS pointer."""
    if stream is None:
        return None
    data = stream.read(2048)
    stream.seek(0)
    return data


# --- manifest -----------------------------------------------------------------


class ManifestAddResult(_Result):
    """What :func:`manifest_add` did: ``added`` (the entry recorded, whether it
    replaced one, whether ``.gitignore`` gained a line, whether git still tracks the
    file), or ``error`` when the manifest or ``.gitignore`` could not be written."""

    __slots__ = ("added", "error", "manifest_path")

    manifest_path: Path
    added: AddResult | None
    error: str | None

    def __init__(
        self, manifest_path: Path, added: AddResult | None, error: str | None = None
    ) -> None:
        self._set(manifest_path=manifest_path, added=added, error=error)

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.error is not None else EXIT_OK


class ManifestVerifyResult(_Result):
    """What :func:`manifest_verify` found: every problem with the manifest and its
    local copies, and how many entries are intact (``ok``)."""

    __slots__ = ("manifest", "manifest_path", "ok", "problems")

    manifest_path: Path
    manifest: Manifest
    problems: tuple[ManifestProblem, ...]
    ok: int

    def __init__(
        self,
        manifest_path: Path,
        manifest: Manifest,
        problems: tuple[ManifestProblem, ...],
        ok: int,
    ) -> None:
        self._set(manifest_path=manifest_path, manifest=manifest, problems=problems, ok=ok)

    @property
    def exit_code(self) -> int:
        """2 on a problem reading a file, else 1 on any problem, else 0."""
        return _manifest_exit_code(self.problems)


class ManifestFetchResult(_Result):
    """What :func:`manifest_fetch` did (``fetched``: the entries fetched, those
    already present, the problems), or the paths asked for that the manifest does
    not list (``unknown``; nothing was fetched then)."""

    __slots__ = ("fetched", "manifest", "manifest_path", "unknown")

    manifest_path: Path
    manifest: Manifest
    fetched: FetchResult | None
    unknown: tuple[str, ...]

    def __init__(
        self,
        manifest_path: Path,
        manifest: Manifest,
        fetched: FetchResult | None,
        unknown: tuple[str, ...] = (),
    ) -> None:
        self._set(manifest_path=manifest_path, manifest=manifest, fetched=fetched, unknown=unknown)

    @property
    def exit_code(self) -> int:
        if self.fetched is None:
            return EXIT_USAGE
        return _manifest_exit_code(self.fetched.problems)


def manifest_add(
    file: str,
    uri: str,
    *,
    manifest: str | None = None,
    root: str | None = None,
    gitignore: bool = True,
    allow_outside_root: bool = False,
) -> ManifestAddResult:
    """Record ``file`` (path, ``uri``, SHA-256, size) in the manifest and git-ignore
    it (``evalspec manifest add``). ``manifest`` defaults to ``datasets/manifest.json``
    of the evals layout holding ``file`` (else of the repository root); ``root``, the
    directory entry paths are relative to, to the git work tree holding the manifest.

    :raises ManifestError: the manifest cannot be read, the file or URI is refused.
    """
    from evalspec.manifest import add

    manifest_path, root_path = _locate_manifest(manifest, root, file)
    try:
        added = add(
            manifest_path,
            file,
            uri,
            root=root_path,
            gitignore=gitignore,
            allow_outside_root=allow_outside_root,
        )
    except OSError as exc:  # reading problems are ManifestErrors: this is the writing
        where = exc.filename or manifest_path
        return ManifestAddResult(
            manifest_path, None, f"cannot write {where}: {exc.strerror or exc}"
        )
    return ManifestAddResult(manifest_path, added)


def manifest_verify(
    *, manifest: str | None = None, root: str | None = None
) -> ManifestVerifyResult:
    """Re-hash every local copy the manifest lists and report every problem
    (``evalspec manifest verify``): a safe path, the file present, size and SHA-256
    equal to the manifest's. ``manifest`` and ``root`` as for :func:`manifest_add`.

    :raises ManifestError: the manifest cannot be read at all.
    """
    from evalspec.manifest import load_manifest, verify

    manifest_path, root_path = _locate_manifest(manifest, root)
    loaded = load_manifest(manifest_path, root=root_path)
    problems = verify(loaded)
    # verify adds at most one problem per readable entry after the reading problems.
    ok = len(loaded.entries) - (len(problems) - len(loaded.problems))
    return ManifestVerifyResult(manifest_path, loaded, tuple(problems), ok)


def manifest_fetch(
    paths: Sequence[str] = (),
    *,
    manifest: str | None = None,
    root: str | None = None,
    force: bool = False,
    max_bytes: int | None = None,
    allow_outside_root: bool = False,
) -> ManifestFetchResult:
    """Download the missing files the manifest lists (``paths``: only these
    entries) from their URIs, verified, atomically (``evalspec manifest fetch``).
    ``force`` also replaces files that mismatch; entries over ``max_bytes`` (default:
    :data:`~evalspec.manifest.fetch.DEFAULT_MAX_BYTES`; 0: no limit) are refused, and
    so are local sources outside the repository unless ``allow_outside_root``.

    :raises ManifestError: the manifest cannot be read at all, or a remote scheme
        needs the ``manifest`` extra.
    """
    from evalspec.manifest import fetch, load_manifest
    from evalspec.manifest.fetch import DEFAULT_MAX_BYTES, FetchLimits

    manifest_path, root_path = _locate_manifest(manifest, root)
    loaded = load_manifest(manifest_path, root=root_path)
    wanted = set(paths) if paths else None
    if wanted is not None:
        unknown = sorted(wanted - {e.path for e in loaded.entries})
        if unknown:
            return ManifestFetchResult(manifest_path, loaded, None, tuple(unknown))
    limit = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    limits = FetchLimits(max_bytes=limit or None, allow_outside_root=allow_outside_root)
    fetched = fetch(loaded, force=force, paths=wanted, limits=limits)
    return ManifestFetchResult(manifest_path, loaded, fetched)


def _manifest_exit_code(problems: Sequence[ManifestProblem]) -> int:
    from evalspec.manifest import IO_CODES

    if any(p.code in IO_CODES for p in problems):
        return EXIT_USAGE
    return EXIT_PROBLEMS if problems else EXIT_OK


def _layout_manifest(file: str | None) -> Path | None:
    """Inside an evals layout (the file added, or the current directory) the manifest
    sits beside the layout's datasets; a manifest already at the repository root is
    still used by verify and fetch when the layout has none."""
    from pathlib import Path

    from evalspec.evals.layout import find_layout
    from evalspec.manifest import DEFAULT_MANIFEST

    starts = [Path(file).parent] if file else []
    for start in [*starts, Path.cwd()]:
        layout = find_layout(start)
        if layout is None:
            continue
        path = layout.root / DEFAULT_MANIFEST
        if file or path.is_file():
            return path
        return None
    return None


def _locate_manifest(
    manifest: str | None, root: str | None, file: str | None = None
) -> tuple[Path, Path | None]:
    """(manifest path, explicit root or None)."""
    from pathlib import Path

    from evalspec.manifest import DEFAULT_MANIFEST, find_root

    root_path = Path(root) if root is not None else None
    if manifest is not None:
        return Path(manifest), root_path
    in_layout = _layout_manifest(file) if root_path is None else None
    base = root_path if root_path is not None else find_root(Path.cwd())
    path = in_layout if in_layout is not None else base / DEFAULT_MANIFEST
    if root_path is None:
        # Messages name the manifest as the user would type it from here.
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            path = Path(relative)
    return path, root_path


# --- render -------------------------------------------------------------------


class RenderedFile(_Result):
    """One task file rendered: each valid task's ``(task_id, prompt)``, exactly as a
    model receives the prompt, and the file's errors (and not-JSON-Lines hint)."""

    __slots__ = ("errors", "hint", "invalid", "name", "prompts", "total")

    name: str
    prompts: tuple[tuple[str, str], ...]
    errors: tuple[ErrorRecord, ...]
    hint: str | None
    total: int
    invalid: int

    def __init__(
        self,
        name: str,
        prompts: tuple[tuple[str, str], ...],
        errors: tuple[ErrorRecord, ...],
        hint: str | None,
        total: int,
        invalid: int,
    ) -> None:
        self._set(
            name=name, prompts=prompts, errors=errors, hint=hint, total=total, invalid=invalid
        )


class RenderResult(_Result):
    """What :func:`render` did: the problems with the paths (nothing was read),
    the files rendered in order, the line saying why the next could not be read
    (``failure``; reading stopped there), and whether it refused (``refused``:
    a task is invalid and ``allow_bad_tasks`` was not given)."""

    __slots__ = ("failure", "files", "input_problems", "refused")

    input_problems: tuple[str, ...]
    files: tuple[RenderedFile, ...]
    failure: str | None
    refused: bool

    def __init__(
        self,
        input_problems: tuple[str, ...] = (),
        files: tuple[RenderedFile, ...] = (),
        failure: str | None = None,
        refused: bool = False,
    ) -> None:
        self._set(input_problems=input_problems, files=files, failure=failure, refused=refused)

    @property
    def total(self) -> int:
        return sum(f.total for f in self.files)

    @property
    def invalid(self) -> int:
        return sum(f.invalid for f in self.files)

    @property
    def exit_code(self) -> int:
        """2 when a path could not be used or read, 1 when refused, else 0."""
        if self.input_problems or self.failure is not None:
            return EXIT_USAGE
        return EXIT_PROBLEMS if self.refused else EXIT_OK


def render(
    paths: Sequence[str], *, spec_version: int | None = None, allow_bad_tasks: bool = False
) -> RenderResult:
    """Every task's prompt exactly as a model receives it, few-shot examples
    rendered in (``evalspec render``). ``paths`` as for :func:`validate`. Files are
    read line by line, as validate reads them, so the line length limit applies.
    An invalid task anywhere refuses the whole run unless ``allow_bad_tasks``.

    :raises EvalspecError: the spec version cannot be had.
    """
    import contextlib

    from evalspec.io.inputs import stdin_binary
    from evalspec.io.wording import one_line
    from evalspec.registry.build import default_registry
    from evalspec.scoring.render import render as render_prompt
    from evalspec.validation.messages import not_jsonl_hint
    from evalspec.validation.validator import validate_file

    files, problems = expand(paths)
    if problems:
        return RenderResult(tuple(problems))
    # Each file is checked against its own project (the nearest pyproject.toml above it).
    registries = per_project(files, lambda: default_registry(spec_version))
    rendered: list[RenderedFile] = []
    for path in files:
        name = input_name(path)
        registry = registries[govern_path(path)]
        try:
            with contextlib.ExitStack() as stack:
                f = stdin_binary() if path == STDIN else stack.enter_context(open(path, "rb"))
                result = validate_file(f, registry=registry)
        except OSError as exc:
            reason = one_line(str(exc.strerror or exc))
            failure = f"cannot read {one_line(name)}: {reason}"
            return RenderResult(files=tuple(rendered), failure=failure)
        rendered.append(
            RenderedFile(
                name,
                tuple((t.task_id, render_prompt(t)) for t in result.validated),
                tuple(result.errors),
                not_jsonl_hint(path, result.errors[0] if result.errors else None),
                result.total,
                result.invalid,
            )
        )
    refused = not allow_bad_tasks and any(f.invalid for f in rendered)
    return RenderResult(files=tuple(rendered), refused=refused)


# --- schema -------------------------------------------------------------------


def schema(*, spec_version: int | None = None) -> dict[str, Any]:
    """The Draft 2020-12 JSON Schema of one task line at ``spec_version`` (default:
    the newest) (``evalspec schema``). The validator stays the authority: the schema
    cannot check task_id uniqueness, duplicate keys or embedded few-shot blocks.

    :raises EvalspecError: the spec version cannot be had.
    """
    from evalspec.registry.build import default_registry
    from evalspec.validation.schema import task_schema

    return task_schema(default_registry(spec_version))


# --- spec ---------------------------------------------------------------------


class SpecResult(_Result):
    """What a ``spec_*`` function found or did. ``doc`` is the JSON document
    (``evalspec spec ... --format json``; ``None`` when the action could not run),
    ``lines`` the same for people, ``errors`` why the action could not run (one
    line each, without the ``evalspec: error:`` prefix)."""

    __slots__ = ("doc", "errors", "exit_code", "lines")

    exit_code: int
    doc: dict[str, Any] | None
    lines: tuple[str, ...]
    errors: tuple[str, ...]

    def __init__(
        self,
        exit_code: int,
        doc: dict[str, Any] | None = None,
        lines: Sequence[str] = (),
        errors: Sequence[str] = (),
    ) -> None:
        self._set(exit_code=exit_code, doc=doc, lines=tuple(lines), errors=tuple(errors))

    def __hash__(self) -> int:
        return hash((self.exit_code, self.lines, self.errors))  # doc is a dict


_SPEC_LABELS = {
    "categories": "categories",
    "metrics": "metrics",
    "post_processes": "post-process rules",
    "fields": "optional fields",
}


def _spec_project(project: Project | None) -> tuple[Project | None, SpecResult | None]:
    """The project to act on (default: the nearest ``pyproject.toml`` above the
    working directory), or the result saying why it cannot be loaded."""
    if project is not None:
        return project, None
    from evalspec.registry.project import load_project

    try:
        return load_project(), None
    except EvalspecError as exc:
        return None, SpecResult(EXIT_USAGE, errors=(str(exc),))


def _spec_report(project: Project | None) -> tuple[SpecReport | None, SpecResult | None]:
    """The project's checked chain, or the result when the project or its
    plugins could not even be loaded (exit 2; the JSON document is the report)."""
    from evalspec.authoring.check import check_project

    loaded, failed = _spec_project(project)
    if loaded is None:
        return None, failed
    report = check_project(loaded)
    config = [p.message for p in report.problems if p.check == "config"]
    if config:
        return None, SpecResult(EXIT_USAGE, report.to_dict(), errors=config)
    return report, None


def spec_list(project: Project | None = None) -> SpecResult:
    """Every spec version of ``project``, what it adds, released or pending
    (``evalspec spec list``); exit 1 when the chain has problems."""
    from evalspec.authoring.check import summarize

    report, failed = _spec_report(project)
    if report is None:
        assert failed is not None
        return failed
    rows = []
    lines = []
    invalid = {p.version for p in report.problems if p.version is not None}
    for mig in report.migrations:
        adds = summarize(mig)
        status = report.status(mig.version)
        if mig.version in invalid:
            status += " (invalid)"
        rows.append(
            {
                "version": mig.version,
                "parent": mig.parent,
                "message": mig.message,
                "origin": mig.origin,
                "status": status,
                "adds": adds,
            }
        )
        lines.append(f"{mig.version:>4}  {status:<9} {mig.message}  [{mig.origin}]")
        added = [
            f"{_SPEC_LABELS[k]} {', '.join(v)}" for k, v in adds.items() if v and k in _SPEC_LABELS
        ]
        parts = [f"adds {'; '.join(added)}"] if added else []
        if adds["binds"]:
            parts.append(f"binds {', '.join(adds['binds'])}")
        if adds["waives"]:
            parts.append(f"waives {', '.join(adds['waives'])}")
        if adds["deprecates"]:
            parts.append(f"deprecates {', '.join(adds['deprecates'])}")
        lines.append(f"      {'; '.join(parts)}" if parts else "      adds nothing")
    lines.append(
        f"in force: spec version {report.released} (lock: {report.lock_label}); head: {report.head}"
    )
    if not report.chain_ok:
        lines.append("the chain is broken:")
    lines += [f"{p.check}: {p.message}" for p in report.problems]
    if report.problems:
        lines.append(f"spec list: {len(report.problems)} problem(s); see `evalspec spec check`")
    doc = {
        "versions": rows,
        "released": report.released,
        "head": report.head,
        "lock": report.lock_label,
        "chain_ok": report.chain_ok,
        "problems": [p.to_dict() for p in report.problems],
    }
    return SpecResult(EXIT_OK if report.ok else EXIT_PROBLEMS, doc, lines)


def spec_show(number: int | None = None, project: Project | None = None) -> SpecResult:
    """The vocabulary and pair table at spec version ``number`` (default: the
    newest in force) (``evalspec spec show``)."""
    from evalspec.authoring.check import operation_lines
    from evalspec.errors import SpecVersionError
    from evalspec.versions.table import replay

    report, failed = _spec_report(project)
    if report is None:
        assert failed is not None
        return failed
    if not report.chain_ok:
        return SpecResult(EXIT_USAGE, errors=("the chain is broken; run `evalspec spec check`",))
    number = report.released if number is None else number
    try:
        spec = replay(report.migrations, number)
    except SpecVersionError as exc:
        return SpecResult(EXIT_USAGE, errors=(str(exc),))
    status = report.status(number)
    cats = {
        name: {
            "metrics": list(c.metrics),
            "post_processes": list(c.post_processes),
            "added_in": c.added_in,
            "fixtures": list(c.fixtures),
            "single_target_from": list(c.single_target_from),
            "bound": [{"kind": k, "name": n, "version": v} for k, n, v in c.bound],
        }
        for name, c in spec.categories.items()
    }
    deprecated = sorted(f"{k} {n}" for k, n in spec.deprecated)
    doc: dict[str, Any] = {
        "version": number,
        "status": status,
        "categories": cats,
        "metrics": dict(spec.metrics),
        "post_processes": dict(spec.post_processes),
        "deprecated": deprecated,
        "fields": {
            f.name: {
                "choices": list(f.choices),
                "categories": list(f.categories),
                "added_in": f.added_in,
            }
            for f in spec.fields.values()
        },
        "waivers": [
            {"rule": r, "category": c, "field": f, "value": v}
            for r, c, f, v in sorted(spec.waivers)
        ],
    }
    mig = report.migrations[number - 1]
    operations = operation_lines(mig)
    doc["message"] = mig.message
    doc["operations"] = operations
    lines = [f"spec version {number} ({status}): {mig.message}", ""]
    lines += [f"  {line}" for line in operations]
    lines += ["", "category pairs:"]
    for name, c in spec.categories.items():
        lines.append(f"  {name} (added in {c.added_in})")
        since = {(k, n): v for k, n, v in c.bound}
        metrics = [_since(m, since.get(("metric", m))) for m in c.metrics]
        rules = [_since(r, since.get(("post_process", r))) for r in c.post_processes]
        lines.append(f"    metrics: {', '.join(metrics)}")
        lines.append(f"    post_process: {', '.join(rules)}")
        if c.single_target_from:
            lines.append(f"    single target from: {', '.join(c.single_target_from)}")
    lines.append("metrics: " + ", ".join(f"{n} ({v})" for n, v in spec.metrics.items()))
    lines.append(
        "post-process rules: " + ", ".join(f"{n} ({v})" for n, v in spec.post_processes.items())
    )
    for opt in spec.fields.values():
        details = [f"one of {', '.join(opt.choices)}"] if opt.choices else []
        if opt.categories:
            details.append(f"only in {', '.join(opt.categories)}")
        shown = f" ({'; '.join(details)})" if details else ""
        lines.append(f"optional field: {opt.name}{shown} (added in {opt.added_in})")
    for rule, category, field, value in sorted(spec.waivers):
        lines.append(f"waived: {rule} for {category} tasks with {field}={value}")
    if spec.deprecated:
        lines.append("deprecated: " + ", ".join(deprecated))
    return SpecResult(EXIT_OK, doc, lines)


def _since(name: str, version: int | None) -> str:
    return name if version is None else f"{name} (bound in {version})"


def spec_new(
    *,
    category: str,
    metrics: Sequence[str],
    post_processes: Sequence[str],
    fixture: str | None = None,
    message: str | None = None,
    project: Project | None = None,
) -> SpecResult:
    """Scaffold the next migration of ``project``, adding ``category`` with its
    ``metrics`` and ``post_processes``, and its fixture stub (``evalspec spec
    new``); stubs for a plugin module ``[tool.evalspec]`` names but nobody has
    written yet. The result's ``todo`` (in ``doc``) lists what is left to do."""
    import contextlib

    from evalspec.io.atomicfile import repository_lock

    loaded, failed = _spec_project(project)
    if loaded is None:
        assert failed is not None
        return failed
    if loaded.migrations is not None and loaded.root is not None:
        # The first `spec new` of a project creates its migrations directory.
        try:
            loaded.migrations.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return SpecResult(EXIT_USAGE, errors=(f"cannot create {loaded.migrations}: {exc}",))
    # The chain is read (its head) and version head + 1 written under the lock:
    # concurrent runs would otherwise all write the same version.
    held = repository_lock(loaded.root) if loaded.root is not None else contextlib.nullcontext()
    with held:
        return _spec_new_locked(loaded, category, metrics, post_processes, fixture, message)


def _spec_new_locked(
    project: Project,
    category: str,
    metrics: Sequence[str],
    post_processes: Sequence[str],
    fixture: str | None,
    message: str | None,
) -> SpecResult:
    import attrs

    from evalspec.authoring.new import scaffold_migration, scaffold_plugin

    # A plugin module [tool.evalspec] names but nobody has written yet is the
    # normal state of a first `spec new`: check without it, then scaffold it.
    missing = project.missing_plugins()
    present = tuple(p for p in project.plugins if p not in missing)
    report, failed = _spec_report(attrs.evolve(project, plugins=present) if missing else project)
    if report is None:
        assert failed is not None
        return failed
    try:
        made = scaffold_migration(
            project,
            report.migrations,
            category=category,
            metrics=list(metrics),
            post_processes=list(post_processes),
            fixture=fixture,
            message=message,
        )
        # The stubs go to the first missing module only: two copies would
        # contribute every name twice.
        plugin_files = [scaffold_plugin(project, missing[0], made, category)] if missing else []
    except EvalspecError as exc:
        return SpecResult(EXIT_USAGE, errors=(str(exc),))
    except OSError as exc:
        return SpecResult(EXIT_USAGE, errors=(f"cannot write the scaffold: {exc}",))
    todo = list(made.todo)
    written = [project.relative(path) for path in plugin_files]
    todo[-1:-1] = [
        f"write the project plugin {m!r} listed in [tool.evalspec] plugins (it does not exist)"
        for m in missing[1:]
    ]
    if written:
        # The generic "implement ... in a plugin" step becomes "fill in the stubs".
        todo = [t for t in todo if not t.startswith("implement ")]
        todo.insert(
            -1,
            f"fill in the stubs of {', '.join(written)} (they raise NotImplementedError "
            "until written)",
        )
    doc = {
        "version": made.version,
        "migration": project.relative(made.migration_file),
        "fixture": project.relative(made.fixture_file),
        "fixture_stub_written": made.fixture_written,
        "plugins_written": written,
        "todo": todo,
    }
    lines = [
        f"wrote {doc['migration']} (spec version {made.version}, pending)",
        f"{'wrote stub' if made.fixture_written else 'uses'} {doc['fixture']}",
        *(f"wrote plugin stub {w}" for w in written),
        "still to do:",
        *(f"  {i}. {t}" for i, t in enumerate(todo, start=1)),
    ]
    return SpecResult(EXIT_OK, doc, lines)


def spec_check(project: Project | None = None) -> SpecResult:
    """Check ``project``'s chain, gate, lock, fixtures, implementations and
    changelog (``evalspec spec check``); exit 1 on any problem."""
    report, failed = _spec_report(project)
    if report is None:
        assert failed is not None
        return failed
    lines = [f"{p.check}: {p.message}" for p in report.problems]
    lines += [f"note: {n}" for n in report.notes]
    pending = report.head - report.released if report.chain_ok else 0
    if report.ok:
        lines.append(
            f"spec check: ok (spec versions 1..{report.released} released, {pending} pending)"
        )
    else:
        lines.append(f"spec check: {len(report.problems)} problem(s)")
    return SpecResult(EXIT_OK if report.ok else EXIT_PROBLEMS, report.to_dict(), lines)


def spec_lock(repair: int | None = None, project: Project | None = None) -> SpecResult:
    """Release ``project``'s head: record the checksums of its pending versions in
    its lock (``evalspec spec lock``), refused while the chain has problems.
    ``repair`` N re-records the checksums of released versions N and later after a
    deliberate edit (only for versions never published)."""
    from evalspec.io.atomicfile import repository_lock, resolve_for_write, write_atomic
    from evalspec.versions.lock import lock_chain

    report, failed = _spec_report(project)
    if report is None:
        assert failed is not None
        return failed
    loaded = report.project
    if loaded.root is None or loaded.lock is None:
        return SpecResult(EXIT_USAGE, errors=("no pyproject.toml here or above: not in a project",))
    blocking = report.problems
    if repair is not None:  # the checksum mismatches are what repair is for
        blocking = tuple(p for p in blocking if p.check != "lock")
    if blocking:
        lines = [f"{p.check}: {p.message}" for p in blocking]
        lines.append(
            f"spec lock: refusing to release: {len(blocking)} problem(s); "
            "fix them and run `evalspec spec check`"
        )
        return SpecResult(EXIT_PROBLEMS, {**report.to_dict(), "locked": []}, lines)
    path = loaded.relative(loaded.lock)
    if repair is not None:
        return _spec_repair(loaded, report, repair)
    already = report.released if loaded.has_lock else 0
    if report.head <= already:
        return SpecResult(
            EXIT_OK,
            {"locked": [], "lock": path, "released": report.released},
            [f"nothing to lock: spec version {report.head} is already released in {path}"],
        )
    lock = lock_chain(report.migrations, path)
    try:
        with repository_lock(loaded.root):
            resolve_for_write(loaded.lock, loaded.root)  # before mkdir: no dirs made outside
            loaded.lock.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(loaded.lock, lock.to_json(), root=loaded.root)
    except EvalspecError as exc:
        return SpecResult(EXIT_USAGE, errors=(str(exc),))
    except OSError as exc:
        return SpecResult(EXIT_USAGE, errors=(f"cannot write {path}: {exc.strerror or exc}",))
    new = [e.version for e in lock.entries if e.version > already]
    return SpecResult(
        EXIT_OK,
        {"locked": new, "lock": path, "released": lock.released},
        [
            f"released spec version(s) {', '.join(map(str, new))} in {path}; "
            f"spec version {lock.released} is now the default"
        ],
    )


def _spec_repair(project: Project, report: SpecReport, since: int) -> SpecResult:
    from evalspec.io.atomicfile import repository_lock, write_atomic
    from evalspec.versions.lock import read_lock, repair

    assert project.lock is not None
    path = project.relative(project.lock)
    if not project.has_lock:
        return SpecResult(EXIT_USAGE, errors=(f"nothing to repair: {path} does not exist",))
    root = project.root if project.root is not None else project.lock.parent
    try:
        with repository_lock(root):
            old = read_lock(project.lock, path)
            new = repair(report.migrations, old, since)
            write_atomic(project.lock, new.to_json(), root=root)
    except EvalspecError as exc:
        return SpecResult(EXIT_USAGE, errors=(str(exc),))
    except OSError as exc:
        return SpecResult(EXIT_USAGE, errors=(f"cannot write {path}: {exc.strerror or exc}",))
    changed = [
        (o.version, o.checksum, n.checksum)
        for o, n in zip(old.entries, new.entries, strict=True)
        if o.checksum != n.checksum
    ]
    lines = [f"re-recorded spec version {v} in {path}: {a} -> {b}" for v, a, b in changed]
    if not changed:
        lines.append(f"nothing to repair: {path} already matches the migrations")
    doc = {"repaired": [{"version": v, "old": a, "new": b} for v, a, b in changed], "lock": path}
    return SpecResult(EXIT_OK, doc, lines)


__all__ = [
    "CommandUsageError",
    "DatasetValidation",
    "DiffResult",
    "FileValidation",
    "GateResult",
    "LintResult",
    "ManifestAddResult",
    "ManifestFetchResult",
    "ManifestVerifyResult",
    "RenderResult",
    "RenderedFile",
    "ScoreResult",
    "SpecResult",
    "ValidateResult",
    "diff",
    "gate",
    "lint",
    "manifest_add",
    "manifest_fetch",
    "manifest_verify",
    "render",
    "schema",
    "score",
    "spec_check",
    "spec_list",
    "spec_lock",
    "spec_new",
    "spec_show",
    "validate",
]
