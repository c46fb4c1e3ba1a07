"""Testing tools for plugin authors and task authors: the public face of
hypothesis strategies (:mod:`evalspec.testing.strategies`), the conformance kit
(:mod:`evalspec.testing.conformance`) and the pytest plugin
(:mod:`evalspec.testing.pytest_plugin`, registered as ``pytest11``).

Names are imported on first use: the strategies import hypothesis (the
``hypothesis`` extra), and the pytest plugin imports this package in every pytest
session of a project that has evalspec installed.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "Case": "evalspec.testing.conformance",
    "ConformanceFailure": "evalspec.testing.conformance",
    "check_registry": "evalspec.testing.conformance",
    "conformance_cases": "evalspec.testing.conformance",
    "corpus": "evalspec.testing.conformance",
    "fresh_interpreter_check": "evalspec.testing.conformance",
    "installed_registry": "evalspec.testing.conformance",
    "metric_cases": "evalspec.testing.conformance",
    "rule_cases": "evalspec.testing.conformance",
    "MULTI_LINE_RULES": "evalspec.testing.strategies",
    "PARSE_RULES": "evalspec.testing.strategies",
    "WHITESPACE": "evalspec.testing.strategies",
    "StrategyError": "evalspec.testing.strategies",
    "any_text": "evalspec.testing.strategies",
    "broken_tasks": "evalspec.testing.strategies",
    "few_shot_examples": "evalspec.testing.strategies",
    "json_text": "evalspec.testing.strategies",
    "json_values": "evalspec.testing.strategies",
    "metadata": "evalspec.testing.strategies",
    "model_outputs": "evalspec.testing.strategies",
    "prompts": "evalspec.testing.strategies",
    "targets_for": "evalspec.testing.strategies",
    "task_ids": "evalspec.testing.strategies",
    "text_chars": "evalspec.testing.strategies",
    "valid_tasks": "evalspec.testing.strategies",
}

__all__ = [
    "MULTI_LINE_RULES",
    "PARSE_RULES",
    "WHITESPACE",
    "Case",
    "ConformanceFailure",
    "StrategyError",
    "any_text",
    "broken_tasks",
    "check_registry",
    "conformance_cases",
    "corpus",
    "few_shot_examples",
    "fresh_interpreter_check",
    "installed_registry",
    "json_text",
    "json_values",
    "metadata",
    "metric_cases",
    "model_outputs",
    "prompts",
    "rule_cases",
    "targets_for",
    "task_ids",
    "text_chars",
    "valid_tasks",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalspec.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from evalspec.testing.conformance import (
        Case,
        ConformanceFailure,
        check_registry,
        conformance_cases,
        corpus,
        fresh_interpreter_check,
        installed_registry,
        metric_cases,
        rule_cases,
    )
    from evalspec.testing.strategies import (
        MULTI_LINE_RULES,
        PARSE_RULES,
        WHITESPACE,
        StrategyError,
        any_text,
        broken_tasks,
        few_shot_examples,
        json_text,
        json_values,
        metadata,
        model_outputs,
        prompts,
        targets_for,
        task_ids,
        text_chars,
        valid_tasks,
    )
