"""``evalspec spec new``: write the next migration file and its fixture stub.

The scaffold is deliberately incomplete where only the author can fill it
in: the fixture stub's task has an empty prompt and no targets, so
``evalspec spec check`` refuses the migration until real fixture tasks are
written.
"""

from __future__ import annotations

import json
import keyword
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import attrs

from evalspec.errors import ProjectConfigError
from evalspec.io.atomicfile import resolve_for_write, write_atomic
from evalspec.registry.project import Project
from evalspec.versions.changelog import entry_line
from evalspec.versions.migration import (
    PLACEHOLDER,
    AddCategory,
    AddMetric,
    AddPostProcess,
    Migration,
)


@attrs.frozen
class Scaffold:
    """What ``spec new`` wrote and what the author still has to do."""

    version: int
    migration_file: Path
    fixture_file: Path
    fixture_written: bool
    todo: tuple[str, ...]
    new_metrics: tuple[str, ...] = ()
    new_post_processes: tuple[str, ...] = ()


def _declared(chain: Sequence[Migration]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"metric": set(), "post_process": set(), "category": set()}
    for mig in chain:
        for op in mig.operations:
            if isinstance(op, AddMetric):
                out["metric"].add(op.name)
            elif isinstance(op, AddPostProcess):
                out["post_process"].add(op.name)
            elif isinstance(op, AddCategory):
                out["category"].add(op.name)
    return out


def _check_name(kind: str, name: str) -> None:
    if not name or any(c.isspace() for c in name) or not name.isprintable():
        raise ProjectConfigError(f"{kind} name {name!r} must be non-empty and without whitespace")


def _fixture_path(directory: Path, category: str, fixture: str | None) -> tuple[str, Path | None]:
    """The fixture's path relative to the migrations directory, and a file to copy there."""
    if fixture is None:
        return f"fixtures/{category}.jsonl", None
    given = Path(fixture)
    if given.is_file():
        resolved = given.resolve()
        try:
            return resolved.relative_to(directory.resolve()).as_posix(), None
        except ValueError:
            return f"fixtures/{given.name}", resolved
    rel = PurePosixPath(fixture)
    if rel.is_absolute() or ".." in rel.parts:
        msg = (
            f"fixture {fixture!r} does not exist; name a new one relative to the "
            "migrations directory"
        )
        raise ProjectConfigError(msg)
    return rel.as_posix(), None


def _lit(text: str) -> str:
    """A Python string literal (JSON's double-quoted form is valid Python)."""
    return json.dumps(text, ensure_ascii=False)


def _names(values: Sequence[str]) -> str:
    return "(" + "".join(f"{_lit(v)}, " for v in values).rstrip(" ") + ")"


def _source(mig_version: int, parent: int | None, message: str, ops: Sequence[str]) -> str:
    body = "".join(f"        {op},\n" for op in ops)
    used = sorted({op.split("(", 1)[0] for op in ops} | {"Migration"})
    return (
        f'"""Spec version {mig_version}: {message}."""\n\n'
        f"from evalspec.versions import {', '.join(used)}\n\n"
        "migration = Migration(\n"
        f"    version={mig_version},\n"
        f"    parent={parent!r},\n"
        f"    message={_lit(message)},\n"
        "    operations=(\n"
        f"{body}"
        "    ),\n"
        ")\n"
    )


