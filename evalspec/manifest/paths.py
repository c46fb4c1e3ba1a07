"""Path rules for manifest entries: syntax, collisions, and containment on disk.

A manifest is input a stranger can write (a pull request), and ``fetch``
writes files at its paths, so every path is checked before any file is
opened: by syntax first (no absolute path, ``..``, drive, backslash or
control character can pass), then on disk, where each existing component is
``lstat``-ed so a symlink that leads outside the repository is refused.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from evalspec.io.repository import inside

_DRIVE = re.compile(r"^[A-Za-z]:")
_MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 4095
"""The longest path (PATH_MAX, 4096 on Linux, less its terminating NUL)."""


def path_syntax_problem(path: object) -> tuple[str, str] | None:
    """``(code, message)`` when ``path`` is not a safe repository-relative POSIX path."""
    if not isinstance(path, str):
        return "invalid_entry", f"path must be a string, got {type(path).__name__}"
    if not path:
        return "invalid_path", "path is empty"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "invalid_path", "path holds a lone surrogate, which no file name can hold"
    if "\x00" in path:
        return "invalid_path", "path holds a NUL character"
    if any(unicodedata.category(c) == "Cc" for c in path):
        return "invalid_path", "path holds a control character"
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        return "invalid_path", f"path is over {MAX_PATH_BYTES} bytes (PATH_MAX)"
    if path.startswith(("/", "\\")):
        return "path_traversal", "path is absolute; paths are relative to the repository root"
    if _DRIVE.match(path):
        return "path_traversal", "path starts with a drive letter; paths are relative POSIX"
    if "\\" in path:
        return "invalid_path", "path holds a backslash; use / as the separator"
    for part in path.split("/"):
        if part == "..":
            return "path_traversal", "path has a '..' component, which leaves its directory"
        if part == "":
            return "invalid_path", "path has an empty component ('//' or a trailing '/')"
        if part == ".":
            return "invalid_path", "path has a '.' component; write the path without it"
        # Case-insensitive file systems treat .GIT as .git; writing there runs code.
        if part.casefold() == ".git":
            return "invalid_path", "path points into .git, which a manifest must never touch"
        if len(part.encode("utf-8")) > _MAX_COMPONENT_BYTES:
            return "invalid_path", f"a path component is over {_MAX_COMPONENT_BYTES} bytes"
    return None


def collision_key(path: str) -> str:
    """The form under which two paths name one file on some file system."""
    return unicodedata.normalize("NFC", path).casefold()


def path_collisions(paths: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """``(path, earlier, code, message)`` for each path that clashes with an earlier one.

    Clashes are equality after NFC (two spellings of one name), equality after
    case folding (one file on macOS and Windows), and a file path that is also
    a directory of another entry.
    """
    seen: dict[str, str] = {}
    dirs: dict[str, str] = {}
    out: list[tuple[str, str, str, str]] = []
    ordered = list(paths)
    for path in ordered:
        key = collision_key(path)
        if key in seen:
            earlier = seen[key]
            if path == earlier:
                message = "the same path is listed twice"
            elif unicodedata.normalize("NFC", path) == unicodedata.normalize("NFC", earlier):
                message = f"equal to {earlier!r} after Unicode NFC normalisation"
            else:
                message = (
                    f"differs from {earlier!r} only in letter case; they are one file "
                    "on case-insensitive file systems"
                )
            out.append((path, earlier, "duplicate_path", message))
            continue
        seen[key] = path
        parts = key.split("/")
        for i in range(1, len(parts)):
            dirs.setdefault("/".join(parts[:i]), path)
    for path in ordered:
        key = collision_key(path)
        if seen.get(key) == path and key in dirs:
            inner = dirs[key]
            message = f"is a file here but a directory of {inner!r}"
            out.append((path, inner, "path_conflict", message))
    return out


def find_root(start: str | os.PathLike[str]) -> Path:
    """The nearest directory at or above ``start`` holding ``.git``; else the current one.

    A ``.git`` *file* counts too: worktrees and submodules have one.
    """
    here = Path(os.path.abspath(start))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return Path.cwd()


def containment_problem(root: str | os.PathLike[str], path: str) -> str | None:
    """A message when ``path`` (already syntax-checked) resolves outside ``root``.

    Each existing component is ``lstat``-ed; a symlink is allowed only when
    its full resolution stays inside the repository.
    """
    root_real = os.path.realpath(root)
    current = root_real
    parts = path.split("/")
    for i, part in enumerate(parts):
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except OSError:  # does not exist (yet), or a parent is not a directory
            break
        if stat.S_ISLNK(mode):
            target = os.path.realpath(current)
            if not inside(root_real, target):
                shown = "/".join(parts[: i + 1])
                # Where it leads is not shown: the message must reveal nothing outside.
                return f"{shown!r} is a symlink that leads outside the repository"
    final = os.path.realpath(os.path.join(root_real, *parts))
    if not inside(root_real, final):
        return "path resolves to a place outside the repository"
    return None
