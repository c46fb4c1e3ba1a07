"""Running the code blocks of README.md and docs/**/*.md (the convention: docs/contributing.md).

Sybil finds the fenced blocks and keeps one namespace per document; the
evaluators here decide what running a block means for its language:

- ``python``: run in order in the document's namespace, in a temporary copy of
  the repository; a line ending in ``# prints: TEXT`` declares output: the block
  must print exactly those TEXT lines, in order; ``pycon`` (``>>>`` sessions):
  checked as doctests in the same namespace;
- ``sh`` / ``bash``: ``bash -e`` in that copy, this interpreter's ``evalspec`` first
  on PATH; exit 0, or N when the line before the fence is ``<!-- docs: exit N -->``;
- ``console``: each ``$ command`` runs as an ``sh`` block would and the lines after
  it, up to the next ``$``, must be its output (stdout and stderr; a line ``...``
  stands for any lines); the exit marker applies to the last command;
- ``json``, ``toml``, ``yaml``, ``ini``: must parse (an ``ini`` value must not carry
  an inline comment: pytest would read it as part of the value); ``jsonl``: every
  line parses; ``markdown``: its front matter, if any, is a YAML mapping;
- ``text``, and any block right after ``<!-- docs: skip (reason) -->`` (the reason
  is required): not run. Another language, or none, is an error.
"""

from __future__ import annotations

import configparser
import contextlib
import doctest
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent

SHELLS = frozenset({"sh", "bash", "shell", "console"})
NOT_RUN = frozenset({"text"})
PARSED = frozenset({"json", "jsonl", "toml", "yaml", "ini", "markdown"})
LANGUAGES = SHELLS | NOT_RUN | PARSED | {"python", "pycon"}
ALIASES = {"py": "python", "python3": "python", "yml": "yaml", "md": "markdown", "zsh": "sh"}
"""Other names of the same languages, as renderers accept them."""

TIMEOUT = 300
"""Seconds a shell block may take (a hung block fails instead of hanging the suite)."""

_MARKER = re.compile(r"^<!--\s*docs:\s*(?P<kind>[\w-]+)\s*(?P<rest>.*?)\s*-->$")
_PRINTS = re.compile(r"#\s*prints:\s?(?P<text>.*?)\s*$", re.MULTILINE)
_INFO = re.compile(r"(?P<info>[^\n]*)\n")

# Not copied into the scratch repository: caches and environments, never read by docs.
_IGNORE = shutil.ignore_patterns(
    ".git",
    ".ci-venv",
    ".ci-venv-harness",
    ".venv-harness",
    ".venv",
    "__pycache__",
    "*.pyc",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "*.egg-info",
    "build",
    "dist",
    "site",
    ".ci-site",
)


class DocsError(Exception):
    """A block is malformed (unknown language, a marker without its reason, ...)."""


@attrs.frozen
class Block:
    """One fenced block and the marker on the line before it, if any."""

    language: str
    source: str
    line: int
    """The line of the opening fence (1-based)."""
    skip: str | None = None
    """The reason given by ``<!-- docs: skip (reason) -->``."""
    exit_code: int = 0
    problem: str | None = None
    """Why the block itself is malformed (reported instead of running it)."""


def _marker(text: str, start: int) -> tuple[str | None, int, str | None]:
    """``(skip reason, expected exit, problem)`` from the line right before ``start``."""
    before = text[:start]
    if not before.endswith("\n"):
        return None, 0, None
    previous = before[:-1].rsplit("\n", 1)[-1].strip()
    match = _MARKER.match(previous)
    if match is None:
        if previous.startswith("<!--") and "docs:" in previous:
            return None, 0, f"cannot read the marker {previous!r}"
        return None, 0, None
    kind, rest = match["kind"], match["rest"]
    if kind == "skip":
        reason = rest[1:-1].strip() if rest.startswith("(") and rest.endswith(")") else ""
        if not reason:
            return None, 0, "a skip marker needs its reason: <!-- docs: skip (why) -->"
        return reason, 0, None
    if kind == "exit":
        if not rest.isdigit():
            return None, 0, f"an exit marker needs a status: <!-- docs: exit N -->, not {rest!r}"
        return None, int(rest), None
    return None, 0, f"unknown marker docs: {kind} (known: skip, exit)"


