"""The hookspecs module is the one place a plugin author reads."""

from __future__ import annotations

import inspect

from evalspec import hookspecs


def specs() -> list[str]:
    return [n for n in dir(hookspecs) if n.startswith("evalspec_")]


def test_every_hook_is_documented_and_takes_register() -> None:
    assert specs() == [
        "evalspec_register_categories",
        "evalspec_register_metrics",
        "evalspec_register_migrations",
        "evalspec_register_post_processors",
    ]
    for name in specs():
        fn = getattr(hookspecs, name)
        assert fn.__doc__ and ":param register:" in fn.__doc__, name
        assert list(inspect.signature(fn).parameters) == ["register"], name


def test_every_hook_has_a_builtin_implementation(builtin_plugins: list[object]) -> None:
    implemented = {n for p in builtin_plugins for n in dir(p) if n.startswith("evalspec_")}
    assert implemented == set(specs())
