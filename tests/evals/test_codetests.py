"""lint's `test_never_calls_program`: a code_exec target that names nothing of the program."""

from __future__ import annotations

import pytest

from evalspec.evals.lint.codetests import RULE, untested_targets

NEVER = {
    "humaneval-check-never-called": "def check(candidate):\n    assert candidate(1) == 2\n",
    "pass": "pass",
    "blank": "",
    "comments-only": "# tests go here\n",
    "stdlib-only": "import math\nassert math.pi > 3\n",
    "stdlib-module-not-imported": "assert math.pi > 3\n",
    "builtins-only": "assert len([1]) == 1\nassert all([])\n",
    "own-class": "import unittest\nclass T(unittest.TestCase):\n    pass\nunittest.main()\n",
}
CALLS = {
    "humaneval-with-call": "def check(candidate):\n    assert candidate(1) == 2\ncheck(f)\n",
    "assert-call": "assert add(2, 3) == 5",
    "reads-a-value": "assert LIMIT == 10",
    "unittest-calls": (
        "import unittest\nclass T(unittest.TestCase):\n"
        "    def test_f(self):\n        self.assertEqual(f(1), 2)\nunittest.main()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NEVER))
def test_a_target_that_never_calls_the_program_is_reported(name: str) -> None:
    [found] = untested_targets(7, "t1", ["assert f(1) == 2", NEVER[name]])
    assert (found.line, found.rule, found.field, found.task_id) == (7, RULE, "targets[1]", "t1")
    assert "never calls or reads the program" in found.message


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_target_that_calls_or_reads_the_program_is_not(name: str) -> None:
    assert untested_targets(1, "t1", [CALLS[name]]) == []


def test_a_target_that_does_not_parse_is_left_to_the_run() -> None:
    assert untested_targets(1, "t1", ["def check(:\n"]) == []
