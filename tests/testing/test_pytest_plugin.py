"""The pytest plugin, run for real: pytest in a subprocess on a temporary project."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalspec import Registry, build_registry, validate_file
from evalspec.testing.conformance import conformance_cases
from evalspec.validation.fixtures import fixture_dir

BAD_PLUGIN = textwrap.dedent(
    """
    import importlib

    from evalspec.hookspecs import hookimpl
    from evalspec.model import Metric, PostProcessRule
    from evalspec.registry.build import build_registry
    from evalspec.versions import AddMetric, AddPostProcess, Migration


    def first_char(text):
        return text[0]  # not total: fails on ""


    def shuffle_chars(text):
        return "".join(set(text))  # depends on the hash seed


    def overconfident(prediction, targets):
        return 1.5 if prediction in targets else 0.0  # out of range


    @hookimpl
    def evalspec_register_migrations(register):
        builtin = importlib.import_module("evalspec_plugins").load()
        head = build_registry(builtin, entry_points=False).head
        register(
            Migration(
                head + 1,
                head,
                "a badly behaved plugin",
                (AddPostProcess("first_char"), AddPostProcess("shuffle_chars"),
                 AddMetric("overconfident")),
            )
        )


    @hookimpl
    def evalspec_register_post_processors(register):
        register(PostProcessRule("first_char", first_char))
        register(PostProcessRule("shuffle_chars", shuffle_chars))


    @hookimpl
    def evalspec_register_metrics(register):
        register(Metric("overconfident", "", overconfident))
    """
)


def _builtin_registry() -> Registry:
    return build_registry(importlib.import_module("evalspec_plugins").load(), entry_points=False)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a passing test, a good and a bad task file."""
    pytester.makepyfile(test_ok="def test_ok():\n    assert True\n")
    data = pytester.mkdir("data")
    src = fixture_dir()
    (data / "good.jsonl").write_bytes(src.joinpath("tasks.jsonl").read_bytes())
    (data / "bad.jsonl").write_bytes(src.joinpath("tasks_bad.jsonl").read_bytes())
    return pytester


