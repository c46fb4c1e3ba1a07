"""The project: its ``[tool.evalspec]`` settings, its own migrations and its lock.

A project is the directory of the nearest ``pyproject.toml`` at or above the
path it governs: the paths a command is given, else the current directory
(:mod:`evalspec.io.governing`; pytest and ruff find their configuration the same
way). It decides which spec versions are in force::

    [tool.evalspec]
    migrations = "spec/migrations"   # one Python file per version (Alembic-style)
    lock = "evalspec.lock"           # the versions this project released (default)
    plugins = ["spec_plugin"]        # modules importable from the project root
    changelog = "CHANGELOG.md"       # default

Each file ``spec/migrations/NNNN_name.py`` defines ``migration =
Migration(...)``; its fixture paths are relative to the migrations directory.
The ``plugins`` modules implement what the project's migrations add (hooks
of :mod:`evalspec.hookspecs`), exactly like an installed plugin.

The versions in force are those in the project's lock. A project without a
lock uses the lock shipped in evalspec (spec version 1). A migration that
arrives with a newly installed plugin, or a new file in the migrations
directory, is *pending* until ``evalspec spec lock`` releases it, so
installing or upgrading a package never silently changes which tasks
validate.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import PendingVersionError, ProjectConfigError, SpecVersionError
from evalspec.hookspecs import hookimpl
from evalspec.io.governing import governing_directory, nearest, start_of
from evalspec.io.repository import inside, repository_of
from evalspec.io.safeload import (
    MAX_TEXT_BYTES,
    DocumentError,
    json_depth_problem,
    read_text_bounded,
)
from evalspec.versions.lock import Lock, packaged_lock, read_lock, verify
from evalspec.versions.migration import Migration

PYPROJECT = "pyproject.toml"
DEFAULT_LOCK = "evalspec.lock"
DEFAULT_CHANGELOG = "CHANGELOG.md"
SETTINGS = ("migrations", "lock", "plugins", "changelog")
MIGRATIONS_PREFIX = "project:"
"""The plugin name of a project's migrations directory: ``project:spec/migrations``."""
PLUGIN_PREFIX = "project-plugin:"
"""The plugin name of a project's ``plugins`` module: ``project-plugin:suite_plugin``."""


@attrs.frozen
class Project:
    """A project directory and its ``[tool.evalspec]`` settings (paths are absolute).

    ``root`` is ``None`` outside any project: no project migrations, plugins
    or lock, so evalspec's own lock decides what is in force.
    """

    root: Path | None
    migrations: Path | None = None
    lock: Path | None = None
    plugins: tuple[str, ...] = ()
    changelog: Path | None = None
    own_entry_points: tuple[str, ...] = ()
    """Entry-point names of the ``evalspec`` group this project itself distributes."""

    @property
    def has_lock(self) -> bool:
        return self.lock is not None and self.lock.is_file()

    def effective_lock(self) -> Lock:
        """The project's lock when it has one, else the lock shipped with evalspec."""
        if self.lock is not None and self.lock.is_file():
            return read_lock(self.lock, self.relative(self.lock))
        return packaged_lock()

    def relative(self, path: Path) -> str:
        """``path`` relative to the project root, for messages."""
        if self.root is not None:
            try:
                return path.relative_to(self.root).as_posix()
            except ValueError:
                pass
        return str(path)

    def load_plugins(self, *, skip_broken_after: int | None = None) -> list[object]:
        """The plugin objects this project adds: its ``plugins`` modules and its migrations.

        :param skip_broken_after: leave out, instead of raising, a migration
            file that cannot be loaded when its file name numbers it above
            this version (a pending migration must not block released ones).
        :raises ProjectConfigError: a module cannot be imported, or a
            migration file is unusable.
        """
        from evalspec.registry.manager import NamedPlugin  # off the warm path (snapshot)

        out: list[object] = []
        self._add_to_path()
        for name in self.plugins:
            try:
                module = importlib.import_module(name)
            except Exception as exc:
                msg = f"cannot import project plugin {name!r}: {type(exc).__name__}: {exc}"
                raise ProjectConfigError(msg) from exc
            out.append(NamedPlugin(f"{PLUGIN_PREFIX}{name}", module))
        if self.migrations is not None:
            migrations = self.load_migrations(skip_broken_after=skip_broken_after)
            out.append(ProjectMigrations(migrations, self.relative(self.migrations)))
        return out

    def _add_to_path(self) -> None:
        if self.plugins and self.root is not None and str(self.root) not in sys.path:
            # Project plugins live in the project, not in site-packages.
            sys.path.insert(0, str(self.root))

    def missing_plugins(self) -> tuple[str, ...]:
        """The ``plugins`` modules that cannot be found (not written yet)."""
        self._add_to_path()
        missing = []
        for name in self.plugins:
            try:
                found = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                found = None
            if found is None:
                missing.append(name)
        return tuple(missing)

    def load_migrations(self, *, skip_broken_after: int | None = None) -> tuple[Migration, ...]:
        """Every migration file of the migrations directory, in file-name order.

        ``skip_broken_after`` as for :meth:`load_plugins`.
        """
        directory = self.migrations
        if directory is None:
            return ()
        if not directory.is_dir():
            msg = f"the migrations directory {self.relative(directory)} does not exist"
            raise ProjectConfigError(msg)
        out = []
        for path in sorted(directory.glob("*.py")):
            if path.name.startswith(("_", ".")):
                continue
            try:
                out.append(_load_migration_file(path, directory, self.relative(path)))
            except ProjectConfigError:
                number = _file_number(path)
                if skip_broken_after is None or number is None or number <= skip_broken_after:
                    raise
        return tuple(out)


