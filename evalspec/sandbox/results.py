"""Verdicts of sandboxed runs."""

from __future__ import annotations

from typing import Literal

import attrs

Status = Literal["pass", "fail", "timeout", "killed", "oom", "sandbox_error"]

#: Every status a run can end in. ``sandbox_error`` means the sandbox could not
#: set itself up; it says nothing about the program and must never be scored 0.
STATUSES: tuple[Status, ...] = ("pass", "fail", "timeout", "killed", "oom", "sandbox_error")


@attrs.frozen
class RunResult:
    """The verdict of one program (extracted code followed by one test program).

    ``returncode`` is the program's exit status when it ended before the
    tests did, else the test process's (0 when every test statement held, 1
    when one failed); negative: killed by that signal; the sandbox launcher's
    when neither is known.
    ``truncated`` is true when stdout or stderr went over the output cap.
    ``detail`` says why the status is what it is, in one line.
    ``custom_types`` is the comparison policy the run used: ``"refused"`` (a
    test that compares or truth-tests a value of a program-defined type
    fails) or ``"trusted"`` (those operations were delegated to the program,
    which then decides them: weaker, see ``Sandbox(trust_custom_types=...)``).
    """

    status: Status
    returncode: int | None
    stdout: str
    stderr: str
    truncated: bool
    duration_seconds: float
    tier: str
    detail: str = ""
    cpu_seconds: float | None = None
    python: str = ""
    custom_types: str = "refused"

    @property
    def passed(self) -> bool:
        """True only for ``status == "pass"``."""
        return self.status == "pass"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict of every field."""
        return attrs.asdict(self)


@attrs.frozen
class TaskResult:
    """The verdict of one task: its code run against each of its test programs.

    ``results`` holds one :class:`RunResult` per test program that was run; a
    run stops at the first test that does not pass, so there may be fewer
    results than tests. ``passed`` is true only when every test passed.
    """

    results: tuple[RunResult, ...]
    tier: str
    tests: int
    custom_types: str = "refused"

    @property
    def passed(self) -> bool:
        """True when every test program ran and passed."""
        return len(self.results) == self.tests and all(r.passed for r in self.results)

    @property
    def status(self) -> str:
        """``pass``, or the status of the first run that did not pass."""
        for r in self.results:
            if not r.passed:
                return r.status
        return "pass" if self.passed else "sandbox_error"

    @property
    def sandbox_error(self) -> bool:
        """True when a run failed to set up: the task has no verdict at all."""
        return any(r.status == "sandbox_error" for r in self.results)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict: the verdict, the tier and every run."""
        return {
            "passed": self.passed,
            "status": self.status,
            "tier": self.tier,
            "tests": self.tests,
            "custom_types": self.custom_types,
            "results": [r.to_dict() for r in self.results],
        }
