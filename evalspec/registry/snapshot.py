"""A verified snapshot of the spec version in force, so a warm start needs no plugins.

Validating needs only the :class:`~evalspec.versions.SpecVersion` in force:
vocabularies and pair tables. Building it loads every plugin through pluggy,
replays the migration chain and verifies the lock's checksums (tens of
milliseconds on every run). :func:`spec_in_force` answers from a snapshot
written by the last full build instead, as long as nothing that could change
the answer has changed. The snapshot records what it depends on:

- evalspec's version, the Python version and executable, the spec version
  asked for;
- the installed distributions and their entry points
  (:func:`evalspec.registry.discovery.fingerprint`: ``sys.path``, the directories on it
  and every distribution's ``entry_points.txt``);
- the project: which ``pyproject.toml`` is nearest the governing directory
  (:mod:`evalspec.io.governing`: the paths' directory, else the current one) and
  its bytes, the bytes of its lock and of evalspec's own, the listing of its
  migrations directory and the bytes of each migration file;
- the files of every module loaded when it was built (plugins, evalspec
  itself, an editable install's sources) and of every fixture a migration
  names, by modification time, size and inode, with their directories.

Any difference and the registry is built, verified and snapshotted afresh;
an error in that build (a plugin that fails, an edited released migration, a
pending version) is raised as without the snapshot and nothing is written.

:func:`tables_in_force` (what ``evalspec validate`` calls) verifies the
snapshot the same way but reads it into the plain
:class:`~evalspec.registry.tables.SpecTables` rather than the attrs
:class:`~evalspec.versions.SpecVersion`: a warm run then imports neither the
registry, pluggy nor attrs. The snapshot also keeps the aliases the registered
categories and metrics declare (:func:`aliases_in_force`), so the hint in the
message of an invalid line (``did you mean 'classification'?``) loads no plugin
either.

The snapshot file is untrusted input. ``$XDG_CACHE_HOME`` is what CI
systems save and restore between jobs, jobs that ran pull requests' code
included, so whoever can write the cache directory must not be able to make
a snapshot that is believed: a checksum over the file's own content would
prove nothing (the forger writes it too). The file is therefore sealed with
an HMAC under a key kept outside the cache (:mod:`evalspec.io.seal`: in this
user's private directory in the temporary directory, created ``0600``, used
only while its owner and mode are this user's). A snapshot that is not a
regular file owned by this user and writable only by them, that is a
symlink, that is not sealed under this user's key (restored from another
machine or job, or forged), that does not parse, whose dependency list is
empty or lacks what every build depends on (evalspec's own lock and
modules, the project's ``pyproject.toml``), or whose content is not a
well-formed spec version is ignored and rebuilt, never believed. It is
written to a fresh file and renamed into place, so concurrent writers and
readers only ever see whole snapshots, and a symlink at its path is
replaced, not written through. It lives beside the entry-point cache
(``$XDG_CACHE_HOME/evalspec``), sealed the same way;
``EVALSPEC_NO_PLUGIN_CACHE=1`` turns both off.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import MappingProxyType

from evalspec._version import __version__
from evalspec.io.governing import governing_directory, nearest
from evalspec.io.quickjson import loads as _loads
from evalspec.io.seal import sha256 as _sha256
from evalspec.registry import discovery
from evalspec.registry.tables import FieldTable, PairsTable, SpecTables

# Not `from typing import ...`: typing costs milliseconds at start-up, and these
# names are only annotations. Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    from evalspec.registry.build import Registry
    from evalspec.registry.tables import AnySpec
    from evalspec.versions import SpecVersion

    Stamp: TypeAlias = Any  # a JSON-ready list: what a file or directory looked like
    Alias: TypeAlias = tuple[str, tuple[str, ...], str]  # name, patterns, alias_hint

FORMAT = 4
"""Of the snapshot file; a snapshot of another format is rebuilt."""

MAX_BYTES = 4 << 20
"""A snapshot file bigger than this is not read (it is not one of ours)."""

_PYPROJECT = "pyproject.toml"


def spec_in_force(spec_version: int | None = None) -> SpecVersion:
    """The spec version in force for the current project (default: the newest),
    as :func:`evalspec.registry.build.default_registry` gives it in a fresh process,
    from the snapshot when it is current. (Meant for the start of a command: a
    long-lived process that imported plugins before their files changed keeps
    running the old code, so use ``default_registry`` there.)

    :raises EvalspecError: as ``default_registry`` does (only a build that
        succeeds is snapshotted).
    """
    spec: SpecVersion = _in_force(spec_version, decode_spec)
    return spec


def tables_in_force(spec_version: int | None = None) -> AnySpec:
    """What :func:`spec_in_force` answers, as the snapshot's plain
    :class:`SpecTables` when the snapshot is current (no attrs class is built:
    the warm ``evalspec validate`` path imports neither the registry nor attrs),
    else the freshly built, verified and snapshotted :class:`SpecVersion`.

    The snapshot is verified exactly as for :func:`spec_in_force`.

    :raises EvalspecError: as ``default_registry`` does.
    """
    tables: AnySpec = _in_force(spec_version, decode_tables)
    return tables


def _in_force(
    spec_version: int | None,
    decode: Callable[[Any], Any],
    part: str = "spec",
    of: Callable[[Registry], Any] | None = None,
) -> Any:
    """The snapshot's ``part`` read by ``decode`` when the snapshot is current, else
    ``of`` the registry (default: its spec version), built afresh and snapshotted."""
    path = snapshot_path(spec_version)
    if os.environ.get(discovery.NO_CACHE_ENV) or path is None:
        registry = _build(spec_version)
        return registry.spec if of is None else of(registry)
    doc = _current_doc(path, spec_version)
    if doc is not None:
        try:
            return decode(doc[part])
        except (ValueError, KeyError, TypeError, RecursionError):
            pass  # not a spec version of ours: rebuilt below
    registry = _build(spec_version)
    # A read-only or foreign cache: validation still works, unsnapshotted.
    with contextlib.suppress(OSError):
        write(path, registry, spec_version)
    return registry.spec if of is None else of(registry)


def aliases_in_force() -> dict[str, tuple[Alias, ...]]:
    """What the registered categories and metrics of the current project declare as
    their ``aliases`` (:class:`~evalspec.model.Category`), keyed ``"category"`` and
    ``"metric"``, each ``(name, patterns, alias_hint)`` in registry order, at the
    newest spec version: from that version's snapshot when it is current, else from
    the registry built afresh (and snapshotted), as :func:`tables_in_force` answers.

    Only the message of an invalid line needs them: from the snapshot, that message
    loads no plugin, pluggy or attrs (tens of milliseconds, in every ``--jobs``
    process that reports one). Each call reads the snapshot: callers keep the answer.

    :raises EvalspecError: as ``default_registry`` does.
    """
    aliases: dict[str, tuple[Alias, ...]] = _in_force(
        None, _decode_aliases, "aliases", lambda registry: _decode_aliases(_aliases_of(registry))
    )
    return aliases


def _build(spec_version: int | None) -> Registry:
    # Built afresh, not from default_registry's per-process cache, so that what
    # is snapshotted is what the files the key stamps say now.
    from evalspec.registry.build import project_registry
    from evalspec.registry.project import load_project

    return project_registry(load_project(governing_directory()), spec_version)


def snapshot_path(spec_version: int | None) -> str | None:
    """Where the snapshot for this interpreter, project and version lives (``None``:
    no cache directory, see :func:`evalspec.registry.discovery.cache_home`)."""
    home = discovery.cache_home()
    if home is None:
        return None
    where = repr((sys.executable, sys.path, _nearest_pyproject(), spec_version))
    # A name, not a check (the key inside is compared whole): the SHA-256 the seal
    # already has, rather than zlib's CRC-32 and a module more to load.
    return os.path.join(home, f"spec-{_sha256(where.encode()).hexdigest()[:8]}.json")


# -- the key -------------------------------------------------------------------------


def _nearest_pyproject() -> str | None:
    """The project file :func:`evalspec.registry.project.current_project` reads."""
    return nearest(_PYPROJECT, governing_directory())


def _digest(path: str) -> Stamp:
    """``["sha256", hex]`` of a file's bytes, or ``None`` when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return ["sha256", _sha256(f.read()).hexdigest()]
    except OSError:
        return None


