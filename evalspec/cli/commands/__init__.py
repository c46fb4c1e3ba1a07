"""Subcommands of the ``evalspec`` CLI, one module each (``add_parser`` + ``run``)."""