class BlockParser:
    """A Sybil parser: every fenced block of a Markdown document, evaluated by ``runner``."""

    def __init__(self, runner: BlockRunner) -> None:
        self.runner = runner
        self.lexer = RawFencedCodeBlockLexer(info_pattern=_INFO)

    def __call__(self, document: Document) -> Iterable[Region]:
        for lexed in self.lexer(document):
            info = str(lexed.lexemes["info"]).strip()
            language = info.split()[0].lower() if info else ""
            language = ALIASES.get(language, language)
            line = document.text.count("\n", 0, lexed.start) + 1
            skip, exit_code, problem = _marker(document.text, lexed.start)
            if problem is None and exit_code and language not in SHELLS:
                problem = "an exit marker belongs before a sh or console block"
            if problem is None and skip is None and language not in LANGUAGES:
                problem = (
                    f"a block fenced {language or 'without a language'!r} is neither run nor "
                    "marked: fence it as text, mark it <!-- docs: skip (reason) -->, or use "
                    f"one of {', '.join(sorted(LANGUAGES))}"
                )
            block = Block(language, str(lexed.lexemes["source"]), line, skip, exit_code, problem)
            yield Region(lexed.start, lexed.end, block, self.runner)


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    # contextlib.chdir arrived in Python 3.11.
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@attrs.define
class BlockRunner:
    """Evaluates blocks in ``workdir`` (a scratch copy of the repository)."""

    workdir: Path
    env: dict[str, str] = attrs.field(factory=dict)

    def __call__(self, example: Example) -> str | None:
        block: Block = example.parsed
        if block.problem is not None:
            raise DocsError(block.problem)
        if block.skip is not None or block.language in NOT_RUN:
            return None
        if block.language == "python":
            return self.python(block, example.namespace)
        if block.language == "pycon":
            return self.pycon(block, example.namespace)
        if block.language == "console":
            return self.console(block)
        if block.language in SHELLS:
            return self.shell(block.source, block.exit_code)
        parse_block(block)
        return None

    def python(self, block: Block, namespace: dict[str, Any]) -> str | None:
        namespace.setdefault("__name__", "__docs__")
        # Leading newlines make a traceback point at the document's own line numbers.
        code = compile("\n" * block.line + block.source, str(namespace["__file__"]), "exec")
        out = io.StringIO()
        with _cwd(self.workdir), contextlib.redirect_stdout(out):
            exec(code, namespace)
        expected = [m["text"] for m in _PRINTS.finditer(block.source)]
        printed = out.getvalue().splitlines()
        if expected and printed != expected:
            return f"the block printed {printed!r}; its # prints: comments say {expected!r}"
        return None

    def pycon(self, block: Block, namespace: dict[str, Any]) -> str | None:
        """``>>>`` sessions, checked as doctests in the document's namespace."""
        namespace.setdefault("__name__", "__docs__")
        test = doctest.DocTestParser().get_doctest(
            block.source, namespace, str(namespace["__file__"]), None, block.line
        )
        out = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        with _cwd(self.workdir):
            result = runner.run(test, out=out.write, clear_globs=False)
        return out.getvalue() if result.failed else None

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-c", command],
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT,
        )

    def shell(self, source: str, exit_code: int) -> str | None:
        r = self.run(source)
        if r.returncode != exit_code:
            return f"exit status {r.returncode}, expected {exit_code}; output:\n{r.stdout[-3000:]}"
        return None

    def console(self, block: Block) -> str | None:
        sessions = list(console_sessions(block.source))
        if not sessions:
            raise DocsError("a console block holds no `$ command` line")
        for i, (command, expected) in enumerate(sessions):
            want = block.exit_code if i == len(sessions) - 1 else 0
            r = self.run(command)
            if r.returncode != want:
                return f"`{command}`: exit status {r.returncode}, expected {want}:\n{r.stdout}"
            if not output_matches(r.stdout, expected):
                return f"`{command}` printed:\n{r.stdout}\nthe block shows:\n" + "\n".join(expected)
        return None


