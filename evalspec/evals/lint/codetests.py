"""The lint check on tasks whose metric runs the prediction as code (a metric
registered with ``sandboxed=True``): each target is a test program, and one that
names nothing it does not define itself can never call into the program.

HumanEval's targets as published are ``def check(candidate): ...`` without the
``check(ENTRY_POINT)`` call its harness appends: every statement holds and the
program never runs. The sandbox fails such a run ("the tests never called the
program"); lint says so before any run, for every program the task will ever see.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalspec.evals.lint.report import record
from evalspec.model import ErrorRecord

RULE = "test_never_calls_program"


def untested_targets(line: int, task_id: str, targets: Sequence[str]) -> list[ErrorRecord]:
    """One record per target test program that takes no name from the program
    (a target that does not parse is left to the run, which reports it)."""
    # The sandbox's driver decides at run time which names come from the
    # program; lint asks it the same question of the text.
    from evalspec.sandbox.driver import names_from_the_program

    out = []
    for i, test in enumerate(targets):
        names = names_from_the_program(test)
        if names is None or names:
            continue
        out.append(
            record(
                line,
                RULE,
                f"targets[{i}]",
                f"target {i} never calls or reads the program: every name it uses is its own, "
                "a builtin or an import, so no run of it tests anything (HumanEval's "
                "`def check(candidate): ...` needs the `check(ENTRY_POINT)` call after it)",
                task_id,
            )
        )
    return out
