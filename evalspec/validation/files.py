"""Validating the files and datasets a command names: :func:`validate`, the function
behind ``evalspec validate``, and its result values.

It is :func:`evalspec.command.validate` (and its values are
``evalspec.command``'s); it lives here, apart from the other library commands, so
that a warm ``evalspec validate`` does not load them: ``evalspec.command`` is the
largest module of the package, and reading its byte code alone was ~0.5 ms of
that run (issue 25).

The result classes are plain slotted read-only classes, not attrs ones: a warm
``evalspec validate`` of a valid file imports neither attrs nor typing
(``tests/cli/test_startup.py`` pins it).
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
    from collections.abc import Callable, Iterator, Sequence
    from typing import Protocol

    from evalspec.model import ErrorRecord
    from evalspec.registry.tables import AnySpec
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
        from evalspec.validation.pool import PoolFailed

        # A lost jobs worker is not the file's fault: say so.
        failure = "cannot check" if isinstance(exc, PoolFailed) else "cannot read"
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


__all__ = [
    "CommandUsageError",
    "DatasetValidation",
    "FileValidation",
    "ValidateResult",
    "validate",
]
