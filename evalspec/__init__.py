"""evalspec: the contract for LLM evaluation tasks.

``import evalspec`` is cheap: names are imported on first use, and no plugin
is loaded until a registry is needed.
"""

from __future__ import annotations


def _quiet_ctrl_c_while_the_command_starts() -> None:
    # Only in the ``evalspec`` command, never for a library user: until
    # evalspec.interrupts takes over, Ctrl-C ends the start-up with exit 130 and no
    # traceback. First thing in the package, so the window before it is Python's own.
    import os
    import sys

    argv = getattr(sys, "orig_argv", sys.argv)
    command = os.path.basename(sys.argv[0]) if sys.argv else ""
    as_module = "-m" in argv[:-1] and argv[argv.index("-m") + 1] == "evalspec"
    if command not in ("evalspec", "evalspec.exe") and not as_module:
        return
    import signal  # only in the command: with the enum module it imports, ~3 ms

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

__version__ = "0.1.0"

_EXPORTS = {
    "Category": "evalspec.model",
    "ErrorRecord": "evalspec.model",
    "FewShotExample": "evalspec.model",
    "Metric": "evalspec.model",
    "PostProcessRule": "evalspec.model",
    "TaskSpec": "evalspec.model",
    "hookimpl": "evalspec.hookspecs",
    "hookspec": "evalspec.hookspecs",
    "Registry": "evalspec.registry",
    "build_registry": "evalspec.registry",
    "default_registry": "evalspec.registry",
    "LineResult": "evalspec.validate",
    "ValidationResult": "evalspec.validate",
    "iter_validate": "evalspec.validate",
    "validate_file": "evalspec.validate",
    "validate_task": "evalspec.validate",
    "render": "evalspec.prompting",
    "post_process": "evalspec.postprocess",
    "Fixtures": "evalspec.fixtures",
    "load_fixtures": "evalspec.fixtures",
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
    "TaskScore": "evalspec.scoring",
    "score": "evalspec.scoring",
    "score_task": "evalspec.scoring",
    "score_tasks": "evalspec.scoring",
    "PredictionProblem": "evalspec.predictions",
    "Predictions": "evalspec.predictions",
    "read_predictions": "evalspec.predictions",
    "build_report": "evalspec.score_report",
    "format_report": "evalspec.score_report",
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
    "post_process",
    "read_predictions",
    "render",
    "score",
    "score_task",
    "score_tasks",
    "validate_file",
    "validate_task",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
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
    from evalspec.fixtures import Fixtures, load_fixtures
    from evalspec.hookspecs import hookimpl, hookspec
    from evalspec.model import (
        Category,
        ErrorRecord,
        FewShotExample,
        Metric,
        PostProcessRule,
        TaskSpec,
    )
    from evalspec.postprocess import post_process
    from evalspec.predictions import PredictionProblem, Predictions, read_predictions
    from evalspec.prompting import render
    from evalspec.registry import Registry, build_registry, default_registry
    from evalspec.rules import RULES
    from evalspec.score_report import build_report, format_report
    from evalspec.scoring import TaskScore, score, score_task, score_tasks
    from evalspec.validate import (
        LineResult,
        ValidationResult,
        iter_validate,
        validate_file,
        validate_task,
    )