def _stat(path: str) -> Stamp:
    """``[mtime_ns, size, inode]`` of a file or directory, or ``None`` when absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _listing(path: str) -> Stamp:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


_STAMPERS = {"digest": _digest, "stat": _stat, "listing": _listing}


def _global_key(spec_version: int | None) -> dict[str, Any]:
    """The part of the key every snapshot checks the same way."""
    return {
        "evalspec": __version__,
        "python": sys.version,
        "executable": sys.executable,
        "requested": spec_version,
        "pyproject": _nearest_pyproject(),
        "installed": discovery.fingerprint(),
    }


def _dependencies(registry: Registry) -> list[list[Any]]:
    """``[how, path, stamp]`` for every file and directory the build depended on."""
    import sysconfig

    from evalspec.registry.project import current_project

    deps: dict[tuple[str, str], None] = {}
    project = current_project()
    for path in (project.root and project.root / _PYPROJECT, project.lock):
        if path is not None:
            deps[("digest", str(path))] = None
    deps[("digest", _packaged_lock())] = None
    if project.migrations is not None:
        deps[("listing", str(project.migrations))] = None
        for name in _listing(str(project.migrations)) or ():
            deps[("digest", os.path.join(project.migrations, name))] = None
    for mig in registry.chain:
        for op in mig.operations:
            for rel in getattr(op, "fixtures", ()):
                if mig.fixture_dir is not None:
                    deps[("stat", str(mig.fixture_dir.joinpath(*rel.split("/"))))] = None
    # Every module loaded so far outside the standard library (the Python version
    # stands for that): plugins, evalspec, project plugin modules, and the
    # directories holding them (a new module file shadowing one changes them).
    paths = sysconfig.get_paths()
    stdlib = [os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib")]
    site_dirs = [os.path.realpath(paths[k]) for k in ("purelib", "platlib")]
    with contextlib.suppress(AttributeError):  # an old virtualenv's site module lacks it
        import site

        site_dirs += [os.path.realpath(p) for p in site.getsitepackages()]
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not os.path.isabs(file):
            continue
        if in_standard_library(os.path.realpath(file), stdlib, site_dirs):
            continue
        deps[("stat", file)] = None
        deps[("stat", os.path.dirname(file))] = None
    return [[how, path, _STAMPERS[how](path)] for how, path in deps]


def in_standard_library(real: str, stdlib: list[str], site_dirs: list[str]) -> bool:
    """Whether the file ``real`` (a real path) is the standard library's: under one of
    the ``stdlib`` directories but not in a site directory. A site-packages directory
    lies inside the standard library's directory (``lib/python3.X/site-packages``,
    in a venv too, where ``platstdlib`` is the venv's ``lib/python3.X``): the
    installed plugins and evalspec live there and are stamped."""
    if any(real.startswith(lib + os.sep) for lib in site_dirs):
        return False
    return any(real.startswith(lib + os.sep) for lib in stdlib)


# -- the spec version as JSON ------------------------------------------------------------


def encode_spec(spec: AnySpec) -> dict[str, Any]:
    """``spec`` as JSON-ready data (:func:`decode_spec` reads it back)."""
    return {
        "version": spec.version,
        "categories": [
            [
                c.name,
                list(c.metrics),
                list(c.post_processes),
                list(c.fixtures),
                c.added_in,
                list(c.single_target_from),
                [[kind, name, v] for kind, name, v in c.bound],
            ]
            for c in spec.categories.values()
        ],
        "metrics": [[name, v] for name, v in spec.metrics.items()],
        "post_processes": [[name, v] for name, v in spec.post_processes.items()],
        "deprecated": sorted([kind, name] for kind, name in spec.deprecated),
        "later": [[kind, name, v] for (kind, name), v in spec.later.items()],
        "fields": [
            [f.name, list(f.choices), list(f.categories), f.added_in] for f in spec.fields.values()
        ],
        "waivers": sorted(list(w) for w in spec.waivers),
    }


def _aliases_of(registry: Registry) -> dict[str, list[list[Any]]]:
    """The aliases ``registry``'s categories and metrics declare, as JSON-ready data."""
    return {
        kind: [[e.name, list(e.aliases), e.alias_hint] for e in entries.values() if e.aliases]
        for kind, entries in (("category", registry.categories), ("metric", registry.metrics))
    }