def _file_number(path: Path) -> int | None:
    """The version a migration file's name gives it (``0003_x.py`` -> 3), if any."""
    digits = path.stem.split("_", 1)[0]
    return int(digits) if digits.isdigit() else None


class ProjectMigrations:
    """A plugin contributing a project's migration files, named ``project:<directory>``.

    The name is the directory relative to the project root, so messages and
    the score report's provenance read the same in every process.
    """

    def __init__(self, migrations: tuple[Migration, ...], label: str) -> None:
        self.migrations = migrations
        self.label = label
        self.__name__ = f"{MIGRATIONS_PREFIX}{label}"

    def __repr__(self) -> str:
        return f"ProjectMigrations({self.label!r})"

    @hookimpl
    def evalspec_register_migrations(self, register: Callable[[Migration], None]) -> None:
        for mig in self.migrations:
            register(mig)


def _load_migration_file(path: Path, directory: Path, label: str) -> Migration:
    # Named by a digest of the path, not hash(): the same name in every process.
    digest = hashlib.sha256(str(path).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    module_name = f"_evalspec_migration_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProjectConfigError(f"{label}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ProjectConfigError(f"{label}: {type(exc).__name__}: {exc}") from exc
    mig = getattr(module, "migration", None)
    if not isinstance(mig, Migration):
        msg = f"{label} must define `migration = Migration(...)`"
        raise ProjectConfigError(msg)
    digits = path.stem.split("_", 1)[0]
    if digits.isdigit() and int(digits) != mig.version:
        msg = (
            f"{label} is numbered {int(digits)} in its file name but declares version {mig.version}"
        )
        raise ProjectConfigError(msg)
    if mig.fixture_dir is None:
        mig = attrs.evolve(mig, fixture_dir=directory)
    return attrs.evolve(mig, origin=label)


def _toml_parser(path: Path) -> Any:
    # Imported by name: tomllib is standard from Python 3.11; on 3.10 the
    # tomli dependency provides the same API.
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    msg = f"reading [tool.evalspec] from {path} on Python 3.10 needs tomli: pip install tomli"
    raise ProjectConfigError(msg)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = read_text_bounded(path, MAX_TEXT_BYTES)
    except (DocumentError, UnicodeDecodeError) as exc:
        raise ProjectConfigError(f"cannot read {path}: {exc}") from None
    if "evalspec" not in text:
        return {}  # nothing for us; no TOML parser needed
    tomllib = _toml_parser(path)
    try:
        doc: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProjectConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ProjectConfigError(f"{path}: nesting is too deep") from None
    too_deep = json_depth_problem(doc)
    if too_deep is not None:
        raise ProjectConfigError(f"{path}: {too_deep}")
    return doc


def load_project(start: str | os.PathLike[str] | None = None) -> Project:
    """The project of the nearest ``pyproject.toml`` at or above ``start`` (default: cwd).

    :raises ProjectConfigError: the ``[tool.evalspec]`` table is malformed.
    """
    found = nearest(PYPROJECT, start if start is not None else os.getcwd())
    if found is None:
        return Project(root=None)
    pyproject = Path(found)
    root = pyproject.parent
    _owned_by_us(pyproject)
    doc = _read_toml(pyproject)
    settings = doc.get("tool", {}).get("evalspec", {})
    label = f"{pyproject} [tool.evalspec]"
    if not isinstance(settings, dict):
        raise ProjectConfigError(f"{label} must be a table")
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        msg = f"{label}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(SETTINGS)})"
        raise ProjectConfigError(msg)
    for key in ("migrations", "lock", "changelog"):
        if key in settings and not isinstance(settings[key], str):
            raise ProjectConfigError(f"{label}: {key} must be a string (a path)")
    for key in ("migrations", "lock", "changelog"):
        if key in settings:
            _inside_the_repository(root, key, settings[key], label)
    plugins = settings.get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise ProjectConfigError(f"{label}: plugins must be a list of module names")
    if plugins or "migrations" in settings:
        _not_writable_by_others(root, label)
    entry_points = doc.get("project", {}).get("entry-points", {}).get("evalspec", {})
    return Project(
        root=root,
        migrations=root / settings["migrations"] if "migrations" in settings else None,
        lock=root / settings.get("lock", DEFAULT_LOCK),
        plugins=tuple(plugins),
        changelog=root / settings.get("changelog", DEFAULT_CHANGELOG),
        own_entry_points=tuple(entry_points) if isinstance(entry_points, dict) else (),
    )


def _owned_by_us(pyproject: Path) -> None:
    """Refuse a ``pyproject.toml`` that another user owns, as git refuses a repository
    of dubious ownership.

    Its ``plugins`` and ``migrations`` are imported, so the file decides what code
    runs: a ``/tmp/pyproject.toml`` planted by another user of the machine would
    otherwise govern every task file below ``/tmp`` and run that user's code as
    whoever validates one. Files of root and of the current user are believed.
    """
    if not hasattr(os, "geteuid"):
        return  # no uids to compare (Windows)
    try:
        owner = os.stat(pyproject).st_uid
    except OSError:
        return  # unreadable: reading it reports the error
    if owner not in (os.geteuid(), 0):
        msg = (
            f"{pyproject} belongs to uid {owner}, not to you (uid {os.geteuid()}): evalspec "
            "does not load another user's project settings (their plugins would run as "
            "you); move your files out from under it, or have its owner remove it"
        )
        raise ProjectConfigError(msg)


def _not_writable_by_others(root: Path, label: str) -> None:
    """Refuse to import plugins or migrations from a directory others can write.

    In a shared directory such as ``/tmp`` another user can create the module a
    project names (``spec_plugin.py``) before its author does.
    """
    if not hasattr(os, "geteuid"):
        return
    try:
        mode = os.stat(root).st_mode
    except OSError:
        return
    if mode & 0o022:
        msg = (
            f"{label}: its directory {root} is writable by other users, who could plant "
            "the plugin or migration modules it imports: make it writable by you only"
        )
        raise ProjectConfigError(msg)


def _inside_the_repository(root: Path, key: str, value: str, label: str) -> None:
    """Refuse a setting whose path leads out of the repository (the git work tree
    holding the project, else the project), by its spelling or through a symlink.

    The settings arrive in pull requests like the rest of the repository: a lock
    or changelog path outside it would have ``spec lock`` and ``spec new`` write
    there, a migrations directory outside it would have evalspec import code
    from there.
    """
    boundary = repository_of(root)
    path = root / value
    spelled_inside = inside(boundary, os.path.normpath(path))
    if not (spelled_inside and inside(os.path.realpath(boundary), os.path.realpath(path))):
        msg = f"{label}: {key} = {value!r} leads outside the repository ({boundary})"
        raise ProjectConfigError(msg)


def lock_label(project: Project) -> str:
    """Which lock decides what is in force, for messages."""
    if project.lock is not None and project.has_lock:
        return project.relative(project.lock)
    if project.root is None or project.lock is None:
        return "evalspec's own lock (not in a project)"
    return f"evalspec's own lock (this project has no lock at {project.relative(project.lock)} yet)"


def in_force(project: Project, chain: tuple[Migration, ...]) -> int:
    """The newest spec version in force: the newest one the effective lock releases.

    :raises LockError: the lock is unreadable, releases a version no migration
        provides, or a released migration was edited after release.
    """
    lock = project.effective_lock()
    problems = verify(chain, lock)
    if problems:
        raise problems[0]
    if lock.released == 0:
        msg = f"{lock.path} releases no spec version; run `evalspec spec lock`"
        raise SpecVersionError(msg)
    return lock.released


def check_version(requested: int | None, in_force_version: int, head: int, lock_path: str) -> int:
    """The version to use: ``requested``, or the newest in force.

    :raises SpecVersionError: the version is not in the table.
    :raises PendingVersionError: the version exists but the project has not locked it.
    """
    if requested is None:
        return in_force_version
    if not 1 <= requested <= head:
        msg = f"unknown spec version {requested}: the version table holds 1..{head}"
        raise SpecVersionError(msg)
    if requested > in_force_version:
        msg = (
            f"spec version {requested} is pending: {lock_path} releases only up to version "
            f"{in_force_version}; release it with `evalspec spec lock` after "
            "`evalspec spec check` passes, or validate against a released version"
        )
        raise PendingVersionError(msg)
    return requested


@functools.lru_cache(maxsize=16)
def _project_for(directory: str) -> Project:
    return load_project(directory)


def current_project() -> Project:
    """:func:`load_project` for the governing directory (the current directory unless a
    command chose another from its paths, :mod:`evalspec.io.governing`), remembered
    per directory."""
    return _project_for(governing_directory())


def project_governing(path: str | os.PathLike[str]) -> Project:
    """The project governing ``path``: that of the nearest ``pyproject.toml`` at or
    above it (a file's own directory first), remembered per directory."""
    return _project_for(start_of(path))


def forget_projects() -> None:
    """Forget remembered projects (after editing a ``pyproject.toml`` in-process)."""
    _project_for.cache_clear()