def scaffold_migration(
    project: Project,
    chain: Sequence[Migration],
    *,
    category: str,
    metrics: Sequence[str],
    post_processes: Sequence[str],
    fixture: str | None = None,
    message: str | None = None,
) -> Scaffold:
    """Write ``NNNN_<category>.py`` and the fixture stub in the project's migrations directory.

    Metrics and rules the chain already declares are bound, not added again.

    :raises ProjectConfigError: no migrations directory is configured, a name
        is malformed or taken, or the migration file already exists.
    """
    directory = project.migrations
    if project.root is None or directory is None:
        msg = (
            "this project keeps no migrations: add `[tool.evalspec]` with "
            '`migrations = "spec/migrations"` to its pyproject.toml'
        )
        raise ProjectConfigError(msg)
    _check_name("category", category)
    for m in metrics:
        _check_name("metric", m)
    for r in post_processes:
        _check_name("post-process rule", r)
    declared = _declared(chain)
    if category in declared["category"]:
        raise ProjectConfigError(f"category {category!r} already exists in the version table")
    head = max((m.version for m in chain), default=0)
    version = head + 1
    target = directory / f"{version:04d}_{category}.py"
    if target.exists():
        raise ProjectConfigError(f"{project.relative(target)} already exists")
    rel, copy_from = _fixture_path(directory, category, fixture)
    new_metrics = [m for m in dict.fromkeys(metrics) if m not in declared["metric"]]
    new_rules = [r for r in dict.fromkeys(post_processes) if r not in declared["post_process"]]
    text = message or f"Add category {category}"
    ops = [
        f"AddMetric({_lit(m)}, {_lit(PLACEHOLDER + 'describe the metric')})" for m in new_metrics
    ]
    ops += [
        f"AddPostProcess({_lit(r)}, {_lit(PLACEHOLDER + 'describe the rule')})" for r in new_rules
    ]
    ops.append(
        f"AddCategory(\n            {_lit(category)},\n"
        f"            metrics={_names(list(dict.fromkeys(metrics)))},\n"
        f"            post_processes={_names(list(dict.fromkeys(post_processes)))},\n"
        f"            fixtures={_names([rel])},\n"
        f"            description={_lit(PLACEHOLDER + 'describe the category')},\n"
        "        )"
    )
    root = project.root
    fixture_file = directory / rel
    for path in (target, fixture_file):  # before any mkdir: no directory made outside
        resolve_for_write(path, root)
    directory.mkdir(parents=True, exist_ok=True)
    written = False
    if copy_from is not None:
        fixture_file.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(fixture_file):
            write_atomic(fixture_file, Path(copy_from).read_bytes(), root=root, create_only=True)
    elif not os.path.lexists(fixture_file):
        fixture_file.parent.mkdir(parents=True, exist_ok=True)
        stub = {
            "task_id": f"{category}_001",
            "category": category,
            "prompt": "",
            "targets": [],
            "metric_name": metrics[0],
            "post_process": post_processes[0],
        }
        stub_text = json.dumps(stub, ensure_ascii=False) + "\n"
        written = write_atomic(fixture_file, stub_text, root=root, create_only=True)
    source = _source(version, head or None, text, ops)
    if not write_atomic(target, source, root=root, create_only=True):
        raise ProjectConfigError(f"{project.relative(target)} already exists")
    todo = []
    if written:
        todo.append(
            f"write the fixture tasks of {category!r} in {project.relative(fixture_file)}: "
            "the stub task has an empty prompt and no targets, so it fails until you fill it in"
        )
    todo.append(
        f"replace the {PLACEHOLDER.strip()!r} descriptions in {project.relative(target)} "
        "(the gate refuses them)"
    )
    names = [f"category {category!r}"]
    names += [f"metric {m!r}" for m in new_metrics]
    names += [f"post-process rule {r!r}" for r in new_rules]
    todo.append(
        f"implement {', '.join(names)} in a plugin (hooks evalspec_register_categories, "
        "evalspec_register_metrics, evalspec_register_post_processors), listed in "
        "[tool.evalspec] plugins or installed through the `evalspec` entry-point group"
    )
    if project.changelog is not None:
        adds = f"category `{category}`"
        todo.append(f"add `{entry_line(version, adds)}` to {project.relative(project.changelog)}")
    todo.append(
        f"run `evalspec spec check`, then `evalspec spec lock` to release spec version {version}"
    )
    return Scaffold(
        version, target, fixture_file, written, tuple(todo), tuple(new_metrics), tuple(new_rules)
    )


# -- the project plugin module ---------------------------------------------------------------


