"""Exception classes raised by evalspec.

Problems found *in task files* are never exceptions: they are
:class:`evalspec.ErrorRecord` values returned by the validator. The classes
here are for problems in the spec itself, in plugins, or in how the API is
called.
"""

from __future__ import annotations

from collections.abc import Sequence


class EvalspecError(Exception):
    """Base class of every exception evalspec raises on purpose."""


class PluginError(EvalspecError):
    """A plugin failed while being loaded or while a hook of it ran."""

    def __init__(self, plugin: str, hook: str, detail: str) -> None:
        self.plugin = plugin
        self.hook = hook
        super().__init__(f"plugin {plugin!r} failed in {hook}: {detail}")


class RegistryError(EvalspecError):
    """The registries built from the installed plugins are inconsistent."""


class DuplicateNameError(RegistryError):
    """Two plugins (or one plugin twice) contributed the same name."""

    def __init__(self, kind: str, name: str, owners: Sequence[str]) -> None:
        self.kind = kind
        self.name = name
        self.owners = tuple(owners)
        first, second = self.owners[0], self.owners[-1]
        super().__init__(
            f"{kind} {name!r} is contributed twice: by plugin {first!r} and by plugin {second!r}"
        )


class UndeclaredNameError(RegistryError):
    """A plugin implements a name that no spec version declares."""

    def __init__(self, kind: str, name: str, owner: str) -> None:
        self.kind = kind
        self.name = name
        self.owner = owner
        super().__init__(
            f"{kind} {name!r} is implemented by plugin {owner!r} but no spec version declares "
            "it; add it to the version table with a new migration"
        )


class UnimplementedNameError(RegistryError):
    """The version table declares a name that no plugin implements."""

    def __init__(self, kind: str, name: str, version: int) -> None:
        self.kind = kind
        self.name = name
        self.version = version
        super().__init__(
            f"{kind} {name!r} is declared by spec version {version} but no installed plugin "
            "implements it"
        )


class RegistryProblems(RegistryError):
    """Several registry problems at once, so a plugin author sees them all."""

    def __init__(self, problems: Sequence[RegistryError]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


class UnknownNameError(EvalspecError, KeyError):
    """A lookup by name in a registry found nothing."""

    def __init__(self, kind: str, name: str, suggestions: Sequence[str] = ()) -> None:
        self.kind = kind
        self.name = name
        self.suggestions = tuple(suggestions)
        hint = f"; did you mean {self.suggestions[0]!r}?" if self.suggestions else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class SpecVersionError(EvalspecError):
    """A spec version was asked for that the version table does not hold."""


class MigrationError(EvalspecError):
    """A migration, or the chain of migrations, is malformed."""


class ChainError(MigrationError):
    """The migrations do not form one linear chain 1..N; ``problems`` lists each defect."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


class PendingVersionError(SpecVersionError):
    """A spec version exists but is not in force: the project has not locked it yet."""


class LockError(EvalspecError):
    """The lock file is unreadable, or disagrees with the migrations installed."""


class UnreadableFixtureError(LockError):
    """A released migration's fixture cannot be read, so its checksum cannot be checked."""

    def __init__(self, version: int, origin: str, reason: str) -> None:
        self.version = version
        super().__init__(
            f"spec version {version} ({origin}) is released but a fixture of it cannot be "
            f"read: {reason}"
        )


class ChecksumMismatchError(LockError):
    """A released (locked) migration was edited after it was released."""

    def __init__(self, version: int, origin: str, locked: str, computed: str, lock: str) -> None:
        self.version = version
        self.origin = origin
        self.locked = locked
        self.computed = computed
        self.lock = lock
        super().__init__(
            f"spec version {version} ({origin}) was edited after release: {lock} records "
            f"{locked} but the migration now gives {computed}; a released migration is frozen, "
            "so restore it and make the change in a new migration (evalspec spec new)"
        )


class ProjectConfigError(EvalspecError):
    """The project's ``[tool.evalspec]`` settings or its migrations directory are unusable."""


class MissingDependencyError(EvalspecError):
    """An optional dependency (an extra) needed for what was asked is not installed.

    The one missing-extra exception: the manifest's ``MissingExtraError`` and
    the YAML reader's ``MissingYamlError`` are this class, specialised, so
    ``except MissingDependencyError`` catches every one. ``package`` is the
    missing distribution, ``extra`` the evalspec extra that installs it.
    """

    def __init__(self, what: str, package: str, extra: str, *, message: str | None = None) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            message
            if message is not None
            else f"{what} needs the {package!r} package, which is not installed: "
            f"pip install 'evalspec-contract[{extra}]'"
        )


class ScoringError(EvalspecError):
    """A prediction could not be scored (no scorer, no targets, a sandbox failure)."""
