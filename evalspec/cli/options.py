"""The options several subcommands take, defined once so that they read and behave
alike everywhere: paths, ``--quiet``, ``--color``, ``--spec-version`` and the executor."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from evalspec.io.terminal import CHOICES

# Annotations only: importing typing costs every run milliseconds. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from evalspec.sandbox.limits import Limits


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


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
MAX_SIZE = 1 << 40
"""The largest size a limit option takes: beyond it an rlimit says nothing more."""


def _size(text: str) -> int:
    """A byte count: ``65536``, ``64K``, ``512M``, ``1G`` (binary units; ``KiB``,
    ``MB``... spelled out are the same), at least 1."""
    body = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = body[-1:] if body[-1:] in ("K", "M", "G") else ""
    number = body[: len(body) - len(unit)]
    try:
        value = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (a number of bytes, or with K, M or G: 512M)"
        ) from None
    if not 1 <= value <= MAX_SIZE:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be from 1 byte to 1024G, got {text!r}")
    return int(value)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_COUNT}, got {value}")
    return value


MAX_COUNT = 1 << 31


MAX_SECONDS = 86_400.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


# option -> (Limits field, parser, metavar, what it bounds). Every field of
# evalspec.sandbox.Limits has one (a test checks).
LIMIT_OPTIONS: dict[str, tuple[str, Callable[[str], float], str, str]] = {
    "--timeout": ("wall_seconds", _seconds, "SECONDS", "wall-clock time per program"),
    "--cpu": ("cpu_seconds", _count, "SECONDS", "CPU time per process (whole seconds)"),
    "--memory": ("memory_bytes", _size, "SIZE", "address space per process (512M, 1G)"),
    "--file-size": ("file_size_bytes", _size, "SIZE", "size of any file the program writes"),
    "--open-files": ("open_files", _count, "N", "open file descriptors per process"),
    "--processes": ("processes", _count, "N", "processes the program may run at once"),
    "--output-bytes": ("output_bytes", _size, "SIZE", "bytes kept of stdout and of stderr"),
    "--disk": ("disk_bytes", _size, "SIZE", "writable space (namespace tier: one tmpfs)"),
}


def add_limit_options(p: argparse.ArgumentParser) -> None:
    """One option per field of the sandbox's ``Limits`` (``--timeout``, ``--memory``...)."""
    # Imported here: only the commands that run code build these options.
    from evalspec.sandbox.limits import Limits

    defaults = Limits()
    group = p.add_argument_group("code_exec limits (each program; recorded in the report)")
    for option, (field, parse, metavar, what) in LIMIT_OPTIONS.items():
        group.add_argument(
            option,
            dest=f"limit_{field}",
            type=parse,
            default=None,
            metavar=metavar,
            help=f"{what} (default: {getattr(defaults, field)})",
        )


def limits_from(args: argparse.Namespace) -> Limits | None:
    """The ``Limits`` the limit options ask for (the others at their defaults), or
    ``None`` when none was given."""
    from evalspec.sandbox.limits import Limits

    given = {
        field: getattr(args, f"limit_{field}")
        for field, *_ in LIMIT_OPTIONS.values()
        if getattr(args, f"limit_{field}") is not None
    }
    return Limits(**given) if given else None
