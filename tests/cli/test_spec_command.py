"""``evalspec spec ...`` end to end, in real project directories (subprocesses)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import example_plugin
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = "# Changelog\n\n## [Unreleased]\n\n### Added\n"


def evalspec(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )


def make_project(root: Path, settings: str, changelog: str | None = CHANGELOG) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "suite"\n\n[tool.evalspec]\n{settings}', encoding="utf-8"
    )
    if changelog is not None:
        (root / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    return root


@pytest.fixture
def example_project(tmp_path: Path) -> Path:
    """A project with a copy of the worked example plugin and a changelog entry for v3."""
    root = make_project(
        tmp_path / "suite",
        'plugins = ["example_plugin"]\n',
        CHANGELOG + "- Spec version 3: category `translation`.\n",
    )
    shutil.copytree(Path(example_plugin.__file__).parent, root / "example_plugin")
    return root


def test_spec_check_passes_on_the_repository_itself() -> None:
    done = evalspec(ROOT, "spec", "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "spec check: ok (spec versions 1..2 released, 0 pending)" in done.stdout


def test_pending_version_is_reported_and_refused_until_locked(example_project: Path) -> None:
    fixture = "example_plugin/fixtures/translation.jsonl"
    done = evalspec(example_project, "spec", "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: spec version 3 (plugin project-plugin:example_plugin) is pending" in done.stdout
    refused = evalspec(example_project, "validate", "--spec-version", "3", fixture)
    assert refused.returncode == 2
    assert "spec version 3 is pending" in refused.stderr
    assert evalspec(example_project, "validate", fixture).returncode == 1  # still v2

    locked = evalspec(example_project, "spec", "lock")
    assert locked.returncode == 0, locked.stdout + locked.stderr
    assert "released spec version(s) 1, 2, 3 in evalspec.lock" in locked.stdout
    lock = json.loads((example_project / "evalspec.lock").read_text(encoding="utf-8"))
    assert [e["version"] for e in lock["released"]] == [1, 2, 3]
    assert evalspec(example_project, "validate", fixture).returncode == 0
    assert evalspec(example_project, "validate", "--spec-version", "3", fixture).returncode == 0
    again = evalspec(example_project, "spec", "lock")
    assert "nothing to lock: spec version 3 is already released" in again.stdout


def test_editing_a_locked_migration_fails_check(example_project: Path) -> None:
    assert evalspec(example_project, "spec", "lock").returncode == 0
    fixture = example_project / "example_plugin" / "fixtures" / "translation.jsonl"
    fixture.write_text(fixture.read_text(encoding="utf-8").replace("dort", "dormait"))
    done = evalspec(example_project, "spec", "check")
    assert done.returncode == 1
    line = next(x for x in done.stdout.splitlines() if x.startswith("lock:"))
    assert "spec version 3 (plugin project-plugin:example_plugin) was edited after release" in line
    assert line.count("sha256:") == 2
    assert "make the change in a new migration (evalspec spec new)" in line
    refused = evalspec(example_project, "validate", str(fixture))
    assert refused.returncode == 2 and "was edited after release" in refused.stderr
    assert evalspec(example_project, "spec", "lock").returncode == 1


def test_repair_re_records_a_deliberate_edit(example_project: Path) -> None:
    assert evalspec(example_project, "spec", "lock").returncode == 0
    before = (example_project / "evalspec.lock").read_text(encoding="utf-8")
    fixture = example_project / "example_plugin" / "fixtures" / "translation.jsonl"
    fixture.write_text(fixture.read_text(encoding="utf-8").replace("dort", "dormait"))
    wrong = evalspec(example_project, "spec", "lock", "--repair", "4")
    assert wrong.returncode == 2
    assert "cannot repair from version 4: evalspec.lock releases 1..3" in wrong.stderr
    done = evalspec(example_project, "spec", "lock", "--repair", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("re-recorded spec version 3 in evalspec.lock: sha256:")
    after = (example_project / "evalspec.lock").read_text(encoding="utf-8")
    assert after != before
    assert evalspec(example_project, "spec", "check").returncode == 0


def test_missing_changelog_entry_fails_check(example_project: Path) -> None:
    (example_project / "CHANGELOG.md").write_text(CHANGELOG, encoding="utf-8")
    done = evalspec(example_project, "spec", "check", "--format", "json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["problems"] == [
        {
            "check": "changelog",
            "message": "migration 3 (from plugin project-plugin:example_plugin) has no entry in "
            "CHANGELOG.md: add a line starting `- Spec version 3:` saying what it adds",
            "version": 3,
        }
    ]


def test_unknown_version_is_a_usage_error(example_project: Path) -> None:
    done = evalspec(example_project, "validate", "--spec-version", "9", "x.jsonl")
    assert done.returncode == 2
    assert "unknown spec version 9: the version table holds 1..3" in done.stderr
    shown = evalspec(example_project, "spec", "show", "9")
    assert shown.returncode == 2 and "unknown spec version 9" in shown.stderr


def test_list_and_show(example_project: Path) -> None:
    listed = evalspec(example_project, "spec", "list", "--format", "json")
    doc = json.loads(listed.stdout)
    assert [(v["version"], v["status"]) for v in doc["versions"]] == [
        (1, "released"),
        (2, "released"),
        (3, "pending"),
    ]
    assert doc["versions"][2]["adds"]["categories"] == ["translation"]
    text = evalspec(example_project, "spec", "list").stdout
    assert "pending" in text and "categories translation; metrics chrf" in text
    shown = json.loads(evalspec(example_project, "spec", "show", "3", "--format", "json").stdout)
    assert shown["status"] == "pending"
    assert shown["categories"]["translation"]["metrics"] == ["chrf", "exact_match"]
    assert shown["post_processes"]["collapse_whitespace"] == 3
    default = evalspec(example_project, "spec", "show").stdout
    assert default.startswith("spec version 2 (released)") and "translation" not in default


IMPL = """
from evalspec.hookspecs import hookimpl
from evalspec.model import Category, Metric, PostProcessRule


