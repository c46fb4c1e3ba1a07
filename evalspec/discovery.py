"""Entry-point discovery, cached by the installed distributions' modification times.

``importlib.metadata.entry_points(group=...)`` imports the email parser and
reads the metadata of every installed distribution on every start: about
10 ms with a few dozen distributions and several times that with hundreds.
:func:`entry_points` answers from a small JSON cache instead, as long as the
*fingerprint* of the installation is unchanged: ``sys.path``, the
modification time of each directory on it, and that of every distribution's
``entry_points.txt``. Installing, removing or editing a distribution
changes the fingerprint, and the next call rescans with
``importlib.metadata``, so a third-party plugin is found exactly as before.

Set ``EVALSPEC_NO_PLUGIN_CACHE=1`` to always scan. The cache lives in
``$XDG_CACHE_HOME/evalspec`` (default ``~/.cache/evalspec``); a cache that
cannot be read or written is ignored.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import zlib

# Annotations only: typing costs every warm run milliseconds. Type checkers
# treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NO_CACHE_ENV = "EVALSPEC_NO_PLUGIN_CACHE"
_VERSION = 1  # of the cache format


class Distribution:
    """The name and version of the distribution that declares an entry point."""

    __slots__ = ("name", "version")

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version


class EntryPoint:
    """What the plugin manager needs of an ``importlib.metadata.EntryPoint``."""

    __slots__ = ("dist", "name", "value")

    def __init__(self, name: str, value: str, dist: Distribution | None) -> None:
        self.name = name
        self.value = value
        self.dist = dist

    def load(self) -> Any:
        """Import the object ``module:attr.path`` names, as ``EntryPoint.load`` does."""
        module, _, attrs = self.value.partition(":")
        attrs = attrs.split("[", 1)[0].strip()  # drop any [extras]
        obj: Any = importlib.import_module(module.strip())
        for part in filter(None, attrs.split(".")):
            obj = getattr(obj, part)
        return obj


def _cache_file() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    where = f"{zlib.crc32(repr((sys.executable, sys.path)).encode()):08x}"  # one file per env
    return os.path.join(base, "evalspec", f"entry-points-{where}.json")


def fingerprint() -> list[Any]:
    """``sys.path`` with the mtimes of its directories and of every distribution's
    ``entry_points.txt`` (or ``None`` where there is none)."""
    out: list[Any] = []
    for entry in sys.path:
        path = entry or "."
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            out.append([entry, None])
            continue
        dists: list[Any] = []
        try:
            with os.scandir(path) as it:
                for child in it:
                    if child.name.endswith((".dist-info", ".egg-info")):
                        try:
                            stamp = os.stat(os.path.join(child.path, "entry_points.txt"))
                            dists.append([child.name, stamp.st_mtime_ns, stamp.st_size])
                        except OSError:
                            dists.append([child.name, None, None])
        except OSError:  # a zip file or unreadable directory: its mtime is the stamp
            pass
        dists.sort()
        out.append([entry, mtime, dists])
    return out


def _scan(group: str) -> list[EntryPoint]:
    from importlib import metadata

    found = []
    for ep in metadata.entry_points(group=group):
        dist = Distribution(ep.dist.name, ep.dist.version) if ep.dist is not None else None
        found.append(EntryPoint(ep.name, ep.value, dist))
    return found


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, in ``importlib.metadata`` order."""
    if os.environ.get(NO_CACHE_ENV):
        return _scan(group)
    stamp = fingerprint()
    path = _cache_file()
    try:
        with open(path, encoding="utf-8") as f:
            cached = json.load(f)
        if cached["version"] == _VERSION and cached["fingerprint"] == stamp:
            entries = cached["groups"].get(group)
            if entries is not None:
                return [
                    EntryPoint(name, value, Distribution(*dist) if dist else None)
                    for name, value, dist in entries
                ]
        else:
            cached = {"version": _VERSION, "fingerprint": stamp, "groups": {}}
    except (OSError, ValueError, KeyError, TypeError):
        cached = {"version": _VERSION, "fingerprint": stamp, "groups": {}}
    found = _scan(group)
    cached["groups"][group] = [
        [ep.name, ep.value, [ep.dist.name, ep.dist.version] if ep.dist else None] for ep in found
    ]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(cached, f)
        os.replace(tmp, path)
    except OSError:  # a read-only home: discovery still works, uncached
        pass
    return found
