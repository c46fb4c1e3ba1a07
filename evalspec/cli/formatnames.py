"""The names of the CI-native output formats of :mod:`evalspec.cli.formats`.

A module of its own so a command can offer ``--format github|sarif|junit``
without importing the formatters (and attrs, pathlib, urllib) on every run;
:mod:`evalspec.cli.formats` re-exports :data:`FORMATS`.
"""

FORMATS = ("github", "sarif", "junit")
"""The names accepted by :func:`evalspec.cli.formats.render_reports`."""
