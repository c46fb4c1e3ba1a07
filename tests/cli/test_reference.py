"""docs/cli.md is what the parsers say (evalspec/cli/reference.py generates it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evalspec.cli.dispatch import COMMANDS
from evalspec.cli.reference import markdown

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"


def test_the_committed_cli_reference_is_not_stale() -> None:
    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        "docs/cli.md is stale: run `python -m evalspec.cli.reference > docs/cli.md`"
    )


def test_every_command_and_option_is_on_the_page() -> None:
    page = markdown()
    for command in COMMANDS:
        assert f"### `evalspec {command}`\n" in page
    for option in ("--allow-code-exec", "--baseline", "--statistics", "--spec-version"):
        assert f"`{option}" in page


def test_the_page_is_the_same_whatever_the_terminal_width() -> None:
    # argparse wraps --help at the terminal's width; the page must not depend on it.
    script = "from evalspec.cli.reference import markdown; print(markdown(), end='')"
    for columns in ("40", "200"):
        out = subprocess.run(
            [sys.executable, "-c", script],
            env={"COLUMNS": columns, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out == markdown()