@hookimpl
def evalspec_register_categories(register):
    register(Category("translation"))


@hookimpl
def evalspec_register_metrics(register):
    register(Metric("chrf"))


@hookimpl
def evalspec_register_post_processors(register):
    register(PostProcessRule("collapse_whitespace", lambda s: " ".join(s.split())))
"""


def test_spec_new_scaffolds_a_migration_the_gate_refuses_until_filled_in(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "suite", 'migrations = "spec/migrations"\nplugins = ["suite_plugin"]\n'
    )
    (root / "suite_plugin.py").write_text(IMPL, encoding="utf-8")
    done = evalspec(
        root, "spec", "new", "--category", "translation", "--metric", "chrf",
        "--metric", "exact_match", "--post-process", "collapse_whitespace",
        "--post-process", "strip_whitespace",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote spec/migrations/0003_translation.py (spec version 3, pending)" in done.stdout
    assert "write the fixture tasks of 'translation' in spec/migrations/fixtures/" in done.stdout
    assert "add `- Spec version 3: category `translation`` to CHANGELOG.md" in done.stdout
    source = (root / "spec" / "migrations" / "0003_translation.py").read_text(encoding="utf-8")
    assert 'AddMetric("chrf"' in source and 'AddMetric("exact_match"' not in source

    check = evalspec(root, "spec", "check")
    assert check.returncode == 1
    assert (
        "fixture: migration 3 (from spec/migrations/0003_translation.py): fixture "
        "'fixtures/translation.jsonl' line 1 does not validate under spec version 3: "
        "empty_prompt prompt" in check.stdout
    )
    assert "changelog: migration 3" in check.stdout
    assert evalspec(root, "spec", "lock").returncode == 1

    shutil.copyfile(
        example_plugin.FIXTURES / "translation.jsonl",
        root / "spec" / "migrations" / "fixtures" / "translation.jsonl",
    )
    with (root / "CHANGELOG.md").open("a", encoding="utf-8") as f:
        f.write("- Spec version 3: category `translation`.\n")
    check = evalspec(root, "spec", "check")
    assert check.returncode == 1
    assert (
        "gate: migration 3 (from spec/migrations/0003_translation.py): metric 'chrf' still has "
        "the placeholder description 'TODO: describe the metric' from `evalspec spec new`"
    ) in check.stdout
    migration = root / "spec" / "migrations" / "0003_translation.py"
    migration.write_text(source.replace("TODO: describe", "Describes"), encoding="utf-8")
    check = evalspec(root, "spec", "check")
    assert check.returncode == 0, check.stdout
    assert evalspec(root, "spec", "lock").returncode == 0
    assert "released" in evalspec(root, "spec", "list").stdout.splitlines()[2]
    again = evalspec(root, "spec", "new", "--category", "translation", "--metric", "chrf",
                     "--post-process", "collapse_whitespace")  # fmt: skip
    assert again.returncode == 2
    assert "category 'translation' already exists" in again.stderr


def test_spec_new_needs_a_migrations_directory(tmp_path: Path) -> None:
    root = make_project(tmp_path / "suite", "")
    done = evalspec(root, "spec", "new", "--category", "x", "--metric", "f1",
                    "--post-process", "none")  # fmt: skip
    assert done.returncode == 2
    assert 'migrations = "spec/migrations"' in done.stderr


def test_undeclared_implementation_fails_check(tmp_path: Path) -> None:
    root = make_project(tmp_path / "suite", 'plugins = ["suite_plugin"]\n')
    (root / "suite_plugin.py").write_text(IMPL, encoding="utf-8")
    done = evalspec(root, "spec", "check")
    assert done.returncode == 1
    assert (
        "implementation: metric 'chrf' is implemented by plugin 'project-plugin:suite_plugin' but "
        "no spec version declares it" in done.stdout
    )


def test_bad_settings_are_a_usage_error(tmp_path: Path) -> None:
    root = make_project(tmp_path / "suite", "colour = 'red'\n")
    done = evalspec(root, "spec", "check")
    assert done.returncode == 2
    assert "unknown setting(s) colour" in done.stderr


# -- authoring that flows ---------------------------------------------------------------------

ARITH = (
    '{"task_id": "t1", "category": "arithmetic", "prompt": "1 + 1 =", "targets": ["2"], '
    '"metric_name": "exact_match", "post_process": "none"}\n'
)


def _fresh(tmp_path: Path) -> Path:
    root = make_project(
        tmp_path / "walk", 'migrations = "spec/migrations"\nplugins = ["suite_plugin"]\n'
    )
    (root / "tasks.jsonl").write_text(ARITH, encoding="utf-8")
    return root


def test_spec_new_scaffolds_the_plugin_module_that_does_not_exist_yet(tmp_path: Path) -> None:
    root = _fresh(tmp_path)
    done = evalspec(
        root, "spec", "new", "--category", "poetry", "--metric", "rhyme",
        "--metric", "exact_match", "--post-process", "last-line", "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["plugins_written"] == ["suite_plugin.py"]
    source = (root / "suite_plugin.py").read_text(encoding="utf-8")
    for hook in ("categories", "metrics", "post_processors"):
        assert f"def evalspec_register_{hook}(" in source
    assert 'Metric("rhyme"' in source and 'PostProcessRule("last-line", last_line' in source
    assert "exact_match" not in source  # already implemented by the built-ins
    # The stubs import and register: check names only what the author must still write.
    check = evalspec(root, "spec", "check")
    assert check.returncode == 1
    assert "implementation:" not in check.stdout
    assert "placeholder description" in check.stdout
    # Validating released versions is not disturbed by the pending, unfinished version 3.
    assert evalspec(root, "validate", "tasks.jsonl").returncode == 0


@pytest.mark.parametrize("broken", ["duplicate", "dangling", "syntax", "unimplemented"])
def test_a_broken_pending_migration_never_blocks_released_versions(
    tmp_path: Path, broken: str
) -> None:
    root = _fresh(tmp_path)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "suite"\n\n[tool.evalspec]\nmigrations = "spec/migrations"\n',
        encoding="utf-8",
    )
    migrations = root / "spec" / "migrations"
    migrations.mkdir(parents=True)
    source = (
        "from evalspec.versions import AddCategory, Migration\n"
        "migration = Migration(3, {parent}, 'poetry', (AddCategory('poetry', ('exact_match',), "
        "('none',), ('p.jsonl',)),))\n"
    )
    parent = "7" if broken == "dangling" else "2"
    (migrations / "0003_poetry.py").write_text(source.format(parent=parent), encoding="utf-8")
    if broken == "duplicate":
        (migrations / "0003_again.py").write_text(source.format(parent=2), encoding="utf-8")
    if broken == "syntax":
        (migrations / "0004_bad.py").write_text("migration = (\n", encoding="utf-8")
    for args in (("validate", "tasks.jsonl"), ("validate", "--spec-version", "1", "tasks.jsonl")):
        done = evalspec(root, *args)
        assert done.returncode == 0, (broken, done.stdout, done.stderr)
    listed = evalspec(root, "spec", "list")
    assert listed.returncode != 0
    named = listed.stdout + listed.stderr
    assert "0003_poetry.py" in named or "0004_bad.py" in named
    if broken != "syntax":
        assert "in force: spec version 2" in listed.stdout
    check = evalspec(root, "spec", "check")
    assert check.returncode != 0
    problems = [line for line in check.stdout.splitlines() if not line.startswith("note:")]
    assert len(problems) == len(set(problems))  # each problem once


def test_spec_list_and_show_show_a_binding(tmp_path: Path) -> None:
    root = make_project(tmp_path / "bind", 'migrations = "spec/migrations"\n')
    migrations = root / "spec" / "migrations"
    (migrations / "fixtures").mkdir(parents=True)
    (migrations / "fixtures" / "s.jsonl").write_text(
        '{"task_id": "s1", "category": "summary", "prompt": "Summarise: a b.", '
        '"targets": ["a"], "metric_name": "exact_match", "post_process": "none"}\n',
        encoding="utf-8",
    )
    (migrations / "0003_summary_exact.py").write_text(
        "from evalspec.versions import BindMetric, Migration\n"
        "migration = Migration(3, 2, 'summary may use exact_match', (BindMetric('summary', "
        "'exact_match', ('fixtures/s.jsonl',), 'exact answers for one-word summaries'),))\n",
        encoding="utf-8",
    )
    (root / "CHANGELOG.md").write_text(
        CHANGELOG + "- Spec version 3: summary may use exact_match\n", encoding="utf-8"
    )
    check = evalspec(root, "spec", "check")
    assert check.returncode == 0, check.stdout
    listed = evalspec(root, "spec", "list")
    assert "binds metric exact_match to summary" in listed.stdout
    shown = evalspec(root, "spec", "show", "3", "--format", "json")
    bound = json.loads(shown.stdout)["categories"]["summary"]["bound"]
    assert bound == [{"kind": "metric", "name": "exact_match", "version": 3}]


def test_concurrent_spec_new_runs_take_one_version_each(tmp_path: Path) -> None:
    # Each run read the chain's head, then wrote head + 1: four runs at once wrote
    # four migrations numbered 3, and the chain was broken (duplicate version 3).
    root = make_project(tmp_path / "suite", 'migrations = "spec/migrations"\n')
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    new = [sys.executable, "-m", "evalspec", "spec", "new", "--metric", "exact_match"]
    runs = [
        subprocess.Popen(
            [*new, "--post-process", "none", "--category", f"cat{i}"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    made = sorted(p.name.split("_")[0] for p in (root / "spec" / "migrations").glob("*.py"))
    assert made == ["0003", "0004", "0005", "0006"]
    check = evalspec(root, "spec", "check")
    assert "duplicate version" not in check.stdout
