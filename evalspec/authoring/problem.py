"""One finding of ``evalspec spec check``: which check found it, where, and what is wrong."""

from __future__ import annotations

from typing import Any

import attrs

CHECKS = ("config", "chain", "gate", "fixture", "lock", "implementation", "changelog")
"""The checks ``spec check`` runs, in the order it reports them."""


@attrs.frozen
class SpecProblem:
    """A defect in the spec's migrations, lock, implementations or changelog.

    ``check`` is one of :data:`CHECKS`; ``version`` is the migration it concerns
    (``None`` when it concerns no single one); ``message`` is one line that
    names the migration, the entry and the missing piece.
    """

    check: str = attrs.field(validator=attrs.validators.in_(CHECKS))
    message: str
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"
