"""The argument parser of the ``evalspec`` command: argparse, plus "did you mean"
for a mistyped command, choice or flag, and errors shown with the usage of the
subcommand they belong to."""

from __future__ import annotations

import argparse
import os
import re
import sys

# Annotations only (typing costs every run milliseconds); difflib is imported
# when there is something to suggest. Type checkers treat any name TYPE_CHECKING
# as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

_INVALID_CHOICE = re.compile(
    r"invalid choice: (?P<q>['\"]?)(?P<value>.*?)(?P=q) \(choose from (?P<choices>.*)\)$"
)


def _suggest(word: str, candidates: Sequence[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` gives it
    (``COLUMNS``, else the terminal of standard output, else 80)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
    return size.columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, told the width up front: argparse builds one for every
    ``add_argument`` and would import :mod:`shutil` (with bz2, lzma and zlib: over
    a millisecond of every run) only to ask it the same question."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
        **kwargs: Any,
    ) -> None:
        if width is None:
            width = _columns() - 2  # what argparse subtracts
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors suggest the closest name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        match = _INVALID_CHOICE.search(message)
        if match is not None and "maybe you meant" not in message:
            choices = [c.strip().strip("'\"") for c in match["choices"].split(",")]
            guess = _suggest(match["value"], choices)
            if guess is not None:
                message = f"{message}; did you mean {guess!r}?"
        super().error(message)

    def option_names(self) -> list[str]:
        """Every option string this parser accepts (``--format``, ``-j``, ...)."""
        return [s for action in self._actions for s in action.option_strings]

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """Fail on arguments no parser took, naming the closest option of this one."""
        message = f"unrecognized arguments: {' '.join(extras)}"
        hints = []
        for word in extras:
            if word.startswith("-") and len(word) > 1:
                guess = _suggest(word.split("=", 1)[0], self.option_names())
                if guess is not None:
                    hints.append(f"{word.split('=', 1)[0]}: did you mean {guess}?")
        if len(hints) == 1 and len(extras) == 1:
            message += f"; did you mean {hints[0].rsplit(' ', 1)[1]}"
        elif hints:
            message += " (" + "; ".join(hints) + ")"
        self.error(message)


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Parser:
    """The deepest subcommand parser ``args`` went through (``evalspec spec lock`` → its
    ``lock`` parser), so an error shows that subcommand's usage."""
    current = parser
    while True:
        found = None
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                name = getattr(args, action.dest, None)
                found = action.choices.get(name) if isinstance(name, str) else None
                break
        if found is None:
            break
        current = found
    assert isinstance(current, Parser)
    return current


class VersionAction(argparse.Action):
    """``--version``: the version and whether the validator's compiled core is in use
    (found only when asked: the check imports the fast path)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from evalspec._version import __version__
        from evalspec.validation.fast import core_status

        print(f"evalspec {__version__} ({core_status()})")
        parser.exit()


def print_overview(parser: argparse.ArgumentParser) -> None:
    """What bare ``evalspec`` prints: the help, which lists every command."""
    parser.print_help(sys.stdout)


__all__ = ["Parser", "VersionAction", "chosen_parser", "print_overview"]
