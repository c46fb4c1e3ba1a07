"""What the commands accept where they read task files: ``-`` for standard input,
directories (their ``*.jsonl`` files, recursively, in sorted order), and the
refusal of a symlink out of the repository or a file that is not a regular file."""

from __future__ import annotations

import errno
import os
import stat
import sys

from evalspec.io.repository import inside, repository_of
from evalspec.io.wording import one_line

# Annotations only: the warm `evalspec validate` imports neither typing nor the
# value classes (attrs). Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO

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
    "input_name",
    "special_problem",
    "stdin_binary",
]
