"""evalspec: the contract for LLM evaluation tasks.

``import evalspec`` is cheap: names are imported on first use, and no plugin
is loaded until a registry is needed.
"""

from __future__ import annotations


def _quiet_ctrl_c_while_the_command_starts() -> None:
    # Only in the ``evalspec`` command, never for a library user: until
    # evalspec.cli.main takes over, Ctrl-C ends the start-up with exit 130 and no
    # traceback. First thing in the package, so the window before it is Python's own.
    import os
    import sys

    argv = getattr(sys, "orig_argv", sys.argv)
    command = os.path.basename(sys.argv[0]) if sys.argv else ""
    as_module = "-m" in argv[:-1] and argv[argv.index("-m") + 1] == "evalspec"
    if command not in ("evalspec", "evalspec.exe") and not as_module:
        return
    # The signal module's functions without the enum module `signal` imports (~3 ms).
    import _signal as signal  # type: ignore[import-not-found, unused-ignore]

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def interrupted(signum: int, frame: object) -> None:
        os.write(2, b"evalspec: interrupted\n")
        os._exit(130)

    signal.signal(signal.SIGINT, interrupted)


_quiet_ctrl_c_while_the_command_starts()

import importlib  # noqa: E402

# Not `from typing import TYPE_CHECKING`: importing typing costs ~10 ms at start-up.
# Type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "Category": "evalspec.model",
    "ErrorRecord": "evalspec.model",
    "FewShotExample": "evalspec.model",
    "Metric": "evalspec.model",
    "PostProcessRule": "evalspec.model",
    "TaskSpec": "evalspec.model",
    "hookimpl": "evalspec.hookspecs",
    "hookspec": "evalspec.hookspecs",
    "Registry": "evalspec.registry.build",
    "build_registry": "evalspec.registry.build",
    "project_registry": "evalspec.registry.build",
    "default_registry": "evalspec.registry.build",
    "LineResult": "evalspec.validation.validator",
    "ValidationResult": "evalspec.validation.validator",
    "iter_validate": "evalspec.validation.validator",
    "validate_file": "evalspec.validation.validator",
    "validate_task": "evalspec.validation.validator",
    "render": "evalspec.scoring.render",
    "post_process": "evalspec.scoring.postprocess",
    "Fixtures": "evalspec.validation.fixtures",
    "load_fixtures": "evalspec.validation.fixtures",
    "RULES": "evalspec.rules",
    "EvalspecError": "evalspec.errors",
    "PluginError": "evalspec.errors",
    "RegistryError": "evalspec.errors",
    "DuplicateNameError": "evalspec.errors",
    "UndeclaredNameError": "evalspec.errors",
    "UnimplementedNameError": "evalspec.errors",
    "UnknownNameError": "evalspec.errors",
    "MigrationError": "evalspec.errors",
    "SpecVersionError": "evalspec.errors",
    "MissingDependencyError": "evalspec.errors",
    "ScoringError": "evalspec.errors",
    "TaskScore": "evalspec.scoring.scorer",
    "score": "evalspec.scoring.scorer",
    "score_task": "evalspec.scoring.scorer",
    "score_tasks": "evalspec.scoring.scorer",
    "PredictionProblem": "evalspec.scoring.predictions",
    "Predictions": "evalspec.scoring.predictions",
    "read_predictions": "evalspec.scoring.predictions",
    "build_report": "evalspec.scoring.report",
    "format_report": "evalspec.scoring.report",
    "pass_at_k": "evalspec.scoring.passatk",
}

__all__ = [
    "RULES",
    "Category",
    "DuplicateNameError",
    "ErrorRecord",
    "EvalspecError",
    "FewShotExample",
    "Fixtures",
    "LineResult",
    "Metric",
    "MigrationError",
    "MissingDependencyError",
    "PluginError",
    "PostProcessRule",
    "PredictionProblem",
    "Predictions",
    "Registry",
    "RegistryError",
    "ScoringError",
    "SpecVersionError",
    "TaskScore",
    "TaskSpec",
    "UndeclaredNameError",
    "UnimplementedNameError",
    "UnknownNameError",
    "ValidationResult",
    "build_registry",
    "build_report",
    "default_registry",
    "format_report",
    "hookimpl",
    "hookspec",
    "iter_validate",
    "load_fixtures",
    "pass_at_k",
    "post_process",
    "project_registry",
    "read_predictions",
    "render",
    "score",
    "score_task",
    "score_tasks",
    "validate_file",
    "validate_task",
]


def __getattr__(name: str) -> Any:
    # The version too is read on first use: importing the package imports nothing else.
    module = "evalspec._version" if name == "__version__" else _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from evalspec._version import __version__ as __version__
    from evalspec.errors import (
        DuplicateNameError,
        EvalspecError,
        MigrationError,
        MissingDependencyError,
        PluginError,
        RegistryError,
        ScoringError,
        SpecVersionError,
        UndeclaredNameError,
        UnimplementedNameError,
        UnknownNameError,
    )
    from evalspec.hookspecs import hookimpl, hookspec
    from evalspec.model import (
        Category,
        ErrorRecord,
        FewShotExample,
        Metric,
        PostProcessRule,
        TaskSpec,
    )
    from evalspec.registry.build import Registry, build_registry, default_registry, project_registry
    from evalspec.rules import RULES
    from evalspec.scoring.passatk import pass_at_k
    from evalspec.scoring.postprocess import post_process
    from evalspec.scoring.predictions import PredictionProblem, Predictions, read_predictions
    from evalspec.scoring.render import render
    from evalspec.scoring.report import build_report, format_report
    from evalspec.scoring.scorer import TaskScore, score, score_task, score_tasks
    from evalspec.validation.fixtures import Fixtures, load_fixtures
    from evalspec.validation.validator import (
        LineResult,
        ValidationResult,
        iter_validate,
        validate_file,
        validate_task,
    )
