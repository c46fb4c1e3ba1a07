"""``evalspec import``: tasks built from benchmark rows as they are published.

:mod:`~evalspec.template` holds the small template language,
:mod:`~evalspec.importing.mapping` reads the mapping file,
:mod:`~evalspec.importing.rows` reads JSONL, CSV and Parquet rows, and
:mod:`~evalspec.importing.tasks` maps, validates and writes them. Nothing here is
imported by ``import evalspec``.
"""
