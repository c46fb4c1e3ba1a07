"""A test must test: a run whose tests never call into the program is ``fail``.

HumanEval's targets as published define ``def check(candidate): ...`` and
leave the ``check(entry_point)`` call to the harness; without it every
statement holds and nothing of the program ran. Such a run, and any other
whose tests neither call nor read anything of the program, fails with the
detail "the tests never called the program", at every tier.
"""

from __future__ import annotations

import pytest
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.sandbox import Limits, Sandbox
from evalspec.sandbox.driver import NEVER_CALLED

LIMITS = Limits(cpu_seconds=5, wall_seconds=10.0)
TIERS = available_tiers()
ADD = "def add(a, b):\n    return a + b\nLIMIT = 10\n"
WRONG = "def add(a, b):\n    return a - b\n"
CHECK = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"

VACUOUS = {
    "humaneval-check-never-called": CHECK,
    "pass": "pass",
    "comments-only": "# the tests go here\n",
    "stdlib-only": "import math\nassert math.isclose(math.pi, 3.14159, rel_tol=1e-3)\n",
    "names-it-but-never-calls": "f = add\nassert f is f\n",
    "unittest-without-calls": (
        "import unittest\n"
        "class T(unittest.TestCase):\n"
        "    def test_nothing(self):\n"
        "        self.assertTrue(True)\n"
        "unittest.main()\n"
    ),
}


@pytest.fixture(scope="module", params=TIERS)
def box(request: pytest.FixtureRequest) -> Sandbox:
    return sandbox_at(request.param, LIMITS)


@pytest.mark.parametrize("name", sorted(VACUOUS))
def test_tests_that_never_call_the_program_fail(box: Sandbox, name: str) -> None:
    for program in (ADD, WRONG):
        result = box.run(program, VACUOUS[name])
        assert result.status == "fail", (name, result)
        assert result.detail == NEVER_CALLED, (name, result.detail)


def test_a_blank_test_fails_without_running(box: Sandbox) -> None:
    for blank in ("", "  \n\t\n"):
        result = box.run(ADD, blank)
        assert result.status == "fail" and NEVER_CALLED in result.detail
        assert result.duration_seconds == 0.0  # nothing was started


def test_tests_that_call_or_read_the_program_are_judged_on_it(box: Sandbox) -> None:
    called = CHECK + "check(add)\n"
    assert box.run(ADD, called).status == "pass"
    assert box.run(WRONG, called).status == "fail"
    # A program value read as plain data is the program's too.
    assert box.run(ADD, "assert LIMIT == 10").status == "pass"
    assert box.run(ADD, "assert LIMIT == 11").status == "fail"
    # unittest.main() ending the test program after calls still passes.
    unit = (
        "import unittest\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
        "unittest.main()\n"
    )
    assert box.run(ADD, unit).status == "pass"


def test_the_program_cannot_count_as_called(box: Sandbox) -> None:
    # The program writes well-formed replies and requests on its pipes and
    # exports names: only calls the test process makes count.
    program = (
        "import os, json\n"
        "for fd in range(3, 12):\n"
        "    try:\n"
        "        os.write(fd, (json.dumps(['ok', 1]) + '\\n').encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "def add(a, b):\n"
        "    return a + b\n"
    )
    result = box.run(program, CHECK)
    assert result.status == "fail" and result.detail == NEVER_CALLED, result
