"""Validation: the validator (:mod:`~evalspec.validation.validator`), its precise and
fast paths, embedded few-shot detection, the id table, the parallel block engine
(:mod:`~evalspec.validation.engine`) and its worker pool (:mod:`~evalspec.validation.pool`),
shards, the JSON Schema export and the fixture loader.

Nothing is imported here: each module is imported where it is used."""
