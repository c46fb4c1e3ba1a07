"""The project decides: its settings, its migrations directory and its lock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import example_plugin
import pytest

from evalspec.errors import ChecksumMismatchError, PendingVersionError, ProjectConfigError
from evalspec.registry.build import Registry, clear_default_registry, default_registry
from evalspec.registry.project import load_project
from evalspec.validation.validator import validate_file
from evalspec.versions.lock import lock_chain

TRANSLATION = example_plugin.FIXTURES / "translation.jsonl"


def write_project(root: Path, settings: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "suite"\n\n[tool.evalspec]\n{settings}', encoding="utf-8"
    )
    return root


@pytest.fixture
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project that uses the worked example plugin, as the current directory."""
    root = write_project(tmp_path / "suite", 'plugins = ["example_plugin"]\n')
    monkeypatch.chdir(root)
    clear_default_registry()
    yield root
    clear_default_registry()


def test_project_is_found_upward_with_defaults(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p")
    (root / "a" / "b").mkdir(parents=True)
    project = load_project(root / "a" / "b")
    assert project.root == root.resolve()
    assert project.lock == root.resolve() / "evalspec.lock"
    assert project.changelog == root.resolve() / "CHANGELOG.md"
    assert project.migrations is None and project.plugins == ()


def test_outside_any_project_there_is_no_root(tmp_path: Path) -> None:
    assert load_project(tmp_path).root is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("migration = 'x'\n", "unknown setting(s) migration (known: migrations, lock,"),
        ("plugins = 'x'\n", "plugins must be a list of module names"),
        ("lock = 3\n", "lock must be a string (a path)"),
        ("lock = \n", "is not valid TOML"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, settings: str, message: str) -> None:
    write_project(tmp_path, settings)
    with pytest.raises(ProjectConfigError) as info:
        load_project(tmp_path)
    assert message in str(info.value)


@pytest.mark.parametrize("key", ["lock", "changelog", "migrations"])
@pytest.mark.parametrize("value", ["../outside.lock", "/tmp/evalspec-outside", "a/../../x"])
def test_a_setting_leading_out_of_the_repository_is_refused(
    tmp_path: Path, key: str, value: str
) -> None:
    write_project(tmp_path / "p", f"{key} = {value!r}\n")
    with pytest.raises(ProjectConfigError, match=f"{key} = .* leads outside the repository"):
        load_project(tmp_path / "p")


def test_a_setting_a_symlink_leads_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    root = write_project(tmp_path / "p", 'lock = "spec/evalspec.lock"\n')
    (root / "spec").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ProjectConfigError, match=r"lock = 'spec/evalspec\.lock' leads outside"):
        load_project(root)


def test_a_setting_may_point_elsewhere_in_the_same_git_repository(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # a monorepo: the project is one directory of it
    root = write_project(tmp_path / "evals", 'lock = "../evalspec.lock"\n')
    (root / "inside").mkdir()
    lock = load_project(root).lock
    assert lock is not None and lock.resolve() == tmp_path.resolve() / "evalspec.lock"
    write_project(root, 'lock = "../../evalspec.lock"\n')
    with pytest.raises(ProjectConfigError, match="leads outside the repository"):
        load_project(root)


def test_missing_migrations_directory_is_named(tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path, 'migrations = "spec/migrations"\n'))
    with pytest.raises(ProjectConfigError, match="the migrations directory spec/migrations does"):
        project.load_plugins()


@pytest.mark.parametrize(
    ("name", "source", "message"),
    [
        ("0002_x.py", "x = 1\n", "spec/migrations/0002_x.py must define `migration = Migration"),
        ("0002_x.py", "def (:\n", "spec/migrations/0002_x.py: SyntaxError"),
        (
            "0003_x.py",
            "from evalspec.versions import AddMetric, Migration\n"
            "migration = Migration(2, 1, 'm', (AddMetric('m'),))\n",
            "spec/migrations/0003_x.py is numbered 3 in its file name but declares version 2",
        ),
    ],
)
def test_bad_migration_files_are_named(
    tmp_path: Path, name: str, source: str, message: str
) -> None:
    project = load_project(write_project(tmp_path, 'migrations = "spec/migrations"\n'))
    (tmp_path / "spec" / "migrations").mkdir(parents=True)
    (tmp_path / "spec" / "migrations" / name).write_text(source, encoding="utf-8")
    with pytest.raises(ProjectConfigError) as info:
        project.load_plugins()
    assert message in str(info.value)


def test_unimportable_project_plugin_is_named(tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path, 'plugins = ["no_such_module_xyz"]\n'))
    with pytest.raises(
        ProjectConfigError, match="cannot import project plugin 'no_such_module_xyz'"
    ):
        project.load_plugins()


def test_a_newly_installed_migration_is_pending_until_locked(in_project: Path) -> None:
    registry = default_registry()
    assert (registry.version, registry.head) == (2, 3)
    assert not validate_file(TRANSLATION).ok  # tasks validate as before the plugin arrived
    with pytest.raises(PendingVersionError) as info:
        default_registry(3)
    assert "spec version 3 is pending" in str(info.value)
    assert "evalspec's own lock (this project has no lock at evalspec.lock yet)" in str(info.value)


def test_locking_puts_the_version_in_force(in_project: Path, example_registry: Registry) -> None:
    (in_project / "evalspec.lock").write_text(
        lock_chain(example_registry.chain, "evalspec.lock").to_json(), encoding="utf-8"
    )
    assert default_registry().version == 3
    assert validate_file(TRANSLATION).ok
    assert not validate_file(TRANSLATION, spec_version=2).ok


def test_a_project_lock_can_hold_back_a_version(
    in_project: Path, example_registry: Registry
) -> None:
    lock = lock_chain(example_registry.chain, "evalspec.lock", upto=1)
    (in_project / "evalspec.lock").write_text(lock.to_json(), encoding="utf-8")
    assert default_registry().version == 1  # even evalspec's own version 2 is held back


def test_an_edited_released_migration_stops_validation(
    in_project: Path, example_registry: Registry
) -> None:
    text = lock_chain(example_registry.chain, "evalspec.lock").to_json()
    v3_sum = lock_chain(example_registry.chain, "x").entries[2].checksum
    (in_project / "evalspec.lock").write_text(text.replace(v3_sum, "sha256:0"), encoding="utf-8")
    with pytest.raises(ChecksumMismatchError) as info:
        default_registry()
    assert info.value.version == 3
    edited = "spec version 3 (plugin project-plugin:example_plugin) was edited after release"
    assert edited in str(info.value)