def _install_bad_plugin(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install ``badplugin`` the way pip would: a module plus dist-info with an entry point."""
    pytester.makepyfile(badplugin=BAD_PLUGIN)
    info = pytester.mkdir("badplugin-0.1.dist-info")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badplugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[evalspec]\nbad = badplugin\n")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))


def _summary_start(lines: list[str]) -> int:
    marks = [i for i, line in enumerate(lines) if "short test summary info" in line]
    return marks[0] if marks else len(lines)


def test_plugin_is_inert_unless_asked(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--collect-only", "-q")
    collected = [line for line in result.outlines if "::" in line or "jsonl" in line]
    assert collected == ["test_ok.py::test_ok"]
    project.runpytest_subprocess().assert_outcomes(passed=1)


def test_task_files_on_the_command_line_fail_with_every_error(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--evalspec", "data/good.jsonl", "data/bad.jsonl")
    result.assert_outcomes(passed=2, failed=1)
    errors = validate_file(project.path / "data" / "bad.jsonl").errors
    # Only the failure report: under CI=true pytest repeats it untruncated in the summary.
    report = result.outlines[: _summary_start(result.outlines)]
    shown = [line for line in report if re.match(r"^data/bad\.jsonl:\d+: ", line)]
    assert [line.split(" — ")[0] for line in shown] == [
        f"data/bad.jsonl:{e.line}: {e.rule}" + (f" {e.field}" if e.field else "") for e in errors
    ]
    result.stdout.fnmatch_lines(["*FAILED data/bad.jsonl*"])


def test_ini_globs_collect_task_files_and_k_selects_among_them(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nevalspec_paths = data/*.jsonl\n")
    result = project.runpytest_subprocess("-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["data/bad.jsonl::evalspec FAILED*", "data/good.jsonl::evalspec PASSED*"]
    )
    project.runpytest_subprocess("-k", "good").assert_outcomes(passed=1)


def test_collect_only_lists_and_counts_the_task_files(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--collect-only", "-q", "--evalspec", "data/good.jsonl", "data/bad.jsonl", "data/good.jsonl"
    )
    listed = [line for line in result.outlines if "::" in line]
    assert listed == [
        "data/bad.jsonl::evalspec",
        "data/good.jsonl::evalspec",
        "test_ok.py::test_ok",
    ]
    result.stdout.fnmatch_lines(["3 tests collected*"])
    # A task file below a directory argument is collected once, not twice.
    again = project.runpytest_subprocess(
        "--collect-only", "-q", "--evalspec", "data/bad.jsonl", "."
    )
    assert [line for line in again.outlines if "::" in line] == [
        "data/bad.jsonl::evalspec",
        "test_ok.py::test_ok",
    ]
    deselected = project.runpytest_subprocess(
        "--evalspec", "data/bad.jsonl", "--deselect", "data/bad.jsonl::evalspec"
    )
    deselected.assert_outcomes(passed=1, deselected=1)


def test_conformance_without_hypothesis_is_a_usage_error_naming_the_extra(
    pytester: pytest.Pytester,
) -> None:
    # hypothesis made unimportable in the run (an import finder refuses it), its plugin off.
    pytester.makepyfile(test_ok="def test_ok():\n    assert True\n")
    pytester.path.joinpath("run_without_hypothesis.py").write_text(
        "import sys\n"
        "class NoHypothesis:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'hypothesis':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, NoHypothesis())\n"
        "import pytest\n"
        "sys.exit(pytest.main(['-p', 'no:hypothesispytest', '-p', 'no:cacheprovider', "
        "'--evalspec-conformance']))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "run_without_hypothesis.py"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert (
        "--evalspec-conformance needs hypothesis, which is not installed: "
        "pip install 'evalspec-contract[hypothesis]'" in done.stderr
    )


def test_an_unknown_spec_version_fails_the_file_with_one_line(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--evalspec=data/good.jsonl", "--evalspec-spec-version", "99"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*unknown spec version 99*"])
    assert "Traceback" not in result.stdout.str()


def test_conformance_passes_on_the_builtin_registry(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--evalspec-conformance", "--evalspec-conformance-examples=10"
    )
    result.assert_outcomes(passed=len(conformance_cases(_builtin_registry())))


def test_conformance_fails_an_installed_plugin_with_a_shrunk_counterexample(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_bad_plugin(pytester, monkeypatch)
    result = pytester.runpytest_subprocess(
        "--evalspec-conformance", "--evalspec-conformance-examples=10", "-p", "no:cacheprovider"
    )
    failed = sorted(
        re.sub(r"^FAILED evalspec-conformance\[(.*?)\].*$", r"\1", line)
        for line in result.outlines
        if line.startswith("FAILED ")
    )
    assert failed[:2] == ["metric:overconfident:range", "post_process:first_char:total"]
    assert re.fullmatch(r"registry:v\d+:fresh_interpreter", failed[2]) and len(failed) == 3
    out = result.stdout.str()
    assert "first_char raised IndexError: string index out of range on ''" in out
    assert "Falsifying example" in out or "Failing test case" in out  # hypothesis's shrunk input
    assert "overconfident must score a finite float in [0, 1]; gave 1.5" in out
    assert "shuffle_chars on " in out and "differs in a fresh interpreter" in out


def test_conformance_cases_run_from_a_plugin_authors_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(badplugin=BAD_PLUGIN)
    pytester.makepyfile(
        test_mine="""
        import pytest
        import badplugin
        import evalspec_plugins
        from evalspec import build_registry
        from evalspec.testing.conformance import conformance_cases

        REGISTRY = build_registry([*evalspec_plugins.load(), badplugin], entry_points=False)
        CASES = conformance_cases(REGISTRY, max_examples=10)

        @pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
        def test_conformance(case):
            case.run()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 3
    result.stdout.fnmatch_lines(["*test_conformance?post_process:first_char:total?*"])


def test_registry_fixtures_follow_the_marker_and_the_factory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(badplugin=BAD_PLUGIN)
    pytester.makepyfile(
        test_fixtures="""
        import pytest
        import badplugin

        def test_default(evalspec_registry):
            assert "extract_letter" in evalspec_registry.post_processors
            assert "first_char" not in evalspec_registry.post_processors

        @pytest.mark.evalspec_registry(plugins=[badplugin])
        def test_with_plugin(evalspec_registry):
            assert "first_char" in evalspec_registry.post_processors

        @pytest.mark.evalspec_registry(plugins=[badplugin], spec_version=1)
        def test_pinned_version(evalspec_registry):
            assert evalspec_registry.version == 1
            assert "first_char" not in evalspec_registry.post_processors

        def test_factory(evalspec_registry_factory):
            new = evalspec_registry_factory(plugins=[badplugin])
            old = evalspec_registry_factory(plugins=[badplugin], spec_version=1)
            assert new.version == old.version + new.head - 1
            assert "shuffle_chars" in new.post_processors
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_the_registry_fixture_is_the_projects_registry(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".toml",
        pyproject='[project]\nname = "suite"\n\n[tool.evalspec]\nplugins = ["example_plugin"]\n',
    )
    import example_plugin

    source = Path(example_plugin.__file__).parent
    target = pytester.mkdir("example_plugin")
    for path in source.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(path.read_bytes())
    pytester.makepyfile(
        test_fixture=(
            "import pytest\n\n"
            "def test_project(evalspec_registry):\n"
            "    assert evalspec_registry.version == 3  # pending v3 included\n"
            "    owner = evalspec_registry.owners[('metric', 'chrf')]\n"
            "    assert owner == 'project-plugin:example_plugin'\n\n"
            "@pytest.mark.evalspec_registry(spec_version=1)\n"
            "def test_marker(evalspec_registry):\n"
            "    assert evalspec_registry.version == 1\n"
            "    assert 'chrf' not in evalspec_registry.metrics\n"
        )
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_plugin_costs_an_unrelated_pytest_run_nothing(tmp_path: Path) -> None:
    # The entry point is loaded into every pytest session of every project that has
    # evalspec installed: it must import nothing of evalspec but itself (and the two
    # packages around it, which import nothing). pytest loads entry points through
    # importlib, which -X importtime does not log, so the unrelated project's own
    # test reports what is in sys.modules, after collection and during the run.
    seen = tmp_path / "seen.txt"
    (tmp_path / "test_unrelated.py").write_text(
        "import sys\n"
        "def test_one():\n"
        f"    names = sorted(m for m in sys.modules if m.split('.')[0] == 'evalspec')\n"
        f"    open({str(seen)!r}, 'w').write('\\n'.join(names))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    ours = set(seen.read_text().split())
    assert "evalspec.testing.pytest_plugin" in ours  # the entry point was loaded
    assert ours == {"evalspec", "evalspec.testing", "evalspec.testing.pytest_plugin"}
