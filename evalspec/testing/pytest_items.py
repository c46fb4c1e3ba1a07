"""The work of evalspec's pytest plugin, imported only when a hook needs it: the items
that validate task files and run the conformance properties, and the registries the
fixtures build. :mod:`evalspec.testing.pytest_plugin` (the registered entry point)
imports nothing of evalspec, so a pytest session that asks for none of this pays
nothing for it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalspec.errors import EvalspecError
from evalspec.registry.build import (
    Registry,
    build_registry,
    project_registry,
    registry_governing,
)
from evalspec.registry.project import current_project


class TaskFileInvalid(Exception):
    """A task file has invalid lines (or cannot be read); the message lists every error."""


ITEM_NAME = "evalspec"
"""The one test a task file holds: ``data/tasks.jsonl::evalspec``."""


class TaskFile(pytest.File):
    """A task file, collected like a test module: it holds one test, its validation."""

    def __init__(self, *, spec_version: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec_version = spec_version

    def collect(self) -> Iterable[pytest.Item]:
        yield TaskFileItem.from_parent(
            self, name=ITEM_NAME, task_path=self.path, spec_version=self.spec_version
        )


class TaskFileItem(pytest.Item):
    """One task file, validated as one test."""

    def __init__(self, *, task_path: Path, spec_version: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task_path = task_path
        self.spec_version = spec_version

    @property
    def shown(self) -> str:
        """The file as its node id names it (relative to the rootdir)."""
        return self.nodeid.rpartition("::")[0] or self.task_path.as_posix()

    def runtest(self) -> None:
        from evalspec.validation.messages import format_error
        from evalspec.validation.validator import iter_validate

        shown = self.shown
        lines: list[str] = []
        total = invalid = 0
        try:
            for verdict in iter_validate(
                self.task_path, registry=_registry(self.task_path, self.spec_version)
            ):
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
        return self.task_path, None, f"evalspec validate {self.shown}"


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


def _registry(path: Path, spec_version: int | None) -> Registry:
    # The project governing the file, as for `evalspec validate PATH`: pytest run from
    # the repository root validates a layout's tasks against the layout's spec.
    return registry_governing(path, spec_version)


def conformance_items(
    session: pytest.Session, version: int | None, examples: int | None
) -> Iterable[pytest.Item]:
    """One item per property of each post-process rule and metric in force."""
    try:
        from evalspec.testing.conformance import conformance_cases, installed_registry

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


RegistryFactory = Callable[..., Registry]


def build(
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


def project_registry_pending() -> Registry:
    """The current project's registry with its pending versions (the fixture's default)."""
    return project_registry(current_project(), pending=True)
