"""The public surface: what ``import evalspec`` offers, and what it costs."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import evalspec


def test_all_names_resolve() -> None:
    for name in evalspec.__all__:
        assert getattr(evalspec, name) is not None, name


def test_core_api_is_exported() -> None:
    for name in (
        "TaskSpec",
        "validate_task",
        "validate_file",
        "iter_validate",
        "render",
        "post_process",
        "load_fixtures",
        "build_registry",
        "hookimpl",
        "hookspec",
    ):
        assert name in evalspec.__all__  # fmt: skip


def test_import_loads_no_plugins_and_no_heavy_modules() -> None:
    code = (
        "import sys, evalspec\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('pluggy', 'attrs', 'attr', 'evalspec_plugins', 'importlib_metadata', 'json')"
        " or m.startswith('evalspec.')]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        evalspec.nope  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_all_matches_the_lazy_export_table() -> None:
    assert sorted(evalspec.__all__) == sorted(evalspec._EXPORTS)


def test_render_is_the_function_even_after_the_render_command_is_imported() -> None:
    code = (
        "import evalspec.cli.commands.render, evalspec.scoring.render\n"
        "from evalspec import render\n"
        "print(callable(render) and render({'prompt': 'p'}) == 'p')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


PUBLIC_PACKAGES = (
    "evalspec.authoring",
    "evalspec.command",
    "evalspec.sandbox",
    "evalspec.testing",
    "evalspec.versions",
)
"""The documented public sub-packages, beside ``evalspec`` itself."""


def test_the_readme_names_exactly_the_public_sub_packages() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    sentence = re.search(r"The public API is `evalspec`.*?may change", readme, re.DOTALL)
    assert sentence is not None
    named = tuple(sorted(set(re.findall(r"`(evalspec\.[a-z_.]+)`", sentence.group()))))
    assert named == PUBLIC_PACKAGES


def test_every_public_sub_package_imports_and_its_names_resolve() -> None:
    for name in PUBLIC_PACKAGES:
        module = importlib.import_module(name)
        for exported in getattr(module, "__all__", ()):
            assert getattr(module, exported) is not None, (name, exported)


def test_the_library_commands_import_light() -> None:
    # The warm `evalspec validate` imports evalspec.command: it must not bring the
    # value classes (attrs) or the registry with it.
    code = (
        "import sys, evalspec.command\n"
        "print(','.join(m for m in ('attr', 'attrs', 'pluggy', 'evalspec.registry.build')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
