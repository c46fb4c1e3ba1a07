"""CODEOWNERS: who must approve a change to a path (GitHub's rules: last match wins)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

import attrs

LOCATIONS = (Path(".github") / "CODEOWNERS", Path("CODEOWNERS"), Path("docs") / "CODEOWNERS")
"""Where GitHub looks, in its order: the first one that exists is used."""


@attrs.frozen
class Rule:
    """One CODEOWNERS line: a path pattern and its owners (possibly none)."""

    pattern: str
    owners: tuple[str, ...]
    line: int


def find_codeowners(root: Path) -> Path | None:
    """The CODEOWNERS file GitHub would use for the repository at ``root``."""
    for rel in LOCATIONS:
        if (root / rel).is_file():
            return root / rel
    return None


def parse_codeowners(text: str) -> list[Rule]:
    """The rules of a CODEOWNERS file, in file order (comments and blanks skipped)."""
    rules = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        pattern, *owners = line.split()
        rules.append(Rule(pattern.replace("\\#", "#"), tuple(owners), number))
    return rules


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    directory = pattern.endswith("/")
    out = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    core = "".join(out)
    prefix = "" if anchored else "(?:.*/)?"
    # A pattern names a file, or a directory and everything below it; a
    # trailing slash restricts it to directories.
    if directory:
        suffix = "/.*"
    elif body.endswith("*") and not body.endswith("**"):
        suffix = ""  # GitHub: "docs/*" owns docs/a.md but not docs/sub/b.md
    else:
        suffix = "(?:/.*)?"
    return re.compile(f"^{prefix}{core}{suffix}$")


def owners_of(rules: Sequence[Rule], path: str) -> tuple[tuple[str, ...], Rule | None]:
    """The owners of ``path`` (repository-relative, ``/``-separated) and the rule that decided."""
    for rule in reversed(rules):
        if _regex(rule.pattern).match(path):
            return rule.owners, rule
    return (), None


def same_owner(a: str, b: str) -> bool:
    """GitHub handles and e-mails compare case-insensitively."""
    return a.casefold() == b.casefold()
