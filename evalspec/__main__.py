"""``python -m evalspec`` is the ``evalspec`` command."""

from evalspec.cli.main import run

run()
