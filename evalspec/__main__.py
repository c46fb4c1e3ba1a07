"""``python -m evalspec`` is the ``evalspec`` command."""

from evalspec.cli import run

run()
