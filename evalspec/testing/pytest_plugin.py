"""evalspec's pytest plugin (entry point ``pytest11``): inert unless asked for.

Task files as tests
    ``pytest --evalspec data/tasks.jsonl other.jsonl``, or in the ini file::

        [pytest]
        evalspec_paths = data/**/*.jsonl

    collects one test per file, ``FILE::evalspec`` (``pytest --co`` lists and counts
    them); it fails with the validator's error list, ``file:line: rule field —
    message`` for each error, at the spec of the project governing the file (the
    nearest ``pyproject.toml`` above it). ``--evalspec-spec-version N`` (ini:
    ``evalspec_spec_version``) picks the spec version.

Plugin conformance
    ``pytest --evalspec-conformance`` adds the property suite of
    :mod:`evalspec.testing.conformance` for every post-process rule and metric of the
    installed and project plugins (newest version, pending ones included;
    with ``--evalspec-spec-version N``, that version in force), one test per
    property; a failure shows hypothesis's shrunk counterexample. Without
    hypothesis installed the option is a usage error that says how to install it.
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

Importing this module imports nothing of evalspec (hypothesis' own plugin is the
model): without those options and ini values the plugin adds no test, and the work
(:mod:`evalspec.testing.pytest_items`) is imported only by a hook or fixture that
needs it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from evalspec.registry.build import Registry
    from evalspec.testing.pytest_items import RegistryFactory

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


TASK_FILES = pytest.StashKey[dict[Path, None]]()
"""The resolved task files this session validates (collected by :func:`pytest_collect_file`)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(plugins=(), spec_version=None, builtins=True, entry_points=False): "
        "the registry the evalspec_registry fixture builds",
    )
    if config.getoption("evalspec_conformance"):
        try:
            import hypothesis  # noqa: F401  (the properties are hypothesis tests)
        except ImportError:
            msg = (
                "--evalspec-conformance needs hypothesis, which is not installed: "
                "pip install 'evalspec-contract[hypothesis]'"
            )
            raise pytest.UsageError(msg) from None
    paths = _task_paths(config)
    config.stash[TASK_FILES] = dict.fromkeys(p.resolve() for p in paths)
    # The task files are collected like test files, so `pytest --co` lists and counts
    # them and -k, -m, --deselect and the node ids work as for any test. A file named
    # twice, or also found below a directory argument, is collected once (pytest's
    # duplicate-path rule).
    config.args.extend(str(p) for p in paths if not _among_args(p, config))


def _among_args(path: Path, config: pytest.Config) -> bool:
    """Whether pytest collects ``path`` already: it is, or is below, a path argument."""
    here = Path(config.invocation_params.dir)
    target = path.resolve()
    for arg in config.args:
        given = (here / arg.split("::", 1)[0]).resolve()
        if target == given or given in target.parents:
            return True
    return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A task file this session validates: one test, ``FILE::evalspec``."""
    if file_path.resolve() not in parent.config.stash.get(TASK_FILES, {}):
        return None
    from evalspec.testing.pytest_items import TaskFile

    version = _spec_version(parent.config)
    collector: pytest.Collector = TaskFile.from_parent(parent, path=file_path, spec_version=version)
    return collector


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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst, so that -k and -m deselect among these items too.
    if not config.getoption("evalspec_conformance"):
        return  # nothing asked for: nothing of evalspec is imported
    from evalspec.testing import pytest_items

    examples = config.getoption("evalspec_conformance_examples")
    items.extend(pytest_items.conformance_items(session, _spec_version(config), examples))


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def evalspec_registry_factory() -> RegistryFactory:
    """Build registries: ``factory(plugins=[...], spec_version=N, builtins=..., entry_points=...)``.

    ``builtins`` adds evalspec's own vocabulary; ``entry_points`` loads every
    installed plugin (the built-ins among them); ``project=True`` adds the
    current project's ``[tool.evalspec]`` plugins and migrations directory.
    """
    from evalspec.testing.pytest_items import build

    return build


@pytest.fixture
def evalspec_registry(request: pytest.FixtureRequest) -> Registry:
    """The registry the ``evalspec_registry`` marker describes.

    Without the marker: the current project's registry
    (:func:`evalspec.registry.build.project_registry` with ``pending=True``), so a
    project's plugin is tested with its ``[tool.evalspec]`` migrations,
    plugins and pending versions, exactly as ``evalspec`` will load them.
    """
    from evalspec.testing.pytest_items import build, project_registry_pending

    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return project_registry_pending()
    kwargs: dict[str, Any] = dict(marker.kwargs)
    if marker.args:
        kwargs.setdefault("plugins", marker.args[0])
    return build(**kwargs)
