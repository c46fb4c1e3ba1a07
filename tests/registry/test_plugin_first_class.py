"""A third-party plugin is a first-class citizen (issue 12).

Knowledge declared on the entries, stable plugin names, hooks called through
pluggy, the Python API, and the house: no import cycle, no built-in name in
the core.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

import attrs
import example_plugin
import pytest
from hypothesis import find

from evalspec import (
    Category,
    Metric,
    PostProcessRule,
    TaskSpec,
    build_report,
    hookimpl,
    score_tasks,
)
from evalspec.errors import PluginError
from evalspec.registry.build import Registry, build_registry, project_registry
from evalspec.registry.manager import make_plugin_manager
from evalspec.registry.project import load_project
from evalspec.testing.conformance import ConformanceFailure, conformance_cases, rule_cases
from evalspec.testing.strategies import model_outputs
from evalspec.versions import AddCategory, AddMetric, AddPostProcess, Migration
from evalspec.versions.lock import chain_checksums, packaged_lock

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "evalspec"

# -- the core names no built-in -----------------------------------------------------------

# (file relative to the repository, literal): why the literal is not a built-in's name.
ALLOWED: dict[tuple[str, str], str] = {
    ("evalspec/scoring/report.py", "code_exec"): "the report schema's sandbox provenance key",
    ("evalspec/evals/diff.py", "none"): "the English word in a message",
    ("evalspec/evals/gates.py", "none"): "the English word in a message",
    ("evalspec/sandbox/tiers.py", "none"): "the English word in a message",
    ("evalspec/template.py", "none"): "a template filter's argument kind",
    ("evalspec/scoring/report.py", "none"): "the text report's word for a row without a score",
    ("evalspec/template.py", "lower"): (
        "the import template language's own filter, applied to a row's text when "
        "tasks are built, not the post-process rule applied to model outputs"
    ),
}


def _builtin_names() -> set[str]:
    reg = build_registry(entry_points=False)
    return {*reg.categories, *reg.metrics, *reg.post_processors}


def test_the_core_names_no_builtin_category_metric_or_rule() -> None:
    names = _builtin_names()
    found = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in names
                and (rel, node.value) not in ALLOWED
            ):
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == [], "declare it on the entry in plugins/*.py instead:\n" + "\n".join(found)


def test_the_meta_test_catches_a_table_keyed_by_a_builtin_name(tmp_path: Path) -> None:
    names = _builtin_names()
    source = 'CHECKS = {"extract_letter": print}\n'
    hits = [
        n.value
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Constant) and n.value in names
    ]
    assert hits == ["extract_letter"]


# -- a third-party rule and metric, defined here -------------------------------------------


def after_arrow(text: str) -> str:
    """The text after the first ``=>``, stripped; ``""`` when there is none."""
    _, sep, tail = text.partition("=>")
    return tail.strip() if sep else ""


def arrows() -> Any:
    from hypothesis import strategies as st

    return st.tuples(st.text(max_size=10), st.text(max_size=10)).map(lambda p: f"{p[0]}=>{p[1]}")


def overlap(prediction: str, targets: Sequence[str]) -> float:
    return max(float(bool(set(prediction.split()) & set(t.split()))) for t in targets)


V3 = Migration(
    3,
    2,
    "arrow answers",
    (
        AddMetric("overlap", "a shared word"),
        AddPostProcess("after_arrow", "the text after =>"),
        AddCategory("arrow_qa", ("overlap", "exact_match"), ("after_arrow",), ("x.jsonl",)),
    ),
)


class ArrowPlugin:
    """One plugin contributing both halves: the migration and the implementations."""

    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        register(V3)

    @hookimpl
    def evalspec_register_categories(self, register: Callable[[Category], None]) -> None:
        register(Category("arrow_qa"))

    @hookimpl
    def evalspec_register_metrics(self, register: Callable[[Metric], None]) -> None:
        register(
            Metric(
                "overlap",
                "a shared word",
                overlap,
                best_target_wins=True,
                reference_packages=("pluggy",),
                target_check=lambda targets: not any(t.split() for t in targets),
                caveat="blank targets share no word with anything",
            )
        )

    @hookimpl
    def evalspec_register_post_processors(
        self, register: Callable[[PostProcessRule], None]
    ) -> None:
        register(
            PostProcessRule(
                "after_arrow",
                after_arrow,
                "text after =>",
                unparsed=lambda raw: "=>" not in raw,
                idempotent=False,
                contract=lambda out: out == out.strip(),
                contract_description="no surrounding whitespace",
                shaped_outputs=arrows,
            )
        )


@pytest.fixture(scope="module")
def arrow_registry() -> Registry:
    return build_registry([ArrowPlugin()], entry_points=False)


def test_a_plugin_rule_gets_contract_fuzzing_from_its_declaration(
    arrow_registry: Registry,
) -> None:
    ids = {c.id for c in conformance_cases(arrow_registry, max_examples=5)}
    assert "post_process:after_arrow:contract" in ids
    assert "post_process:after_arrow:idempotent" not in ids
    for case in conformance_cases(arrow_registry, max_examples=30):
        if case.kind != "registry":
            case.run()
    broken = attrs.evolve(arrow_registry.post_processor("after_arrow"), function=lambda s: s)
    [contract] = [c for c in rule_cases(broken, max_examples=200) if c.prop == "contract"]
    with pytest.raises(ConformanceFailure, match="no surrounding whitespace"):
        contract.run()


def test_a_plugin_rule_gets_its_shaped_outputs(arrow_registry: Registry) -> None:
    strategy = model_outputs("after_arrow", arrow_registry)
    assert "=>" in find(strategy, lambda s: "=>" in s and len(s) > 3)
    mixed = model_outputs(None, arrow_registry)
    assert "=>" in find(mixed, lambda s: "=>" in s)


def test_a_plugin_metric_is_reported_with_its_declared_knowledge(
    arrow_registry: Registry,
) -> None:
    tasks = [
        TaskSpec("a1", "arrow_qa", "q", ["red fox"], "overlap", "after_arrow"),
        TaskSpec("a2", "arrow_qa", "q", [" "], "overlap", "after_arrow"),
    ]
    scores = score_tasks(tasks, {"a1": "=> a fox", "a2": "no arrow"}, registry=arrow_registry)
    report = build_report(tasks, scores, registry=arrow_registry, bootstrap=0)
    assert report["unparsed"] == {"arrow_qa": {"after_arrow": 1}}
    assert "pluggy" in report["provenance"]["reference_packages"]
    assert any(
        n.startswith("overlap: 1 task (a2)") and "blank targets" in n for n in report["notes"]
    )


def test_builtin_reference_packages_come_from_the_metric_entries(registry: Registry) -> None:
    declared = {p for m in registry.metrics.values() for p in m.reference_packages}
    assert declared == {"rouge-score", "sacrebleu"}


# -- hooks go through pluggy -------------------------------------------------------------


class WrapperPlugin:
    """A plugin whose only metric hook is a new-style wrapper that registers."""

    @hookimpl(wrapper=True)
    def evalspec_register_metrics(
        self, register: Callable[[Metric], None]
    ) -> Generator[None, Any, Any]:
        register(Metric("overlap", "a shared word", overlap))
        return (yield)


class OldWrapperPlugin:
    @hookimpl(hookwrapper=True)
    def evalspec_register_post_processors(
        self, register: Callable[[PostProcessRule], None]
    ) -> Generator[None, Any, None]:
        yield
        register(PostProcessRule("after_arrow", after_arrow))


class HalfArrow(ArrowPlugin):
    """ArrowPlugin without its metric and rule hooks (the wrappers above provide them)."""

    evalspec_register_metrics = None  # type: ignore[assignment]
    evalspec_register_post_processors = None  # type: ignore[assignment]


def test_wrapper_hookimpls_register_and_tracing_sees_every_call() -> None:
    pm = make_plugin_manager([HalfArrow(), WrapperPlugin(), OldWrapperPlugin()], entry_points=False)
    calls: list[tuple[str, list[str]]] = []
    pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: calls.append((name, [i.plugin_name for i in impls])),
        lambda outcome, name, impls, kwargs: None,
    )
    reg = build_registry(plugin_manager=pm)
    assert reg.owners[("metric", "overlap")].endswith("WrapperPlugin")
    assert reg.owners[("post_process", "after_arrow")].endswith("OldWrapperPlugin")
    # One traced call per plugin and hook, each naming only that plugin.
    metric_calls = [impls for name, impls in calls if name == "evalspec_register_metrics"]
    assert ["builtin-metrics"] in metric_calls
    assert [reg.owners[("metric", "overlap")]] in metric_calls


def test_plugin_names_are_the_same_in_every_process() -> None:
    pm = make_plugin_manager([ArrowPlugin(), ArrowPlugin()], entry_points=False)
    names = [name for name, _ in pm.list_name_plugin()]
    assert f"{__name__}.ArrowPlugin" in names
    assert f"{__name__}.ArrowPlugin#2" in names
    assert not any(name.isdigit() for name in names)


def test_a_bad_hook_option_combination_is_a_plugin_error() -> None:
    class Both:
        @hookimpl(wrapper=True, hookwrapper=True)
        def evalspec_register_metrics(self, register: Callable[[Metric], None]) -> Any:
            return (yield)

    with pytest.raises(PluginError):
        build_registry([Both()], entry_points=False)


# -- the Python API ---------------------------------------------------------------------


def collapse_whitespace(text: str) -> str:
    return " ".join(text.split())


def test_build_registry_includes_the_builtins_unless_told_otherwise() -> None:
    reg = build_registry([example_plugin], entry_points=False, spec_version=1)
    assert reg.version == 1 and "mcq" in reg.categories
    assert build_registry([example_plugin], entry_points=False).version == 3
    with pytest.raises(Exception, match="version table is empty"):
        build_registry([], entry_points=False, builtins=False)


def test_project_registry_takes_a_directory(tmp_path: Path) -> None:
    root = _project(tmp_path, 'plugins = ["example_plugin"]\n')
    assert project_registry(root).version == 2  # no lock: version 3 is pending
    assert project_registry(root, pending=True).version == 3
    reg = project_registry(str(root), pending=True)
    assert reg.owners[("metric", "chrf")] == "project-plugin:example_plugin"


# -- stable names in messages and reports ------------------------------------------------


def _project(tmp_path: Path, settings: str) -> Path:
    root = tmp_path / "suite"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "suite"\n\n[tool.evalspec]\n{settings}', encoding="utf-8"
    )
    shutil.copytree(Path(example_plugin.__file__).parent, root / "example_plugin")
    return root


def test_the_migrations_directory_is_named_by_its_path(tmp_path: Path) -> None:
    root = _project(tmp_path, 'migrations = "spec/migrations"\n')
    (root / "spec" / "migrations").mkdir(parents=True)
    reg = project_registry(root)
    assert "project:spec/migrations" in reg.plugins


SCORE = [sys.executable, "-m", "evalspec", "score", "tasks.jsonl", "predictions.jsonl"]


SCORE = [sys.executable, "-m", "evalspec", "score", "tasks.jsonl", "predictions.jsonl"]


def test_two_processes_write_byte_identical_reports_with_project_migrations(
    tmp_path: Path,
) -> None:
    from evalspec.validation.fixtures import fixture_dir

    root = _project(tmp_path, 'migrations = "spec/migrations"\n')
    (root / "spec" / "migrations").mkdir(parents=True)
    directory = fixture_dir()
    for name in ("tasks.jsonl", "predictions.jsonl"):
        kept = [
            line
            for line in directory.joinpath(name).read_bytes().splitlines(keepends=True)
            if b'"code_' not in line
        ]
        (root / name).write_bytes(b"".join(kept))
    outputs = []
    for seed in ("1", "2"):
        done = subprocess.run(
            [*SCORE, "--format", "json", "--bootstrap", "50"],
            cwd=root,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    plugins = json.loads(outputs[0])["provenance"]["plugins"]
    assert "project:spec/migrations" in plugins
    assert not any(name.isdigit() for name in plugins)


# -- checksums and where a migration lives ----------------------------------------------


def test_v1_checksum_is_unchanged() -> None:
    reg = build_registry(entry_points=False)
    assert chain_checksums(reg.chain[:1])[1] == packaged_lock().entries[0].checksum


def test_a_migration_moved_from_a_project_into_a_package_keeps_its_checksum(
    tmp_path: Path,
) -> None:
    # In the project: spec/migrations/0002_translation.py, fixtures beside it.
    root = _project(tmp_path, 'migrations = "spec/migrations"\n')
    migrations = root / "spec" / "migrations"
    (migrations / "fixtures").mkdir(parents=True)
    shutil.copy(example_plugin.FIXTURES / "translation.jsonl", migrations / "fixtures")
    (migrations / "0003_translation.py").write_text(
        "from evalspec.versions import AddCategory, AddMetric, AddPostProcess, Migration\n"
        "migration = Migration(3, 2, 'Add category translation', (\n"
        "    AddMetric('chrf'), AddPostProcess('collapse_whitespace'),\n"
        "    AddCategory('translation', ('chrf',), ('collapse_whitespace',),\n"
        "                ('fixtures/translation.jsonl',)),\n"
        "))\n",
        encoding="utf-8",
    )
    [in_project] = load_project(root).load_migrations()
    # In a package: the same Migration, fixture_dir the package directory that
    # holds fixtures/ (the documented move: keep the relative fixture paths).
    package = tmp_path / "pkg"
    shutil.copytree(migrations / "fixtures", package / "fixtures")
    in_package = attrs.evolve(in_project, fixture_dir=package, origin="plugin pkg")
    v1 = build_registry(entry_points=False).chain[0]
    assert chain_checksums([v1, in_project]) == chain_checksums([v1, in_package])


# -- the house ----------------------------------------------------------------------------


def _modules() -> dict[str, Path]:
    out = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            # The package itself re-exports lazily; every module may name it.
            deps.update(t for t in targets if t in modules and t not in (name, "evalspec"))
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_among_the_modules_even_through_deferred_imports() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


@pytest.mark.slow
def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    failed = []
    # __main__ runs the command line when imported: it is a script, not a module.
    for name in sorted(set(_modules()) - {"evalspec.__main__"}):
        done = subprocess.run(
            [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, check=False
        )
        last = done.stderr.strip().splitlines()[-1] if done.returncode != 0 else ""
        # A module of an optional extra that is not installed must say which to install.
        if done.returncode != 0 and "pip install 'evalspec-contract[" not in last:
            failed.append(f"{name}: {last}")
    assert failed == []


@pytest.mark.slow
def test_a_plain_editable_install_imports_the_builtins_and_fixtures(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    code = (
        "import evalspec_plugins, evalspec_fixtures\n"
        "from evalspec import build_registry, load_fixtures\n"
        "print(build_registry().version, len(load_fixtures().tasks) > 0)\n"
    )
    out = subprocess.run(
        [str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    # The newest spec version the built-in plugins release (evalspec/versions/evalspec.lock).
    assert out.stdout.split() == ["2", "True"]


def test_every_missing_extra_error_is_the_one_missing_dependency_error() -> None:
    from evalspec.errors import MissingDependencyError
    from evalspec.evals.yamlfile import INSTALL_HINT, MissingYamlError
    from evalspec.manifest.errors import ManifestError, MissingExtraError

    yaml = MissingYamlError()
    assert isinstance(yaml, MissingDependencyError)
    assert (str(yaml), yaml.extra) == (INSTALL_HINT, "evals")
    manifest = MissingExtraError("fetching s3:// URIs needs s3fs", "s3fs")
    assert isinstance(manifest, MissingDependencyError) and isinstance(manifest, ManifestError)
    assert (str(manifest), manifest.package, manifest.extra) == (
        "fetching s3:// URIs needs s3fs",
        "s3fs",
        "manifest",
    )
    plain = MissingDependencyError("metric 'rouge_l'", "rouge-score", "score")
    assert "pip install 'evalspec-contract[score]'" in str(plain)


def test_a_dangling_parent_is_one_problem() -> None:
    from evalspec.errors import ChainError
    from evalspec.versions import order_chain

    v1 = build_registry(entry_points=False).chain[0]
    dangling = Migration(2, 7, "dangling", (AddMetric("x"),), origin="here")
    with pytest.raises(ChainError) as info:
        order_chain([v1, dangling])
    assert list(info.value.problems) == [
        "version 2 (from here) names parent 7, which does not exist"
    ]
