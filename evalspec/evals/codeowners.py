"""CODEOWNERS: who must approve a change to a path (GitHub's rules: last match wins)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
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


def _not_slash(c: str) -> bool:
    return c != "/"


def _not_newline(c: str) -> bool:
    return c != "\n"  # what the regex "." the patterns were first translated to matched


class _Glob:
    """A CODEOWNERS pattern as a small automaton run once over the path: time linear
    in pattern and path. A backtracking regex of the pattern took time exponential in
    its wildcards (``**`` repeated, ``*a*a*a`` against ``aaaa``), so a CODEOWNERS
    line from a pull request could hang ``evalspec lint``."""

    __slots__ = ("_moves", "_skips", "accept", "start")

    def __init__(self) -> None:
        self._moves: list[list[tuple[Callable[[str], bool], int]]] = []  # consume one char
        self._skips: list[list[int]] = []  # consume nothing
        self.start = self.state()
        self.accept = self.start  # set by the builder

    def state(self) -> int:
        self._moves.append([])
        self._skips.append([])
        return len(self._moves) - 1

    def char(self, at: int, test: Callable[[str], bool]) -> int:
        """One character passing ``test``; the state after it."""
        after = self.state()
        self._moves[at].append((test, after))
        return after

    def star(self, at: int, test: Callable[[str], bool]) -> int:
        """Any number of characters passing ``test``; the state after them."""
        loop, after = self.state(), self.state()
        self._skips[at].append(loop)
        self._moves[loop].append((test, loop))
        self._skips[loop].append(after)
        return after

    def optional(self, at: int, build: Callable[[int], int]) -> int:
        """What ``build`` adds from ``at``, or nothing; the state after it."""
        after = build(at)
        self._skips[at].append(after)
        return after

    def _closure(self, states: set[int]) -> set[int]:
        todo = list(states)
        while todo:
            for nxt in self._skips[todo.pop()]:
                if nxt not in states:
                    states.add(nxt)
                    todo.append(nxt)
        return states

    def match(self, path: str) -> bool:
        current = self._closure({self.start})
        for c in path:
            current = self._closure({n for s in current for test, n in self._moves[s] if test(c)})
            if not current:
                return False
        return self.accept in current


@functools.lru_cache(maxsize=1024)
def _glob(pattern: str) -> _Glob:
    """The matcher of one CODEOWNERS pattern (GitHub's rules, as gitignore's)."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    g = _Glob()

    def any_directories(at: int) -> int:  # "**/": nothing, or anything ending in "/"
        return g.optional(at, lambda s: g.char(g.star(s, _not_newline), "/".__eq__))

    at = g.start if anchored else any_directories(g.start)
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            at = any_directories(at)
            i += 3
        elif body.startswith("**", i):
            at = g.star(at, _not_newline)
            i += 2
        elif body[i] == "*":
            at = g.star(at, _not_slash)
            i += 1
        elif body[i] == "?":
            at = g.char(at, _not_slash)
            i += 1
        else:
            at = g.char(at, body[i].__eq__)
            i += 1
    # A pattern names a file, or a directory and everything below it; a
    # trailing slash restricts it to directories.
    if pattern.endswith("/"):
        at = g.star(g.char(at, "/".__eq__), _not_newline)
    elif not (body.endswith("*") and not body.endswith("**")):
        # (GitHub: "docs/*" owns docs/a.md but not docs/sub/b.md)
        at = g.optional(at, lambda s: g.star(g.char(s, "/".__eq__), _not_newline))
    g.accept = at
    return g


def owners_of(rules: Sequence[Rule], path: str) -> tuple[tuple[str, ...], Rule | None]:
    """The owners of ``path`` (repository-relative, ``/``-separated) and the rule that decided."""
    for rule in reversed(rules):
        if _glob(rule.pattern).match(path):
            return rule.owners, rule
    return (), None


def same_owner(a: str, b: str) -> bool:
    """GitHub handles and e-mails compare case-insensitively."""
    return a.casefold() == b.casefold()
