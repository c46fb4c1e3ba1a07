"""spec new's scaffold: the next migration file and its fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.authoring.new import scaffold_migration
from evalspec.errors import ProjectConfigError
from evalspec.registry.build import Registry
from evalspec.registry.project import Project, load_project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.evalspec]\nmigrations = "spec/migrations"\n', encoding="utf-8"
    )
    return load_project(tmp_path)


def test_an_existing_fixture_is_copied_not_stubbed(
    project: Project, registry: Registry, tmp_path: Path
) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"task_id": "x"}\n', encoding="utf-8")
    made = scaffold_migration(
        project,
        registry.chain,
        category="translation",
        metrics=["f1"],
        post_processes=["none"],
        fixture=str(mine),
    )
    assert made.version == 3 and not made.fixture_written
    assert made.fixture_file.read_bytes() == mine.read_bytes()
    assert made.fixture_file == project.migrations / "fixtures" / "mine.jsonl"  # type: ignore[operator]
    loaded = project.load_migrations()
    assert [m.version for m in loaded] == [3]
    assert loaded[0].parent == 2
    assert loaded[0].origin == "spec/migrations/0003_translation.py"
    assert loaded[0].read_fixture("fixtures/mine.jsonl") == mine.read_bytes()
    assert not any("write the fixture tasks" in t for t in made.todo)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"category": "summary"}, "category 'summary' already exists in the version table"),
        ({"category": "two words"}, "category name 'two words' must be non-empty"),
        ({"fixture": "../outside.jsonl"}, "fixture '../outside.jsonl' does not exist"),
    ],
)
def test_bad_requests_are_refused(
    project: Project, registry: Registry, kwargs: dict[str, str], message: str
) -> None:
    args = {"category": "translation", **kwargs}
    with pytest.raises(ProjectConfigError) as info:
        scaffold_migration(
            project,
            registry.chain,
            category=args["category"],
            metrics=["f1"],
            post_processes=["none"],
            fixture=args.get("fixture"),
        )
    assert message in str(info.value)


def test_an_existing_migration_file_is_not_overwritten(
    project: Project, registry: Registry
) -> None:
    assert project.migrations is not None
    project.migrations.mkdir(parents=True)
    (project.migrations / "0003_translation.py").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ProjectConfigError, match=r"0003_translation\.py already exists"):
        scaffold_migration(
            project, registry.chain, category="translation", metrics=["f1"], post_processes=["none"]
        )