def _decode_aliases(doc: Any) -> dict[str, tuple[Alias, ...]]:
    """What :func:`_aliases_of` wrote; :class:`ValueError` on anything else."""
    if type(doc) is not dict or set(doc) != {"category", "metric"}:
        raise _Malformed
    return {
        kind: tuple((_str(n), _strs(a), _str(h)) for n, a, h in _rows(doc[kind], 3))
        for kind in ("category", "metric")
    }


class _Malformed(ValueError):
    """The snapshot's content is not a spec version."""


def _int(value: Any) -> int:
    if type(value) is not int:
        raise _Malformed
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise _Malformed
    return value


def _strs(value: Any) -> tuple[str, ...]:
    if type(value) is not list:
        raise _Malformed
    return tuple(_str(v) for v in value)


def _rows(value: Any, width: int) -> list[list[Any]]:
    if type(value) is not list or any(type(r) is not list or len(r) != width for r in value):
        raise _Malformed
    return value


def _decode(
    doc: Any, pairs: Callable[..., Any], field: Callable[..., Any], spec: Callable[..., Any]
) -> Any:
    if type(doc) is not dict:
        raise _Malformed
    fields = {}
    for name, choices, in_categories, added_in in _rows(doc.get("fields"), 4):
        fields[_str(name)] = field(name, _strs(choices), _strs(in_categories), _int(added_in))
    waivers = frozenset(
        (_str(r), _str(c), _str(f), _str(v)) for r, c, f, v in _rows(doc.get("waivers"), 4)
    )
    categories = {}
    for name, metrics, rules, fixtures, added_in, letters, bound in _rows(doc.get("categories"), 7):
        categories[_str(name)] = pairs(
            name,
            _strs(metrics),
            _strs(rules),
            _strs(fixtures),
            _int(added_in),
            _strs(letters),
            tuple((_str(k), _str(n), _int(v)) for k, n, v in _rows(bound, 3)),
        )
    return spec(
        version=_int(doc.get("version")),
        categories=MappingProxyType(categories),
        metrics=MappingProxyType({_str(n): _int(v) for n, v in _rows(doc.get("metrics"), 2)}),
        post_processes=MappingProxyType(
            {_str(n): _int(v) for n, v in _rows(doc.get("post_processes"), 2)}
        ),
        deprecated=frozenset((_str(k), _str(n)) for k, n in _rows(doc.get("deprecated"), 2)),
        later=MappingProxyType(
            {(_str(k), _str(n)): _int(v) for k, n, v in _rows(doc.get("later"), 3)}
        ),
        fields=MappingProxyType(fields),
        waivers=waivers,
    )


