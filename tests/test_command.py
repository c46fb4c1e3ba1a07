"""The library commands (:mod:`evalspec.command`), called directly: the values they
return, never printed text. The command line's output over them is pinned by
tests/cli/; these pin what a library user gets."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evalspec import command
from evalspec.command import CommandUsageError, DatasetValidation, FileValidation

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding the fixture files, made the current directory."""
    for name in ("tasks.jsonl", "tasks_bad.jsonl", "predictions.jsonl"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- validate -------------------------------------------------------------------


def test_validate_returns_each_files_counts_and_errors(work: Path) -> None:
    result = command.validate(["tasks.jsonl", "tasks_bad.jsonl"])
    good, bad = result.entries
    assert isinstance(good, FileValidation) and isinstance(bad, FileValidation)
    assert (good.name, good.total, good.invalid, good.errors) == ("tasks.jsonl", 10, 0, ())
    assert bad.invalid > 0 and len(bad.errors) >= bad.invalid
    assert bad.first_error == bad.errors[0]
    assert all(e.line >= 1 and e.rule for e in bad.errors)
    assert result.input_problems == ()
    assert result.exit_code == 1


def test_validate_of_valid_files_exits_0(work: Path) -> None:
    assert command.validate(["tasks.jsonl"]).exit_code == 0


def test_validate_streams_errors_to_on_error_instead_of_holding_them(work: Path) -> None:
    seen: list[tuple[str, int]] = []
    entries: list[object] = []
    result = command.validate(
        ["tasks_bad.jsonl"],
        on_error=lambda name, e: seen.append((name, e.line)),
        on_entry=entries.append,
    )
    (bad,) = result.entries
    assert isinstance(bad, FileValidation)
    assert bad.errors == () and bad.first_error is not None
    assert len(seen) >= bad.invalid > 0
    assert [line for _, line in seen] == sorted(line for _, line in seen)
    assert entries == [bad]


def test_validate_reports_an_unreadable_file_and_goes_on(work: Path) -> None:
    result = command.validate(["missing.jsonl", "tasks.jsonl"])
    missing, good = result.entries
    assert isinstance(missing, FileValidation)
    assert (missing.failure, missing.reason) == ("cannot read", "No such file or directory")
    assert isinstance(good, FileValidation) and good.total == 10
    assert result.exit_code == 2


def test_validate_reports_path_problems_first(work: Path) -> None:
    (work / "empty").mkdir()
    told: list[str] = []
    result = command.validate(["empty", "-", "-"], on_input_problem=told.append)
    assert result.input_problems == (
        "empty: directory holds no *.jsonl file",
        "- (standard input) can be given only once",
    )
    assert told == list(result.input_problems)
    assert result.exit_code == 2


def test_validate_refuses_a_symlink_out_of_the_repository(work: Path) -> None:
    os.symlink(FIXTURES / "tasks.jsonl", work / "link.jsonl")
    (work / ".git").mkdir()  # the repository the link leaves
    result = command.validate(["link.jsonl"])
    assert result.entries == ()
    (problem,) = result.input_problems
    assert problem.startswith("refusing to read link.jsonl: it is a symlink to")


def test_validate_checks_a_glob_as_one_dataset(work: Path) -> None:
    result = command.validate(["task*.jsonl"])
    (dataset,) = result.entries
    assert isinstance(dataset, DatasetValidation)
    assert [s.name for s in dataset.shards] == ["tasks.jsonl", "tasks_bad.jsonl"]
    lines = sum(len((work / s.name).read_bytes().splitlines()) for s in dataset.shards)
    assert dataset.total == sum(s.total for s in dataset.shards) == lines
    assert dataset.invalid == sum(s.invalid for s in dataset.shards) > 0
    assert list(result.files) == list(dataset.shards)


def test_validate_refuses_ray_address_without_ray(work: Path) -> None:
    with pytest.raises(CommandUsageError, match="--ray-address needs --executor ray"):
        command.validate(["tasks.jsonl"], ray_address="127.0.0.1:1")


def test_results_are_read_only_values(work: Path) -> None:
    result = command.validate(["tasks.jsonl"])
    (good,) = result.entries
    with pytest.raises(AttributeError, match="read-only"):
        good.total = 0  # type: ignore[misc]
    assert result == command.validate(["tasks.jsonl"])
    assert "total=10" in repr(good)


# --- lint -----------------------------------------------------------------------


@pytest.fixture
def layout(work: Path) -> Path:
    """A scaffolded evals layout (``evalspec init``), the current directory."""
    from evalspec.evals.scaffold import scaffold

    scaffold(work)
    return work


def test_lint_of_a_fresh_layout_is_clean(layout: Path) -> None:
    result = command.lint(check_git=False)
    assert result.path_problems == ()
    assert result.report is not None
    (dataset,) = result.report.datasets
    assert (dataset.path, dataset.tasks, dataset.problems) == ("datasets/example.jsonl", 4, [])
    assert result.exit_code == 0


def test_lint_finds_an_invalid_task(layout: Path) -> None:
    with (layout / "datasets" / "example.jsonl").open("a") as f:
        f.write('{"task_id": "broken"}\n')
    result = command.lint(["datasets"], check_git=False)
    assert result.report is not None
    rules = {p.error.rule for p in result.report.problems()}
    assert "missing_field" in rules
    assert result.exit_code == 1


def test_lint_refuses_paths_it_cannot_lint(work: Path) -> None:
    result = command.lint(["-", "nope", "tasks.jsonl"])
    assert result.report is None
    assert result.path_problems[0].startswith("- (standard input): lint checks datasets")
    assert result.path_problems[1] == "nope: no such file or directory"
    assert result.path_problems[2].startswith("tasks.jsonl: not inside an evals layout")
    assert result.exit_code == 2


# --- score ----------------------------------------------------------------------


@pytest.fixture
def plain_tasks(work: Path) -> Path:
    """The fixture tasks without the code_exec ones (they need --allow-code-exec)."""
    lines = (work / "tasks.jsonl").read_text().splitlines(keepends=True)
    path = work / "plain.jsonl"
    path.write_text("".join(line for line in lines if "code_exec" not in line))
    return path


def test_score_returns_the_report_and_the_diagnostics(plain_tasks: Path) -> None:
    from evalspec.scoring.pipeline import ScoreOptions

    told: list[str] = []
    result = command.score(
        "plain.jsonl",
        "predictions.jsonl",
        options=ScoreOptions(bootstrap=10, dataset="plain"),
        on_message=told.append,
    )
    assert result.report is not None
    assert result.report["dataset"] == "plain"
    assert len(result.report["rows"]) == 8
    assert len(result.report["prediction_problems"]) == 2
    assert told == list(result.messages)
    # Two predictions lines have problems: reported, and the run exits 1.
    assert len(result.messages) == 2
    assert result.exit_code == 1


def test_score_refuses_invalid_tasks(work: Path) -> None:
    result = command.score("tasks_bad.jsonl", "predictions.jsonl")
    assert result.report is None
    assert result.messages[-1].startswith("evalspec: refusing to score: ")
    assert result.exit_code == 1


def test_score_says_when_the_files_look_swapped(work: Path) -> None:
    result = command.score("predictions.jsonl", "tasks.jsonl")
    assert (result.exit_code, result.report) == (2, None)
    assert result.messages == (
        "evalspec: error: predictions.jsonl holds predictions and tasks.jsonl holds tasks: "
        "the arguments look swapped",
        "evalspec: hint: tasks come first: evalspec score tasks.jsonl predictions.jsonl",
    )


def test_score_reports_each_unreadable_input(work: Path) -> None:
    result = command.score("nope.jsonl", "gone.jsonl")
    assert (result.exit_code, result.report) == (2, None)
    assert result.messages == (
        "evalspec: error: cannot read nope.jsonl: No such file or directory",
        "evalspec: error: cannot read gone.jsonl: No such file or directory",
    )


def test_score_refuses_standard_input_twice(work: Path) -> None:
    with pytest.raises(CommandUsageError, match="cannot both be -"):
        command.score("-", "-")


# --- gate -----------------------------------------------------------------------


def _report(layout: Path, predictions: str, name: str) -> Path:
    from evalspec.scoring.pipeline import ScoreOptions
    from evalspec.scoring.report import format_report

    outcome = command.score(
        "datasets/example.jsonl",
        predictions,
        options=ScoreOptions(bootstrap=20, dataset="example"),
    )
    assert outcome.report is not None
    path = layout / name
    path.write_text(format_report(outcome.report, "json"))
    return path


@pytest.fixture
def scored(layout: Path) -> tuple[Path, Path]:
    """A good and a worse score report of the scaffolded dataset."""
    import json

    tasks = [json.loads(line) for line in (layout / "datasets" / "example.jsonl").open()]
    right = "".join(
        json.dumps({"task_id": t["task_id"], "output": t["targets"][0]}) + "\n" for t in tasks
    )
    wrong = "".join(json.dumps({"task_id": t["task_id"], "output": "zzz"}) + "\n" for t in tasks)
    (layout / "right.jsonl").write_text(right)
    (layout / "wrong.jsonl").write_text(wrong)
    return _report(layout, "right.jsonl", "good.json"), _report(layout, "wrong.jsonl", "bad.json")


def test_gate_passes_a_good_report(scored: tuple[Path, Path]) -> None:
    good, _ = scored
    result = command.gate([str(good)])
    assert result.errors == ()
    assert result.failed == 0 and result.skipped == 1  # max_drop without a baseline
    assert {v.passed for v in result.verdicts} == {True, None}
    assert result.exit_code == 0
    assert "example" in result.to_markdown()


def test_gate_fails_a_drop_below_the_baseline(scored: tuple[Path, Path]) -> None:
    good, bad = scored
    result = command.gate([str(bad)], baselines=[str(good)])
    assert result.failed >= 1
    assert any(v.passed is False and v.check == "max_drop" for v in result.verdicts)
    assert result.exit_code == 1


def test_gate_reports_an_unreadable_report(layout: Path) -> None:
    result = command.gate(["nope.json"])
    assert result.errors == ("evalspec: error: cannot read nope.json: No such file or directory",)
    assert result.verdicts == ()
    assert result.exit_code == 2


def test_gate_reports_every_problem_of_a_bad_config(scored: tuple[Path, Path]) -> None:
    good, _ = scored
    config = good.parent / "gates.yaml"
    config.write_text("gates:\n  example:\n    no_such_metric: {min: 2}\n")
    result = command.gate([str(good)], config=str(config))
    assert result.exit_code == 2
    assert result.errors[-1].endswith("in the gates config gates.yaml; no gate was checked")
    assert all(line.startswith("gates.yaml:") for line in result.errors[:-1])


# --- diff -----------------------------------------------------------------------


def test_diff_counts_added_removed_and_changed(plain_tasks: Path) -> None:
    lines = plain_tasks.read_text().splitlines(keepends=True)
    changed = lines[0].replace("Compute", "Kompute")
    (plain_tasks.parent / "new.jsonl").write_text("".join([changed, *lines[1:6]]))
    result = command.diff(["plain.jsonl", "new.jsonl"])
    assert result.error is None and result.diff is not None
    assert (len(result.diff.removed), len(result.diff.changed)) == (2, 1)
    assert result.title == "new.jsonl"
    assert result.exit_code == 0
    assert command.diff(["plain.jsonl", "new.jsonl"], fail_on_removal=True).exit_code == 1


def test_diff_refuses_a_missing_side(work: Path) -> None:
    result = command.diff(["tasks.jsonl", "nope.jsonl"])
    assert (result.exit_code, result.diff, result.error) == (2, None, "nope.jsonl: no such file")
    one = command.diff(["tasks.jsonl"])
    assert one.error == "give OLD and NEW files, or --rev A..B PATH"


# --- manifest -------------------------------------------------------------------


def _git(root: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_manifest_add_verify_fetch_round_trip(layout: Path) -> None:
    _git(layout)
    store = layout / "store"
    store.mkdir()
    (store / "big.jsonl").write_bytes(b"x" * 100)
    (layout / "data").mkdir()
    shutil.copy(store / "big.jsonl", layout / "data" / "big.jsonl")

    added = command.manifest_add("data/big.jsonl", (store / "big.jsonl").as_uri())
    assert added.error is None and added.added is not None
    assert (added.added.entry.path, added.added.entry.size) == ("data/big.jsonl", 100)
    assert added.manifest_path == Path("datasets/manifest.json")
    assert added.exit_code == 0

    intact = command.manifest_verify()
    assert (intact.ok, intact.problems, intact.exit_code) == (1, (), 0)

    (layout / "data" / "big.jsonl").unlink()
    gone = command.manifest_verify()
    assert [p.code for p in gone.problems] == ["missing"] and gone.exit_code == 1

    fetched = command.manifest_fetch()
    assert fetched.fetched is not None
    assert [e.path for e in fetched.fetched.fetched] == ["data/big.jsonl"]
    assert (layout / "data" / "big.jsonl").read_bytes() == b"x" * 100
    assert fetched.exit_code == 0


def test_manifest_fetch_refuses_paths_it_does_not_list(layout: Path) -> None:
    _git(layout)
    (layout / "data").mkdir()
    (layout / "data" / "big.jsonl").write_bytes(b"y")
    command.manifest_add("data/big.jsonl", (layout / "data" / "big.jsonl").as_uri())
    result = command.manifest_fetch(["nope.jsonl", "data/big.jsonl"])
    assert (result.fetched, result.unknown, result.exit_code) == (None, ("nope.jsonl",), 2)


def test_manifest_verify_without_a_manifest_is_an_error(layout: Path) -> None:
    from evalspec.manifest import ManifestError

    with pytest.raises(ManifestError, match="cannot read manifest"):
        command.manifest_verify()


# --- render ---------------------------------------------------------------------


def test_render_returns_each_prompt_as_a_model_receives_it(work: Path) -> None:
    import evalspec

    result = command.render(["tasks.jsonl"])
    (rendered,) = result.files
    assert len(rendered.prompts) == rendered.total == 10
    task_id, prompt = rendered.prompts[0]
    (task,) = evalspec.validate_file(work / "tasks.jsonl").validated[:1]
    assert (task_id, prompt) == (task.task_id, evalspec.render(task))
    assert (result.refused, result.exit_code) == (False, 0)


def test_render_refuses_invalid_tasks_unless_allowed(work: Path) -> None:
    refused = command.render(["tasks_bad.jsonl", "tasks.jsonl"])
    assert refused.refused and refused.invalid > 0 and refused.exit_code == 1
    allowed = command.render(["tasks_bad.jsonl"], allow_bad_tasks=True)
    assert not allowed.refused and allowed.exit_code == 0
    (bad,) = allowed.files
    assert len(bad.prompts) == bad.total - bad.invalid and bad.errors


def test_render_stops_at_an_unreadable_file(work: Path) -> None:
    result = command.render(["tasks.jsonl", "nope.jsonl", "tasks_bad.jsonl"])
    assert [f.name for f in result.files] == ["tasks.jsonl"]
    assert result.failure == "cannot read nope.jsonl: No such file or directory"
    assert result.exit_code == 2


# --- schema ---------------------------------------------------------------------


def test_schema_describes_a_task_line() -> None:
    found = command.schema(spec_version=1)
    assert found["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"task_id", "category", "prompt", "targets"} <= set(found["required"])


def test_schema_of_an_unknown_spec_version_is_an_error() -> None:
    from evalspec.errors import EvalspecError

    with pytest.raises(EvalspecError):
        command.schema(spec_version=999)


# --- spec -----------------------------------------------------------------------


def _spec_project(root: Path, settings: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "suite"\n\n[tool.evalspec]\n{settings}', encoding="utf-8"
    )
    (root / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n### Added\n- Spec version 3: category `essay`.\n",
        encoding="utf-8",
    )
    return root


def test_spec_list_and_check_of_the_repository_itself() -> None:
    from evalspec.registry.project import load_project

    project = load_project(ROOT)
    listed = command.spec_list(project)
    assert listed.exit_code == 0 and listed.errors == ()
    assert listed.doc is not None
    assert [row["version"] for row in listed.doc["versions"]] == [1, 2]
    assert all(row["status"] == "released" for row in listed.doc["versions"])
    checked = command.spec_check(project)
    assert checked.exit_code == 0
    assert checked.lines[-1] == "spec check: ok (spec versions 1..2 released, 0 pending)"


def test_spec_show_gives_the_vocabulary_of_a_version_and_refuses_an_unknown_one() -> None:
    from evalspec.registry.project import load_project

    project = load_project(ROOT)
    v1 = command.spec_show(1, project)
    assert v1.exit_code == 0 and v1.doc is not None
    assert v1.doc["version"] == 1 and v1.doc["fields"] == {}
    v2 = command.spec_show(2, project)
    assert v2.doc is not None and set(v2.doc["fields"]) > set(v1.doc["fields"])
    unknown = command.spec_show(99, project)
    assert unknown.exit_code == 2 and unknown.doc is None
    assert unknown.errors and "99" in unknown.errors[0]


def test_spec_new_then_lock_releases_the_scaffolded_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalspec.registry.project import load_project

    root = _spec_project(tmp_path / "suite", 'migrations = "spec_migrations"\n')
    monkeypatch.chdir(root)
    made = command.spec_new(
        category="essay", metrics=["rouge_l"], post_processes=["strip"], message="essays"
    )
    assert made.exit_code == 0, made.errors
    assert made.doc is not None and made.doc["version"] == 3
    assert (root / made.doc["migration"]).is_file()
    assert (root / made.doc["fixture"]).is_file()
    assert made.doc["todo"], "the scaffold says what is left to do"
    # The fixture stub is not yet a fixture: the release is refused, nothing locked.
    refused = command.spec_lock(project=load_project(root))
    assert refused.exit_code == 1
    assert refused.doc is not None and refused.doc["locked"] == []
    assert not (root / "evalspec.lock").exists()


def test_spec_lock_outside_a_project_is_a_usage_error(tmp_path: Path) -> None:
    from evalspec.registry.project import Project

    result = command.spec_lock(project=Project(root=None))
    assert result.exit_code == 2 and result.doc is None
    assert result.errors == ("no pyproject.toml here or above: not in a project",)


def test_spec_of_a_malformed_project_is_a_usage_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _spec_project(tmp_path / "broken", "plugins = 3\n")
    monkeypatch.chdir(root)
    result = command.spec_check()
    assert result.exit_code == 2 and result.errors
    assert "plugins" in result.errors[0]
