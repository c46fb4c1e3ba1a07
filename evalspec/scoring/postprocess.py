"""Apply a registered post-process rule to a model's output."""

from __future__ import annotations

from evalspec.registry.build import Registry, default_registry


def post_process(rule: str, text: str, *, registry: Registry | None = None) -> str:
    """Run the post-process rule named ``rule`` on ``text``.

    :raises UnknownNameError: no rule of that name is in force.
    """
    reg = default_registry() if registry is None else registry
    return reg.post_processor(rule)(text)
