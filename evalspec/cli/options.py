"""The options several subcommands take, defined once so that they read and behave
alike everywhere: paths, ``--quiet``, ``--color``, ``--spec-version`` and the executor."""

from __future__ import annotations

import argparse

from evalspec.io.terminal import CHOICES


def add_paths(p: argparse.ArgumentParser, more: str = "") -> None:
    """The PATH... argument of the commands that read task files."""
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="task files (JSON Lines); - reads standard input; a directory stands for "
        "every *.jsonl file below it, recursively, in sorted order" + more,
    )


def add_quiet(p: argparse.ArgumentParser, what: str = "problems") -> None:
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help=f"print only the {what}: no summary lines",
    )


def add_color(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--color",
        choices=CHOICES,
        default="auto",
        help="colour the output: auto (default: on a terminal, unless NO_COLOR is set; "
        "FORCE_COLOR forces it), always or never",
    )


def add_spec_version(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--spec-version",
        type=int,
        default=None,
        metavar="N",
        help="validate against spec version N (default: the newest)",
    )


def add_executor_options(p: argparse.ArgumentParser, executor_help: str) -> None:
    """``--executor local|ray`` and ``--ray-address``, as ``score`` and ``validate`` take them."""
    p.add_argument("--executor", choices=("local", "ray"), default="local", help=executor_help)
    p.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        default=None,
        help="the Ray cluster for --executor ray (default: RAY_ADDRESS, else a running "
        "local cluster, else a new one on this machine)",
    )
