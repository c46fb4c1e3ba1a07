"""What the commands accept where they read task files: ``-`` for standard input,
directories (their ``*.jsonl`` files, recursively, in sorted order), the project
those paths belong to (:func:`govern_path`), and the refusal of a symlink out of
the repository or a file that is not a regular file."""

from __future__ import annotations

import errno
import os
import stat
import sys

from evalspec.io.governing import govern, nearest, start_of
from evalspec.io.repository import inside, repository_of
from evalspec.io.wording import one_line

# Annotations only: the warm `evalspec validate` imports neither typing nor the
# value classes (attrs). Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import IO, Any

STDIN = "-"
"""The argument that means standard input."""

STDIN_NAME = "<stdin>"
"""How standard input is named in messages (``<stdin>:3: rule ...``)."""

PATTERN = ".jsonl"


def input_name(path: str) -> str:
    """The name a path is reported under."""
    return STDIN_NAME if path == STDIN else path


def expand(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """``paths`` with each directory replaced by the ``*.jsonl`` files below it
    (recursively, sorted by path components; symlinked directories are not entered,
    so a loop cannot run away). Returns ``(files, problems)``: a directory holding no
    such file is a problem, as are a ``*.jsonl`` name below it that is not a regular
    file and ``-`` given twice (standard input reads once)."""
    files: list[str] = []
    problems: list[str] = []
    stdin_seen = False
    root = repository_of(os.getcwd())
    for raw in paths:
        if raw == STDIN:
            if stdin_seen:
                problems.append("- (standard input) can be given only once")
                continue
            stdin_seen = True
            files.append(raw)
        elif os.path.isdir(raw):
            found = _walk(raw, problems)
            if not found:
                problems.append(f"{raw}: directory holds no *{PATTERN} file")
            files.extend(_kept_inside(found, root, problems))
        else:
            files.extend(_kept_inside([raw], root, problems))
    return files, problems


def governing_start(raw: str) -> str | None:
    """Where the project of the path argument ``raw`` is looked for from
    (:mod:`evalspec.io.governing`); ``None`` for standard input and URLs, which say
    nothing about a project (the working directory's applies). A glob counts from
    the part before its first wildcard."""
    if raw == STDIN or "://" in raw:
        return None
    return start_of(_literal_prefix(raw))


def project_file(start: str | None) -> str | None:
    """The ``pyproject.toml`` governing ``start`` (``None``: the working directory)."""
    return nearest("pyproject.toml", start if start is not None else os.getcwd())


def govern_path(raw: str) -> str | None:
    """Make the project of the path argument ``raw`` the one in force (the nearest
    ``pyproject.toml`` at or above it, so the verdict on a file is the same from any
    working directory); returns that ``pyproject.toml`` (``None``: no project)."""
    start = governing_start(raw)
    govern(start)
    return project_file(start)


def per_project(paths: Sequence[str], build: Callable[[], Any]) -> dict[str | None, Any]:
    """``build()`` once for each project among ``paths``, with that project in force,
    keyed by its ``pyproject.toml`` as :func:`govern_path` returns it: a project's
    plugin errors surface before any file is read."""
    built: dict[str | None, Any] = {}
    for raw in paths:
        start = governing_start(raw)
        project = project_file(start)
        if project not in built:
            govern(start)
            built[project] = build()
    return built


def _literal_prefix(path: str) -> str:
    """``data/*/x.jsonl`` -> ``data``: the part of a glob before its first wildcard."""
    literal: list[str] = []
    for part in path.split(os.sep):
        if any(c in part for c in _GLOB_MAGIC):
            return os.sep.join(literal) or "."
        literal.append(part)
    return path


_GLOB_MAGIC = "*?["


def escape_problem(path: str, root: str) -> str | None:
    """Why ``path`` must not be read: it is inside ``root`` but a symlink sends it out.

    Task files arrive in pull requests, and a symlink among them
    (``datasets/x.jsonl -> /proc/self/environ``) would have each of its lines
    printed back as an invalid task's text. A path named outside ``root`` is
    read as asked (``None``).
    """
    absolute = os.path.abspath(path)
    real_root = os.path.realpath(root)
    if not (inside(root, absolute) or inside(real_root, absolute)):
        return None
    real = os.path.realpath(absolute)
    if inside(real_root, real):
        return None
    return (
        f"refusing to read {one_line(path)}: it is a symlink to {one_line(real)}, "
        f"outside {one_line(root)}"
    )


def special_problem(path: str) -> str | None:
    """Why a ``*.jsonl`` found in a directory is not read: a dangling symlink, a named
    pipe (opening it would wait for a writer) or a device is a problem, never silently
    skipped. ``None`` for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot read {one_line(str(path))}: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return f"{one_line(str(path))}: not a regular file, not read"
    return None


def _kept_inside(paths: list[str], root: str, problems: list[str]) -> list[str]:
    """``paths`` without those :func:`escape_problem` refuses (added to ``problems``)."""
    kept = []
    for path in paths:
        problem = escape_problem(path, root)
        if problem is None:
            kept.append(path)
        else:
            problems.append(problem)
    return kept


def _walk(top: str, problems: list[str]) -> list[str]:
    def unreadable(exc: OSError) -> None:
        # A directory that cannot be listed is reported, never silently skipped.
        problems.append(f"cannot read {one_line(str(exc.filename or top))}: {exc.strerror or exc}")

    found: list[tuple[list[str], str]] = []
    for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):  # problems in a stable order too
            if name.endswith(PATTERN):
                path = os.path.join(dirpath, name)
                problem = special_problem(path)
                if problem is None:
                    found.append((os.path.relpath(path, top).split(os.sep), path))
                else:
                    problems.append(problem)
    return [path for _, path in sorted(found)]


def stdin_binary() -> IO[bytes]:
    """Standard input as bytes.

    :raises OSError: standard input is closed (``<&-``), so there is nothing to read.
    """
    stream: IO[bytes] | None = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise OSError(errno.EBADF, "standard input is closed")
    return stream


__all__ = [
    "STDIN",
    "STDIN_NAME",
    "escape_problem",
    "expand",
    "govern_path",
    "governing_start",
    "input_name",
    "per_project",
    "project_file",
    "special_problem",
    "stdin_binary",
]
