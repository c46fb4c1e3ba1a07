"""evalspec's pytest plugin (entry point ``pytest11``): inert unless asked for.

Task files as tests
    ``pytest --evalspec data/tasks.jsonl other.jsonl``, or in the ini file::

        [pytest]
        evalspec_paths = data/**/*.jsonl

    adds one test per file; it fails with the validator's error list,
    ``file:line: rule field — message`` for each error. ``--evalspec-spec-version
    N`` (ini: ``evalspec_spec_version``) picks the spec version.

Plugin conformance
    ``pytest --evalspec-conformance`` adds the property suite of
    :mod:`evalspec.conformance` for every post-process rule and metric of the
    installed and project plugins (newest version, pending ones included;
    with ``--evalspec-spec-version N``, that version in force), one test per
    property; a failure shows hypothesis's shrunk counterexample.
    ``--evalspec-conformance-examples N`` sets the examples per property.

Fixtures for plugin tests
    ``evalspec_registry`` is the current project's registry (installed
    plugins plus ``[tool.evalspec]`` migrations and plugins, pending versions
    included); with a marker, one built from a chosen plugin list and spec
    version (the built-ins are included unless ``builtins=False``; add
    ``project=True`` for the project's own plugins)::

        @pytest.mark.evalspec_registry(plugins=[my_plugin], spec_version=2)
        def test_my_rule(evalspec_registry):
            assert "my_rule" in evalspec_registry.post_processors

    ``evalspec_registry_factory`` is the same as a callable taking those
    keyword arguments, for several registries in one test.

Without those options and ini values the plugin adds no test and imports
nothing beyond evalspec's light core.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalspec.errors import EvalspecError
from evalspec.registry import Registry, build_registry, default_registry, project_registry
from evalspec.versions.settings import current_project

MARKER = "evalspec_registry"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalspec", "evalspec task files and plugin conformance")
    group.addoption(
        "--evalspec",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATH",
        dest="evalspec_paths",
        help="validate these task files as tests (one test per file)",
    )
    group.addoption(
        "--evalspec-spec-version",
        type=int,
        default=None,
        metavar="N",
        dest="evalspec_spec_version",
        help="spec version to validate task files against (default: the newest)",
    )
    group.addoption(
        "--evalspec-conformance",
        action="store_true",
        default=False,
        dest="evalspec_conformance",
        help="run evalspec's property suite on every installed post-process rule and metric",
    )
    group.addoption(
        "--evalspec-conformance-examples",
        type=int,
        default=None,
        metavar="N",
        dest="evalspec_conformance_examples",
        help="hypothesis examples per conformance property (default: the active profile's)",
    )
    parser.addini(
        "evalspec_paths",
        type="args",
        default=[],
        help="globs (relative to the rootdir) of task files to validate as tests",
    )
    parser.addini(
        "evalspec_spec_version",
        default="",
        help="spec version for evalspec_paths (default: newest)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(plugins=(), spec_version=None, builtins=True, entry_points=False): "
        "the registry the evalspec_registry fixture builds",
    )


class TaskFileInvalid(Exception):
    """A task file has invalid lines (or cannot be read); the message lists every error."""


class TaskFileItem(pytest.Item):
    """One task file, validated as one test."""

    def __init__(self, *, task_path: Path, spec_version: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task_path = task_path
        self.spec_version = spec_version

    def runtest(self) -> None:
        from evalspec.commands.validate import format_error
        from evalspec.validate import iter_validate

        shown = self.name
        lines: list[str] = []
        total = invalid = 0
        try:
            for verdict in iter_validate(self.task_path, registry=_registry(self.spec_version)):
                total += 1
                invalid += not verdict.ok
                lines.extend(format_error(shown, e) for e in verdict.errors)
        except OSError as exc:
            raise TaskFileInvalid(f"cannot read {shown}: {exc.strerror or exc}") from None
        if lines:
            lines.append(f"{shown}: {total} tasks, {total - invalid} valid, {invalid} invalid")
            raise TaskFileInvalid("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (TaskFileInvalid, EvalspecError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.task_path, None, f"evalspec validate {self.name}"


class ConformanceItem(pytest.Item):
    """One property of one registry entry."""

    def __init__(self, *, check: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        self.check()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        exc = excinfo.value
        notes = "\n".join(getattr(exc, "__notes__", []))
        if isinstance(exc, (AssertionError, EvalspecError)):
            return f"{type(exc).__name__}: {exc}\n{notes}".rstrip()
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def _registry(spec_version: int | None) -> Registry:
    return default_registry(spec_version)


def _spec_version(config: pytest.Config) -> int | None:
    option: int | None = config.getoption("evalspec_spec_version")
    if option is not None:
        return option
    ini = str(config.getini("evalspec_spec_version")).strip()
    if not ini:
        return None
    try:
        return int(ini)
    except ValueError:
        raise pytest.UsageError(f"evalspec_spec_version must be a number, got {ini!r}") from None


def _task_paths(config: pytest.Config) -> list[Path]:
    """The files named on the command line, then the ini globs' matches, each once."""
    found: list[Path] = []
    for given in config.getoption("evalspec_paths"):
        found.append(Path(given))
    root = Path(config.rootpath)
    patterns: Sequence[str] = config.getini("evalspec_paths")
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.join(root, pattern), recursive=True))
        found.extend(Path(m) for m in matches if os.path.isfile(m))
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _shown(path: Path, config: pytest.Config) -> str:
    try:
        return Path(os.path.relpath(path.resolve(), config.rootpath)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def _items(session: pytest.Session, config: pytest.Config) -> Iterator[pytest.Item]:
    version = _spec_version(config)
    for path in _task_paths(config):
        shown = _shown(path, config)
        yield TaskFileItem.from_parent(
            session,
            name=shown,
            nodeid=shown,
            path=path.resolve(),
            task_path=path,
            spec_version=version,
        )
    if config.getoption("evalspec_conformance"):
        examples = config.getoption("evalspec_conformance_examples")
        yield from _conformance_items(session, version, examples)


def _conformance_items(
    session: pytest.Session, version: int | None, examples: int | None
) -> Iterable[pytest.Item]:
    try:
        from evalspec.conformance import conformance_cases, installed_registry

        registry = installed_registry(version)
        cases = [(c.id, c.check) for c in conformance_cases(registry, max_examples=examples)]
    except (EvalspecError, ImportError) as exc:
        failure = exc

        def broken() -> None:
            raise failure

        cases = [("registry", broken)]
    for case_id, check in cases:
        name = f"evalspec-conformance[{case_id}]"
        yield ConformanceItem.from_parent(session, name=name, nodeid=name, check=check)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst, so that -k and -m deselect among these items too.
    items.extend(_items(session, config))


# -- fixtures ------------------------------------------------------------------------------


RegistryFactory = Callable[..., Registry]


def _build(
    plugins: Sequence[object] = (),
    spec_version: int | None = None,
    builtins: bool = True,
    entry_points: bool = False,
    project: bool = False,
) -> Registry:
    chosen: list[object] = []
    if project:
        # The current project's own plugins and migrations directory.
        chosen.extend(current_project().load_plugins())
    chosen.extend(plugins)
    return build_registry(
        chosen, entry_points=entry_points, builtins=builtins, spec_version=spec_version
    )


@pytest.fixture
def evalspec_registry_factory() -> RegistryFactory:
    """Build registries: ``factory(plugins=[...], spec_version=N, builtins=..., entry_points=...)``.

    ``builtins`` adds evalspec's own vocabulary; ``entry_points`` loads every
    installed plugin (the built-ins among them); ``project=True`` adds the
    current project's ``[tool.evalspec]`` plugins and migrations directory.
    """
    return _build


@pytest.fixture
def evalspec_registry(request: pytest.FixtureRequest) -> Registry:
    """The registry the ``evalspec_registry`` marker describes.

    Without the marker: the current project's registry
    (:func:`evalspec.registry.project_registry` with ``pending=True``), so a
    project's plugin is tested with its ``[tool.evalspec]`` migrations,
    plugins and pending versions, exactly as ``evalspec`` will load them.
    """
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return project_registry(current_project(), pending=True)
    kwargs: dict[str, Any] = dict(marker.kwargs)
    if marker.args:
        kwargs.setdefault("plugins", marker.args[0])
    return _build(**kwargs)
