"""The ``evalspec`` command line: one subcommand per module in ``evalspec.cli.commands``."""

from __future__ import annotations

import importlib
import os
import sys

from evalspec.errors import EvalspecError
from evalspec.io.exitcodes import EXIT_OUTPUT_CLOSED, EXIT_USAGE
from evalspec.io.governing import govern

# Annotations only. argparse (and evalspec.cli.parser, built on it) is imported
# when a command line is parsed with it: a warm ``evalspec validate PATH...`` is
# parsed without (see evalspec.cli.commands.validate.quick_args), and argparse with
# the re, gettext and locale it imports costs such a run ~7 ms. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

COMMANDS = (
    "validate",
    "render",
    "schema",
    "spec",
    "score",
    "init",
    "lint",
    "diff",
    "gate",
    "manifest",
    "import",
    "export",
)
"""Subcommand modules of :mod:`evalspec.cli.commands`; each has ``add_parser`` and ``run``."""

MODULES = {"import": "import_"}
"""A command whose module is named otherwise (``import`` is a Python keyword)."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one with just that subcommand: importing every
    subcommand module costs tens of milliseconds a command does not need."""
    from evalspec.cli.parser import Parser, VersionAction

    parser = Parser(
        prog="evalspec",
        description="Validate, render and score LLM evaluation tasks.",
        epilog="Run `evalspec COMMAND --help` for a command's options. Exit status: 0 clean, "
        "1 problems found, 2 usage or I/O error.",
    )
    parser.add_argument(
        "-V",
        "--version",
        action=VersionAction,
        nargs=0,
        help="print the version (and whether the compiled core is in use) and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, title="commands")
    for name in COMMANDS if only is None else (only,):
        module = importlib.import_module(f"evalspec.cli.commands.{MODULES.get(name, name)}")
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 clean, 1 problems found, 2 usage or I/O error)."""
    for stream in (sys.stdout, sys.stderr):
        # A lone surrogate in a task must print as an escape, not crash the run.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    words = list(sys.argv[1:] if argv is None else argv)
    first = words[0] if words else None
    if first is None:
        from evalspec.cli.parser import print_overview

        # Bare `evalspec` is a usage error that shows what there is to use.
        print_overview(build_parser())
        return EXIT_USAGE
    args = _quick_args(words)
    if args is None:
        from evalspec.cli.parser import chosen_parser

        parser = build_parser(first if first in COMMANDS else None)
        args, extras = parser.parse_known_args(words)
        if extras:
            chosen_parser(parser, args).unrecognized(extras)
    try:
        # Every command looks for its project, layout or repository from here: a
        # directory deleted under the shell would end each in a traceback.
        os.getcwd()
    except OSError as exc:
        print(
            f"evalspec: error: cannot use the current directory: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        code: int = args.run(args)
    except EvalspecError as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("evalspec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output reader went away: never a clean exit
        return EXIT_OUTPUT_CLOSED
    finally:
        # A command may have chosen the project of its paths; the next main() in this
        # process (a test, a library caller) starts from its own working directory.
        govern(None)
    return code


def _quick_args(words: list[str]) -> argparse.Namespace | None:
    """What argparse would make of the common ``evalspec validate PATH...``, made
    without it; ``None`` for every other command line."""
    if words[0] != "validate":
        return None
    from evalspec.cli.commands.validate import quick_args

    args: argparse.Namespace | None = quick_args(words)
    return args