def decode_spec(doc: Any) -> SpecVersion:
    """The spec version :func:`encode_spec` wrote; :class:`ValueError` on anything else."""
    from evalspec.versions import CategoryPairs, OptionalField, SpecVersion

    decoded: SpecVersion = _decode(doc, CategoryPairs, OptionalField, SpecVersion)
    return decoded


def decode_tables(doc: Any) -> SpecTables:
    """What :func:`decode_spec` reads, checked the same way, as plain :class:`SpecTables`."""
    decoded: SpecTables = _decode(doc, PairsTable, FieldTable, SpecTables)
    return decoded


def _packaged_lock() -> str:
    """evalspec's own lock file (``evalspec/versions/evalspec.lock``), found without
    importing :mod:`evalspec.versions`."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package, "versions", "evalspec.lock")


def _required(key: Any) -> list[list[str]]:
    """``[how, path]`` of what every build depends on, whatever the project: evalspec's
    own lock and the modules that read the snapshot, and the project's
    ``pyproject.toml`` named in the key. A snapshot whose dependency list lacks
    one was not written by :func:`write`."""
    required = [
        ["digest", _packaged_lock()],
        ["stat", __file__],
        ["stat", discovery.__file__],
    ]
    if key.get("pyproject") is not None:
        required.append(["digest", _str(key["pyproject"])])
    return required


# -- reading and writing ---------------------------------------------------------------


def _current_doc(path: str, spec_version: int | None) -> dict[str, Any] | None:
    """The snapshot at ``path`` if the file is sealed under this user's key,
    well-formed and current (its key, its dependency list holding at least
    :func:`_required`, and every dependency's stamp), else ``None``. Its parts
    (``spec``, ``aliases``) are the reader's to check."""
    data = discovery.read_own_file(path, MAX_BYTES)
    if data is None:
        return None
    try:
        doc = _loads(data)  # json.loads, without importing json (and re) on the warm path
        if type(doc) is not dict or doc.get("format") != FORMAT:
            return None
        key, deps = doc["key"], doc["dependencies"]
        if key != _global_key(spec_version):
            return None
        stamped = {(_str(how), _str(dep_path)) for how, dep_path, _ in _rows(deps, 3)}
        if any((how, dep_path) not in stamped for how, dep_path in _required(key)):
            return None  # an empty or cut-down list: not one that write made
        for how, dep_path, stamp in deps:
            if _STAMPERS[how](dep_path) != stamp:
                return None
        return doc
    except (ValueError, KeyError, TypeError, RecursionError):  # not a snapshot of ours
        return None


def load(path: str, spec_version: int | None) -> SpecVersion | None:
    """The snapshot at ``path`` if it is well-formed and current, else ``None``."""
    doc = _current_doc(path, spec_version)
    if doc is None:
        return None
    try:
        return decode_spec(doc["spec"])
    except (ValueError, KeyError, TypeError, RecursionError):  # not a spec version of ours
        return None


def write(path: str, registry: Registry, spec_version: int | None) -> None:
    """Snapshot ``registry``'s spec version at ``path``, atomically.

    :raises OSError: the cache directory cannot be written.
    """
    key = _global_key(spec_version)
    deps = _dependencies(registry)
    spec = encode_spec(registry.spec)
    aliases = _aliases_of(registry)
    doc = {"format": FORMAT, "key": key, "dependencies": deps, "spec": spec, "aliases": aliases}
    import json  # a cold run's: it built the registry

    discovery.write_own_file(path, json.dumps(doc, separators=(",", ":")))
