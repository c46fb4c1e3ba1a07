"""``python -m evalspec`` is the ``evalspec`` command."""

from evalspec.interrupts import run

run()
