"""The tree reads as the architecture: layers, and imports that point down only.

Every module of ``evalspec`` belongs to one layer below; an import (at module level,
inside a function, or under ``TYPE_CHECKING``: all of them count) may name a module
of its own layer or of a lower one, never a higher one, and the modules import one
another without a cycle. The graph is read from the source with :mod:`ast`, so the
test sees exactly what a reader of the code sees.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evalspec"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("errors", ("evalspec.errors", "evalspec._version")),
    ("ground floor", ("evalspec.io",)),
    ("values", ("evalspec.fields", "evalspec.rules", "evalspec.model", "evalspec.template")),
    ("version table", ("evalspec.versions",)),
    ("hook specifications", ("evalspec.hookspecs",)),
    ("registry", ("evalspec.registry",)),
    ("sandbox", ("evalspec.sandbox",)),
    ("cluster", ("evalspec.cluster",)),
    ("validation", ("evalspec.validation",)),
    ("scoring", ("evalspec.scoring",)),
    ("benchmark import", ("evalspec.importing",)),
    ("spec authoring", ("evalspec.authoring",)),
    ("manifest", ("evalspec.manifest",)),
    ("evals as code", ("evalspec.evals",)),
    ("library commands", ("evalspec.command",)),
    ("harness adapters", ("evalspec.integrations",)),
    ("testing", ("evalspec.testing",)),
    ("command line", ("evalspec.cli",)),
    ("package", ("evalspec", "evalspec.__main__")),
)
"""Lowest first. A module is in the layer of the longest prefix that names it."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{module} is in no layer of tests/test_architecture.py"
    return rank


def imports_of(module: str) -> Iterator[tuple[int, str]]:
    """(line, imported evalspec module) for every import statement in ``module``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "evalspec":
                    yield node.lineno, resolve(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "evalspec":
                continue
            for alias in node.names:
                # `from evalspec.registry import discovery` imports a module.
                name = f"{target}.{alias.name}"
                yield node.lineno, name if name in MODULES else resolve(target)


def resolve(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


GRAPH = {m: sorted({t for _, t in imports_of(m)} - {m}) for m in MODULES}


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_imports_point_down_only() -> None:
    upward = [
        f"{MODULES[m].relative_to(ROOT)}:{line}: {m} ({LAYERS[layer_of(m)][0]}) imports "
        f"{t} ({LAYERS[layer_of(t)][0]})"
        for m in MODULES
        for line, t in imports_of(m)
        if layer_of(t) > layer_of(m)
    ]
    assert upward == []


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle() -> None:
    # The package's own __init__ re-exports lazily by name (strings), not by import.
    assert find_cycle(GRAPH) is None, " -> ".join(find_cycle(GRAPH) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b"], "b": [], "c": ["a"]}) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from evalspec.registry import discovery", "evalspec.registry.discovery"),
        ("from evalspec.model import TaskSpec", "evalspec.model"),
        ("import evalspec.cli.main", "evalspec.cli.main"),
    ],
)
def test_imports_are_resolved_to_modules(source: str, expected: str, tmp_path: Path) -> None:
    MODULES["evalspec._probe"] = tmp_path / "probe.py"
    try:
        (tmp_path / "probe.py").write_text(f"def f():\n    {source}\n")
        assert [t for _, t in imports_of("evalspec._probe")] == [expected]
    finally:
        del MODULES["evalspec._probe"]


def test_the_wheel_lists_every_package() -> None:
    # A package missing from [tool.setuptools] packages would be missing from the wheel.
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    listed = {p for p in settings["packages"] if p.split(".")[0] == "evalspec"}
    on_disk = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    assert listed == on_disk


def test_the_wheel_ships_every_fixture_file() -> None:
    # The fixtures (and the benchmark slices `evalspec import` reads) are package data:
    # each directory must be a listed package whose patterns match each of its files.
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    data = settings["package-data"]
    unshipped = []
    for path in sorted((ROOT / "fixtures").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        folder = path.parent.relative_to(ROOT / "fixtures").parts
        package = ".".join(("evalspec_fixtures", *folder))
        patterns = data.get(package, [])
        shipped_as = ["*.py", *patterns]  # a listed package ships its modules too
        if package not in settings["packages"] or not any(
            fnmatch.fnmatch(path.name, p) for p in shipped_as
        ):
            unshipped.append(str(path.relative_to(ROOT)))
    assert unshipped == []
