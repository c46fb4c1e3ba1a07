"""The ``evalspec`` command line: the entry point (:mod:`~evalspec.cli.main`), the
dispatcher, the parser, terminal and progress output, output formats, and
:mod:`~evalspec.cli.commands` holding the subcommands."""
