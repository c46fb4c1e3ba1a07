"""The bundled fixtures: ten valid tasks and one line per validation rule."""

from __future__ import annotations

import io
from importlib import resources
from importlib.abc import Traversable

import attrs

from evalspec.model import TaskSpec

FIXTURE_PACKAGE = "evalspec_fixtures"


@attrs.frozen
class Fixtures:
    """The bundled fixture files: ``tasks`` (all valid) and the lines of ``tasks_bad``."""

    tasks: tuple[TaskSpec, ...]
    bad_lines: tuple[bytes, ...]
    directory: Traversable = attrs.field(repr=False)

    def path(self, name: str) -> Traversable:
        """The bundled file ``name`` (``tasks.jsonl``, ``tasks_bad.jsonl``, ...)."""
        return self.directory.joinpath(name)


def fixture_dir() -> Traversable:
    """Where the bundled fixtures are installed."""
    return resources.files(FIXTURE_PACKAGE)


def load_fixtures() -> Fixtures:
    """Load the bundled fixtures (works from an installed wheel)."""
    from evalspec.validation.validator import validate_file

    directory = fixture_dir()
    good = directory.joinpath("tasks.jsonl").read_bytes()
    bad = directory.joinpath("tasks_bad.jsonl").read_bytes()
    validated, errors = validate_file(io.BytesIO(good))
    if errors:  # the fixture is part of the spec; it failing is a packaging bug
        msg = f"bundled fixture tasks.jsonl does not validate: {errors[0].message}"
        raise RuntimeError(msg)
    return Fixtures(tuple(validated), tuple(io.BytesIO(bad)), directory)