def plugin_path(project: Project, module: str) -> Path:
    """Where the project plugin ``module`` lives: ``a/b.py`` for ``a.b``, under the root."""
    if project.root is None:
        raise ProjectConfigError("not in a project: no pyproject.toml here or above")
    parts = module.split(".")
    if not all(part.isidentifier() and not keyword.iskeyword(part) for part in parts):
        msg = f"[tool.evalspec] plugins: {module!r} is not a module name"
        raise ProjectConfigError(msg)
    return project.root.joinpath(*parts[:-1], parts[-1] + ".py")


def _identifier(name: str, taken: set[str]) -> str:
    ident = re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit() or keyword.iskeyword(ident) or ident.startswith("__"):
        ident = "_" + ident
    while ident in taken:
        ident += "_"
    taken.add(ident)
    return ident


def plugin_source(
    category: str, metrics: Sequence[str], post_processes: Sequence[str], migrations: str
) -> str:
    """A plugin module implementing ``category`` and the new names, with stubs to fill in."""
    taken = {"register", "hookimpl", "Category", "Metric", "PostProcessRule", "Sequence"}
    imports = ["Category"]
    lines: list[str] = []
    metric_fns = {m: _identifier(m, taken) for m in metrics}
    rule_fns = {r: _identifier(r, taken) for r in post_processes}
    for m, fn in metric_fns.items():
        lines += [
            "",
            "",
            f"def {fn}(prediction: str, targets: Sequence[str]) -> float:",
            f'    """{PLACEHOLDER}score the post-processed prediction against the targets, '
            'in [0, 1]."""',
            f"    raise NotImplementedError({_lit(f'metric {m!r} is not written yet')})",
        ]
    for r, fn in rule_fns.items():
        lines += [
            "",
            "",
            f"def {fn}(text: str) -> str:",
            f'    """{PLACEHOLDER}a deterministic, total str -> str function."""',
            f"    raise NotImplementedError({_lit(f'post-process rule {r!r} is not written yet')})",
        ]
    lines += [
        "",
        "",
        "@hookimpl",
        "def evalspec_register_categories(register: Callable[[Category], None]) -> None:",
        f"    register(Category({_lit(category)}, {_lit(PLACEHOLDER + 'describe the category')}))",
    ]
    if metric_fns:
        imports.append("Metric")
        lines += [
            "",
            "",
            "@hookimpl",
            "def evalspec_register_metrics(register: Callable[[Metric], None]) -> None:",
        ]
        lines += [
            f"    register(Metric({_lit(m)}, {_lit(PLACEHOLDER + 'describe the metric')}, {fn}))"
            for m, fn in metric_fns.items()
        ]
    if rule_fns:
        imports.append("PostProcessRule")
        lines += [
            "",
            "",
            "@hookimpl",
            "def evalspec_register_post_processors(",
            "    register: Callable[[PostProcessRule], None],",
            ") -> None:",
        ]
        lines += [
            f"    register(PostProcessRule({_lit(r)}, {fn}, "
            f"{_lit(PLACEHOLDER + 'describe the rule')}))"
            for r, fn in rule_fns.items()
        ]
    abc = "Callable, Sequence" if metric_fns else "Callable"
    head = [
        f'"""Implements what {migrations} adds (written by `evalspec spec new`).',
        "",
        f"Replace every {PLACEHOLDER.strip()!r}: the stubs raise until they are written. See",
        "docs/plugins.md for the constructors and what a rule or metric may declare.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"from collections.abc import {abc}",
        "",
        f"from evalspec import {', '.join(sorted(imports))}, hookimpl",
    ]
    return "\n".join(head + lines) + "\n"


def scaffold_plugin(project: Project, module: str, made: Scaffold, category: str) -> Path:
    """Write the project plugin ``module`` with hook stubs for what ``made`` adds.

    :raises ProjectConfigError: ``module`` is not a module name or its file exists.
    """
    path = plugin_path(project, module)
    if path.exists():
        raise ProjectConfigError(f"{project.relative(path)} already exists")
    directory = project.relative(project.migrations) if project.migrations else "the migration"
    text = plugin_source(category, made.new_metrics, made.new_post_processes, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