def console_sessions(source: str) -> Iterator[tuple[str, list[str]]]:
    """``(command, expected output lines)`` for each ``$ command`` of a console block."""
    command: list[str] | None = None
    output: list[str] = []
    continued = False
    for line in source.splitlines():
        if continued and command is not None:
            command.append(line)
            continued = line.endswith("\\")
            continue
        if line.startswith("$ "):
            if command is not None:
                yield "\n".join(command), output
            command, output = [line[2:]], []
            continued = line.endswith("\\")
        elif command is not None:
            output.append(line)
    if command is not None:
        yield "\n".join(command), output


def output_matches(actual: str, expected: list[str]) -> bool:
    """Whether ``actual`` is the lines ``expected`` (trailing spaces aside; ``...`` is any
    number of lines)."""
    while expected and not expected[-1].strip():
        expected = expected[:-1]
    any_lines = r"(?:[^\n]*\n)*?"
    parts = [any_lines if e.strip() == "..." else re.escape(e.rstrip()) + r"\n" for e in expected]
    lines = "".join(line.rstrip() + "\n" for line in actual.splitlines())
    return re.fullmatch("".join(parts), lines) is not None


def parse_block(block: Block) -> None:
    """Parse a data block; raises when it does not parse."""
    text = block.source
    if block.language == "json":
        json.loads(text)
    elif block.language == "jsonl":
        for line in text.splitlines():
            if line.strip():
                json.loads(line)
    elif block.language == "toml":
        tomllib.loads(text)
    elif block.language == "yaml":
        import yaml

        list(yaml.safe_load_all(text))
    elif block.language == "ini":
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        for section in parser.sections():
            for key, value in parser.items(section):
                if re.search(r"\s[#;]", value):
                    raise DocsError(
                        f"[{section}] {key} = {value!r} carries an inline comment, which "
                        "pytest and configparser read as part of the value: put it on its own line"
                    )
    elif block.language == "markdown" and text.startswith("---\n"):
        import yaml

        front, sep, _ = text[4:].partition("\n---")
        if not sep:
            raise DocsError("the front matter opened by --- is never closed")
        if not isinstance(yaml.safe_load(front), dict):
            raise DocsError("the front matter is not a YAML mapping")


def scratch_copy(dest: Path) -> Path:
    """A copy of the repository (without caches and .git) to run blocks in."""
    shutil.copytree(ROOT, dest, ignore=_IGNORE, symlinks=True)
    return dest


def block_env(tmpdir: Path | None = None) -> dict[str, str]:
    """The environment blocks run in: this interpreter's scripts first on PATH.

    ``tmpdir`` becomes ``TMPDIR``: a block that needs a place outside the repository
    writes under ``${TMPDIR:-/tmp}``, so documents run at once (pytest-xdist workers,
    two checkouts' suites on one machine) never share a fixed /tmp path.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PYTEST_ADDOPTS")}
    if tmpdir is not None:
        tmpdir.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(tmpdir)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.setdefault("GIT_AUTHOR_NAME", "docs")
    env.setdefault("GIT_AUTHOR_EMAIL", "docs@example.invalid")
    env.setdefault("GIT_COMMITTER_NAME", "docs")
    env.setdefault("GIT_COMMITTER_EMAIL", "docs@example.invalid")
    return env


def run_document(path: Path, workdir: Path, tmpdir: Path | None = None) -> list[str]:
    """Run every block of ``path`` in order; one message per failing block.

    ``tmpdir``: the blocks' ``TMPDIR`` (see :func:`block_env`); else the caller's.
    """
    runner = BlockRunner(workdir, block_env(tmpdir))
    document = Sybil(parsers=[BlockParser(runner)]).parse(path)
    document.namespace["__file__"] = str(path)
    failures = []
    for example in document.examples():
        block: Block = example.parsed
        where = f"{path.name}:{block.line} ({block.language or 'no language'})"
        try:
            example.evaluate()
        except (Exception, SystemExit) as exc:  # every failing block is reported
            failures.append(f"{where}: {type(exc).__name__}: {exc}")
    return failures


__all__ = [
    "Block",
    "BlockParser",
    "BlockRunner",
    "DocsError",
    "console_sessions",
    "output_matches",
    "run_document",
    "scratch_copy",
]
