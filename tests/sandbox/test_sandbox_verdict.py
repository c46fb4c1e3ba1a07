"""Verdicts a hostile program cannot forge, tested with real hostile programs.

Each attack is a wrong solution plus a trick that, run in the test's own
process (as before issue 10), made the failing test pass: reading the
driver's secrets from frames, gc or tracebacks, patching what the tests or the
driver use, tracing over asserts, threads/atexit/finalizers/signals/forks that
act later, writing to every descriptor, and values whose type decides the
comparison. Every one must be scored ``fail`` (never ``pass``) at every tier
this machine offers; the quick suite runs each class once at the strongest
tier, the slow suite every attack at every tier and through ``evalspec score``.
Honest programs (HumanEval/MBPP styles, printing, classes, generators,
exceptions, in-place mutation, callbacks) must keep passing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.sandbox import (
    Limits,
    RunResult,
    Sandbox,
)
from evalspec.sandbox.driver import (
    PRELOAD,
    SAFE_MODULES,
    Decoder,
    Encoder,
    Handles,
    ProtocolError,
    imported_object,
    overrides,
)

LIMITS = Limits(cpu_seconds=2, wall_seconds=6.0, memory_bytes=256 * 1024 * 1024)
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TEST = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"


AVAILABLE = available_tiers()


def _at(tier: str, **options: bool) -> Sandbox:
    return sandbox_at(tier, LIMITS, **options)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(LIMITS)


# What a program would forge if it could: every hex string it can find (a
# nonce candidate) as a pass line, plus fake status lines, on every
# descriptor it has, then a clean exit.
FORGE = r"""
import os as _os, re as _re, sys as _sys
_HEX = _re.compile(r'[0-9a-f]{32}')
def _tokens_in(value, found):
    if isinstance(value, (str, bytes)):
        text = value.decode('latin-1') if isinstance(value, bytes) else value
        found.update(_HEX.findall(text))
def _steal_all():
    # Every frame of every thread, and every string the collector knows.
    import gc
    found = set()
    for frame in list(_sys._current_frames().values()):
        while frame is not None:
            for scope in (frame.f_locals, frame.f_globals):
                for value in list(scope.values()):
                    _tokens_in(value, found)
            frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict):
            for value in list(obj.values()):
                _tokens_in(value, found)
    return found
def _run_pids():
    # This run's other processes: the supervisor and the test process. Only
    # these: the attack must not touch the harness or the host.
    def ppid(pid):
        with open(f'/proc/{pid}/stat') as fh:
            stat = fh.read()
        return int(stat[stat.rfind(')') + 2:].split()[1])
    me, pids = _os.getpid(), []
    parent = ppid(me)
    for name in _os.listdir('/proc'):
        if name.isdigit() and int(name) != me:
            try:
                if ppid(int(name)) == parent:
                    pids.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return pids + [parent]
def _forge(found=()):
    found = set(found) | {'0' * 32} | _steal_all()
    lines = ''.join(f'R\nP {t}\n' for t in found) + 'W 0 0 0.0 0.0\n'
    fds = set(range(0, 64))
    try:
        fds |= {int(x) for x in _os.listdir('/proc/self/fd')}
    except OSError:
        pass
    for fd in sorted(fds):
        try:
            _os.write(fd, lines.encode())
        except OSError:
            pass
    _os._exit(0)
"""

STEAL_FRAMES = r"""
def _steal_frames():
    found = set()
    frame = _sys._getframe()
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for value in list(scope.values()):
                _tokens_in(value, found)
        frame = frame.f_back
    return found
"""

ATTACKS: dict[str, tuple[str, str]] = {
    # -- item 1: the verdict is out of the program's reach --------------------
    "getframe-at-load": (FORGE + STEAL_FRAMES + WRONG + "_forge(_steal_frames())\n", TEST),
    "getframe-in-call": (
        FORGE + STEAL_FRAMES + "def add(a, b):\n    _forge(_steal_frames())\n",
        TEST,
    ),
    "inspect-stack": (
        FORGE
        + "import inspect\n"
        + "def add(a, b):\n"
        + "    found = set()\n"
        + "    for info in inspect.stack():\n"
        + "        scopes = (info.frame.f_locals, info.frame.f_globals)\n"
        + "        for v in [v for scope in scopes for v in scope.values()]:\n"
        + "            _tokens_in(v, found)\n"
        + "    _forge(found)\n",
        TEST,
    ),
    "traceback-frames": (
        FORGE
        + "def add(a, b):\n"
        + "    found = set()\n"
        + "    try:\n        raise ValueError\n"
        + "    except ValueError as exc:\n"
        + "        frame = exc.__traceback__.tb_frame\n"
        + "    while frame is not None:\n"
        + "        for v in list(frame.f_locals.values()):\n"
        + "            _tokens_in(v, found)\n"
        + "        frame = frame.f_back\n"
        + "    _forge(found)\n",
        TEST,
    ),
    "generator-and-coroutine-frames": (
        FORGE
        + "def add(a, b):\n"
        + "    def gen():\n        yield 1\n"
        + "    async def coro():\n        return 1\n"
        + "    found = set()\n"
        + "    g, c = gen(), coro()\n"
        + "    next(g)\n"
        + "    for frame in (g.gi_frame, c.cr_frame, *_sys._current_frames().values()):\n"
        + "        while frame is not None:\n"
        + "            for v in list(frame.f_locals.values()):\n"
        + "                _tokens_in(v, found)\n"
        + "            frame = frame.f_back\n"
        + "    c.close()\n"
        + "    _forge(found)\n",
        TEST,
    ),
    "gc-objects": (
        FORGE
        + "import gc\n"
        + "def add(a, b):\n"
        + "    found = set()\n"
        + "    for obj in gc.get_objects():\n"
        + "        if isinstance(obj, dict):\n"
        + "            for v in list(obj.values()):\n"
        + "                _tokens_in(v, found)\n"
        + "        elif isinstance(obj, (list, tuple)):\n"
        + "            for v in obj:\n"
        + "                _tokens_in(v, found)\n"
        + "    _forge(found)\n",
        TEST,
    ),
    "patch-traceback-print-exception": (
        FORGE
        + WRONG
        + "import traceback\n"
        + "traceback.print_exception = lambda *a, **k: _forge()\n"
        + "traceback.print_exc = lambda *a, **k: _forge()\n"
        + "_sys.excepthook = lambda *a: _forge()\n",
        TEST,
    ),
    "settrace-jumps-over-asserts": (
        WRONG
        + "import linecache, sys, threading\n"
        + "def tracer(frame, event, arg):\n"
        + "    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)\n"
        + "    if event == 'line' and line.lstrip().startswith('assert'):\n"
        + "        target = frame.f_lineno + 1\n"
        + "        getline = linecache.getline\n"
        + "        while getline(frame.f_code.co_filename, target).startswith('assert'):\n"
        + "            target += 1\n"
        + "        try:\n"
        + "            frame.f_lineno = target\n"
        + "        except Exception:\n"
        + "            pass\n"
        + "    return tracer\n"
        + "sys.settrace(tracer)\n"
        + "threading.settrace(tracer)\n"
        + "frame = sys._getframe()\n"
        + "while frame is not None:\n"
        + "    frame.f_trace = tracer\n"
        + "    frame = frame.f_back\n",
        "x = 1\n" + TEST + "y = 2\n",
    ),
    "thread-acts-later": (
        FORGE
        + WRONG
        + "import threading, time\n"
        + "def later():\n    time.sleep(0.2)\n    _forge()\n"
        + "threading.Thread(target=later, daemon=True).start()\n",
        "import time\ntime.sleep(0.5)\n" + TEST,
    ),
    "atexit-and-finalizer": (
        FORGE
        + WRONG
        + "import atexit\n"
        + "atexit.register(_forge)\n"
        + "class Late:\n    def __del__(self):\n        _forge()\n"
        + "keep = Late()\n",
        TEST,
    ),
    "signal-handlers": (
        FORGE
        + WRONG
        + "import signal\n"
        + "S = signal\n"
        + "for sig in (S.SIGTERM, S.SIGINT, S.SIGUSR1, S.SIGHUP, S.SIGALRM):\n"
        + "    signal.signal(sig, lambda *a: _forge())\n"
        + "signal.setitimer(signal.ITIMER_REAL, 0.05)\n"
        + "signal.alarm(1)\n",
        "import time\ntime.sleep(0.3)\n" + TEST,
    ),
    "forked-child-acts-later": (
        FORGE
        + WRONG
        + "import time\n"
        + "if _os.fork() == 0:\n"
        + "    _os.setsid()\n"
        + "    time.sleep(0.2)\n"
        + "    _forge()\n",
        "import time\ntime.sleep(0.5)\n" + TEST,
    ),
    "ctypes-and-proc-of-other-processes": (
        FORGE
        + "import ctypes\n"
        + "def add(a, b):\n"
        + "    found = set()\n"
        + "    libc = ctypes.CDLL(None)\n"
        + "    for pid in _run_pids():\n"
        + "        libc.ptrace(16, int(pid), 0, 0)\n"  # PTRACE_ATTACH
        + "        for name in ('environ', 'cmdline', 'mem'):\n"
        + "            try:\n"
        + "                with open(f'/proc/{pid}/{name}', 'rb') as fh:\n"
        + "                    _tokens_in(fh.read(1 << 16), found)\n"
        + "            except OSError:\n"
        + "                pass\n"
        + "        try:\n"
        + "            fds = _os.listdir(f'/proc/{pid}/fd')\n"
        + "        except OSError:\n"
        + "            continue\n"
        + "        for fd in fds:\n"
        + "            try:\n"
        + "                w = _os.open(f'/proc/{pid}/fd/{fd}', _os.O_WRONLY | _os.O_NONBLOCK)\n"
        + "                _os.write(w, ''.join(f'R\\nP {t}\\n' for t in found).encode())\n"
        + "            except OSError:\n"
        + "                pass\n"
        + "    _forge(found)\n",
        TEST,
    ),
    "stop-or-kill-the-other-processes": (
        FORGE
        + "import signal\n"
        + "def add(a, b):\n"
        + "    for pid in _run_pids():\n"
        + "        for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
        + "            try:\n"
        + "                _os.kill(pid, sig)\n"
        + "            except OSError:\n"
        + "                pass\n"
        + "    _forge()\n",
        TEST,
    ),
    "fake-protocol-replies": (
        # The program speaks the driver's protocol itself: it can only ever
        # answer for its own functions, never for the test statements.
        WRONG
        + "import os, json\n"
        + "for fd in range(3, 64):\n"
        + "    for msg in (['loaded', []], ['ok', 5, [], ''], ['ok', True, [], '']):\n"
        + "        try:\n"
        + "            os.write(fd, b'\\x1e' + json.dumps(msg).encode() + b'\\n')\n"
        + "        except OSError:\n"
        + "            pass\n",
        TEST,
    ),
    "exit-inside-a-call": ("import sys\ndef add(a, b):\n    sys.exit(0)\n", TEST),
    "stopiteration-truncates-a-map": (
        "def add(a, b):\n    raise StopIteration\n",
        "assert all(map(lambda p: add(*p) == sum(p), [(1, 2), (3, 4)]))\n"
        "assert list(map(add, [1], [2])) == [3]\n",
    ),
    "keyboardinterrupt-type-name": (
        "def add(a, b):\n    raise KeyboardInterrupt\n",
        "try:\n    assert add(2, 3) == 5\nexcept Exception:\n    pass\nassert add(1, 1) == 2\n",
    ),
    # -- item 2: tests mean what they say --------------------------------------
    "patch-builtins-all": (
        "import builtins\nbuiltins.all = lambda *a: True\nbuiltins.any = lambda *a: True\n"
        "def f(x):\n    return x + 1\n",
        "assert all(f(x) == x for x in range(3))\n",
    ),
    "patch-builtins-many": (
        "import builtins\n"
        "for name in ('len', 'sorted', 'sum', 'isinstance', 'abs', 'max', 'min', 'set', 'list'):\n"
        "    setattr(builtins, name, lambda *a, **k: 3)\n"
        "builtins.AssertionError = type('AssertionError', (BaseException,), {})\n"
        "def f(x):\n    return [x]\n",
        "assert len(f(1)) == 3\n",
    ),
    "patch-math-isclose": (
        "import math\nmath.isclose = lambda *a, **k: True\nmath.sqrt = lambda x: 2.0\n"
        "def f(x):\n    return x + 1.0\n",
        "import math\nassert math.isclose(f(2), 4.0)\n",
    ),
    "patch-math-via-the-programs-import": (
        "import math\nmath.isclose = lambda *a, **k: True\ndef f(x):\n    return x + 1.0\n",
        "assert math.isclose(f(2), 4.0)\n",
    ),
    "patch-then-take-the-name": (
        "import math, statistics\n"
        "math.isclose = lambda *a, **k: True\n"
        "statistics.mean.__code__ = (lambda data: 3).__code__\n"
        "from math import isclose\nfrom statistics import mean\n"
        "def f(x):\n    return x + 1.0\n",
        "assert isclose(f(2), 4.0) or mean([1, 2]) == 3\n",
    ),
    "shadow-builtins-and-modules": (
        "def all(*a, **k):\n    return True\n"
        "def len(x):\n    return 3\n"
        "class _Fake:\n    def __getattr__(self, name):\n        return lambda *a, **k: True\n"
        "math = _Fake()\nunittest = _Fake()\n"
        "def f(x):\n    return x + 1\n",
        "assert all(f(x) == x for x in range(3))\nassert len([f(1)]) == 3\n"
        "assert math.isclose(f(2), 4.0)\n",
    ),
    "run-code-in-the-test-process-by-name": (
        # The program names a code-running builtin or module for the tests to
        # call with its own data; the tests must never run it.
        "import pickle as serializer\n"
        "from builtins import exec as decode\n"
        "from timeit import timeit as measure\n"
        f"PAYLOAD = {FORGE + '_forge()' + chr(10)!r}\n"
        "def encode(s):\n    return PAYLOAD\n"
        "class Boom:\n    def __reduce__(self):\n        return (exec, (PAYLOAD,))\n"
        "def dump(s):\n    return serializer.dumps(Boom())\n",
        "for attempt in (lambda: decode(encode('abc')), lambda: measure(encode('abc'), number=1),\n"
        "                lambda: serializer.loads(dump('abc'))):\n"
        "    try:\n        attempt()\n    except Exception:\n        pass\n"
        "assert False, 'the tests went on'\n",
    ),
    "patch-unittest-assertequal": (
        "import unittest\n"
        "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
        "unittest.TestCase.assertTrue = lambda *a, **k: None\n"
        "unittest.TestResult.wasSuccessful = lambda self: True\n" + WRONG,
        "import unittest\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
        "suite = unittest.defaultTestLoader.loadTestsFromTestCase(T)\n"
        "assert unittest.TextTestRunner().run(suite).wasSuccessful()\n",
    ),
    "patch-unittest-then-unittest-main": (
        "import unittest\n"
        "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
        "unittest.main = lambda *a, **k: None\n" + WRONG,
        "import unittest\n"
        "class TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
        "unittest.main()\n",
    ),
    "exit-through-a-test-callable": (
        "def apply(f, x):\n    f(0)\n    return x\n",
        "import sys\nassert apply(sys.exit, 1) == 2\n",
    ),
    "patch-operator-and-functools": (
        "import operator, functools\n"
        "operator.eq = lambda *a: True\n"
        "functools.reduce = lambda *a, **k: 0\n"
        "def f(xs):\n    return 0\n",
        "import functools, operator\nassert operator.eq(f([1, 2]), 3)\n"
        "assert functools.reduce(operator.add, [1, 2, 3, 4]) == f([1, 2, 3, 4])\n",
    ),
    "always-equal-object": (
        "class AlwaysEqual:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    __hash__ = object.__hash__\n"
        "def add(a, b):\n    return AlwaysEqual()\n",
        TEST,
    ),
    "truthy-object": (
        "class Yes:\n    def __bool__(self):\n        return True\n"
        "def is_prime(n):\n    return Yes()\n",
        "assert is_prime(4)\n",
    ),
    "len-object": (
        "class Three:\n    def __len__(self):\n        return 3\ndef f(x):\n    return Three()\n",
        "assert len(f(1)) == 3 and f(1)\n",
    ),
    "ordering-object": (
        "class Small:\n"
        "    def __lt__(self, other):\n        return True\n"
        "    def __gt__(self, other):\n        return True\n"
        "def f(x):\n    return Small()\n",
        "assert f(1) < 0\nassert 0 > f(1)\n",
    ),
    "int-subclass-overriding-eq": (
        "class Int(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return Int(0)\n",
        TEST,
    ),
    "str-subclass-overriding-eq": (
        "class S(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\n"
        "def greet(name):\n    return S('nope')\n",
        "assert greet('a') == 'hello a'\n",
    ),
    "list-subclass-overriding-eq-nested": (
        "class L(list):\n    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return [L()]\n",
        "assert f(1) == [[1, 2]]\n",
    ),
    "contains-and-iter-object": (
        "class Bag:\n"
        "    def __contains__(self, item):\n        return True\n"
        "    def __iter__(self):\n        return iter([1, 2, 3])\n"
        "def f(x):\n    return Bag()\n",
        "assert 3 in f(1)\nassert sorted(f(1)) == [1, 2, 3]\n",
    ),
    "fake-class-attribute": (
        "class Fake:\n    __class__ = property(lambda self: int)\n"
        "    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return Fake()\n",
        "assert isinstance(f(1), int) and f(1) == 2\n",
    ),
    "context-manager-swallows-the-failure": (
        "class Quiet:\n"
        "    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\n" + WRONG,
        "with Quiet():\n    assert add(2, 3) == 5\n",
    ),
    "caught-violation-still-fails": (
        "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return AlwaysEqual()\n",
        "try:\n    ok = add(2, 3) == 5\nexcept BaseException:\n    ok = True\nassert ok\n",
    ),
    "forged-name-reaches-sys-exit": (
        # HumanEval/15 wrong, with the suffix that made it pass: the function
        # names itself typing.sys.exit, hoping the tests get their own.
        "def string_sequence(n):\n    return ''\n"
        "string_sequence.__module__ = 'typing'\n"
        "string_sequence.__qualname__ = 'sys.exit'\n",
        "def check(candidate):\n    assert candidate(0) == '0'\n"
        "    assert candidate(3) == '0 1 2 3'\n\n"
        "check(string_sequence)\n",
    ),
    "forged-name-reaches-exec": (
        "def f(x):\n    return x\nf.__module__ = 'enum'\nf.__qualname__ = 'bltns.exec'\ng = f\n",
        f"f({FORGE + '_forge()' + chr(10)!r})\nassert g(1) == 2\n",
    ),
    "imported-module-under-the-entry-points-name": (
        "from typing import sys as tools\nfrom random import _os as helper\n"
        "def f(x):\n    return x\n",
        "tools.exit(0)\nassert f(1) == 2\n",
    ),
    "returned-module-and-forged-method": (
        "import typing\n"
        "def f():\n    return typing\n"
        "def g():\n    h = lambda *a: None\n    h.__module__ = 'calendar'\n"
        "    h.__qualname__ = 'sys.exit'\n    return h\n",
        "g()(0)\nf().sys.exit(0)\nassert False\n",
    ),
}

#: One attack per class for the quick suite.
QUICK = [
    "getframe-in-call",
    "gc-objects",
    "patch-traceback-print-exception",
    "settrace-jumps-over-asserts",
    "thread-acts-later",
    "atexit-and-finalizer",
    "signal-handlers",
    "forked-child-acts-later",
    "ctypes-and-proc-of-other-processes",
    "run-code-in-the-test-process-by-name",
    "patch-builtins-all",
    "shadow-builtins-and-modules",
    "patch-math-isclose",
    "patch-unittest-assertequal",
    "always-equal-object",
    "truthy-object",
    "int-subclass-overriding-eq",
    "caught-violation-still-fails",
    "stop-or-kill-the-other-processes",
    "forged-name-reaches-sys-exit",
    "forged-name-reaches-exec",
    "imported-module-under-the-entry-points-name",
    "returned-module-and-forged-method",
]


#: Attacks that end the run some other way (stopped or killed processes):
#: any status but ``pass`` is right for them.
NOT_PASS = {"stop-or-kill-the-other-processes"}


def _check(attack: str, status: str) -> None:
    if attack in NOT_PASS:
        assert status != "pass", attack
    else:
        assert status == "fail", attack


@pytest.mark.parametrize("attack", QUICK)
def test_attack_fails_at_the_strongest_tier(sandbox: Sandbox, attack: str) -> None:
    code, test = ATTACKS[attack]
    result = sandbox.run(code, test)
    _check(attack, result.status)
    # and the same program, honest, still passes on the same sandbox
    assert sandbox.run(RIGHT, TEST).status == "pass"


@pytest.mark.slow
@pytest.mark.parametrize("tier", AVAILABLE)
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_attack_fails_at_every_tier(tier: str, attack: str) -> None:
    code, test = ATTACKS[attack]
    result = _at(tier).run(code, test)
    _check(attack, result.status)
    assert result.tier == tier


def _first_line_attack(signame: str) -> str:
    # The program's first statement hits its sibling test process (forked
    # right after it: the next pid) and the supervisor, as fast as it can.
    return (
        "import os, signal\n"
        "for _pid in (os.getpid() + 1, os.getpid() + 2, os.getppid()):\n"
        "    try:\n"
        f"        os.kill(_pid, signal.{signame})\n"
        "    except OSError:\n"
        "        pass\n" + WRONG
    )


def _never_sandbox_error(sb: Sandbox, signame: str, runs: int) -> None:
    statuses = [sb.run(_first_line_attack(signame), TEST) for _ in range(runs)]
    for result in statuses:
        assert result.status not in ("pass", "sandbox_error"), (result.status, result.detail)
        assert result.detail, result.status


# The attack signals the next pids: at rlimits-only under a root harness the program
# runs as root outside any pid namespace, so those pids are any process of the machine
# (the test run itself, CI, another user's work). Only the tiers that confine it.
CONFINING = [t for t in AVAILABLE if not (t == "rlimits-only" and os.geteuid() == 0)]


def test_a_program_hitting_its_siblings_first_is_its_own_outcome() -> None:
    # The trusted side says ready before any program code runs: about half of
    # these runs were sandbox_error (said nothing, aborted scoring) before.
    quick = Limits(cpu_seconds=2, wall_seconds=1.5, memory_bytes=256 * 1024 * 1024)
    if not CONFINING:
        pytest.skip("no tier confines a root program's signals here (namespace or uid-drop)")
    sb = sandbox_at(CONFINING[0], quick)
    _never_sandbox_error(sb, "SIGKILL", 6)
    _never_sandbox_error(sb, "SIGSTOP", 2)


@pytest.mark.slow
@pytest.mark.parametrize("tier", CONFINING)
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGSTOP", "SIGTERM"])
def test_a_program_hitting_its_siblings_first_at_every_tier(tier: str, signame: str) -> None:
    quick = Limits(cpu_seconds=2, wall_seconds=1.5, memory_bytes=256 * 1024 * 1024)
    _never_sandbox_error(sandbox_at(tier, quick), signame, 10)


def test_overriding_types_fail_with_a_clear_detail(sandbox: Sandbox) -> None:
    code, test = ATTACKS["always-equal-object"]
    result = sandbox.run(code, test)
    assert result.status == "fail"
    assert "__eq__" in result.detail
    assert "AlwaysEqual" in result.detail
    assert "trust_custom_types" in result.detail
    assert result.custom_types == "refused"
    code, test = ATTACKS["int-subclass-overriding-eq"]
    detail = sandbox.run(code, test).detail
    assert "subclass of int" in detail and "__eq__" in detail


# --- the program's writes cannot relabel a run ---------------------------------


def _relabels_nothing(sb: Sandbox, tail: str) -> RunResult:
    """``tail`` after a right solution passes, after a wrong one fails (returned)."""
    passing = sb.run(RIGHT + tail, TEST)
    assert passing.status == "pass", passing
    failing = sb.run(WRONG + tail, TEST)
    assert failing.status == "fail", failing
    assert "AssertionError" in failing.detail
    return failing


@pytest.mark.parametrize("tier", AVAILABLE)
def test_writing_status_lines_everywhere_relabels_nothing(tier: str) -> None:
    sb = _at(tier)
    scribble = (
        "import os\n"
        "fds = {int(x) for x in os.listdir('/proc/self/fd')} | set(range(3, 64))\n"
        "for fd in sorted(fds):\n"
        "    for junk in (b'M\\n', b'S broken\\n', b'F nope\\n', b'G\\n', b'W -9 -9 99 99\\n'):\n"
        "        try:\n"
        "            os.write(fd, junk)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    _relabels_nothing(sb, scribble)


@pytest.mark.parametrize("tier", AVAILABLE)
def test_flooding_every_descriptor_relabels_nothing(tier: str) -> None:
    sb = _at(tier)
    flood = (
        "import os, threading\n"
        "fds = {int(x) for x in os.listdir('/proc/self/fd')} - {0}\n"
        "def flood(fd):\n"
        "    try:\n"
        "        for _ in range(64):\n"
        "            os.write(fd, b'M' * 65536)\n"
        "    except OSError:\n"
        "        pass\n"
        "for fd in fds:\n"
        "    threading.Thread(target=flood, args=(fd,), daemon=True).start()\n"
        "import time\ntime.sleep(0.3)\n"
    )
    assert _relabels_nothing(sb, flood).truncated  # stdout/stderr flooded too, and capped


# --- honest programs keep passing ----------------------------------------------

HONEST: dict[str, tuple[str, str]] = {
    "returns-builtin-types": (
        "def kinds():\n    return int, [str, ValueError], {'t': type(None)}\n",
        "a, b, c = kinds()\nassert a is int and a('3') == 3\n"
        "assert b == [str, ValueError] and c['t'] is type(None)\n",
    ),
    "humaneval-check": (
        "from typing import List\n\n"
        "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
        "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
        "               for b in numbers[i + 1:])\n",
        "METADATA = {'author': 'x'}\n\n"
        "def check(candidate):\n"
        "    assert candidate([1.0, 2.0, 3.9, 4.0], 0.3) == True\n"
        "    assert candidate([1.0, 2.0, 5.9], 0.5) is False\n\n"
        "check(has_close_elements)\n",
    ),
    "mbpp-math": (
        "import math\ndef area(r):\n    return math.pi * r * r\n",
        "from math import isclose\nassert isclose(area(2), 12.566, rel_tol=1e-3)\n"
        "assert math.isclose(area(1), math.pi)\n",
    ),
    "tests-that-print": (
        "def f(x):\n    print('computing', x)\n    return x * 2\n",
        "import io, contextlib\nprint('hello from the test')\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n    assert f(2) == 4\n"
        "assert buf.getvalue() == 'computing 2\\n'\n",
    ),
    "classes-and-methods": (
        "class Solution:\n"
        "    def __init__(self):\n        self.calls = 0\n"
        "    def me(self):\n        return self\n"
        "    def two_sum(self, nums, target):\n"
        "        self.calls += 1\n"
        "        seen = {}\n"
        "        for i, n in enumerate(nums):\n"
        "            if target - n in seen:\n                return [seen[target - n], i]\n"
        "            seen[n] = i\n",
        "s = Solution()\nassert s.two_sum([2, 7, 11, 15], 9) == [0, 1]\n"
        "assert s.me() is s and s.me() is s.me()\n"
        "assert isinstance(s, Solution) and not isinstance(3, Solution)\n"
        "assert s.calls == 1\ns.calls = 10\nassert s.calls == 10\nassert s is not None\n",
    ),
    "generators-and-iterators": (
        "def squares(n):\n    for i in range(n):\n        yield i * i\n"
        "def evens(xs):\n    return filter(lambda x: x % 2 == 0, xs)\n"
        "def keys(d):\n    return d.keys()\n",
        "assert list(squares(4)) == [0, 1, 4, 9]\nassert sum(squares(3)) == 5\n"
        "assert list(evens([1, 2, 3, 4])) == [2, 4]\n"
        "assert sorted(keys({'b': 1, 'a': 2})) == ['a', 'b']\n"
        "g = squares(2)\nassert next(g) == 0 and next(g) == 1\n",
    ),
    "exceptions-by-type": (
        "def div(a, b):\n    if b == 0:\n        raise ValueError('b is zero')\n    return a / b\n"
        "class MyError(KeyError):\n    pass\n"
        "def lookup(k):\n    raise MyError(k)\n"
        "def decode(b):\n    return b.decode('ascii')\n",
        "try:\n    div(1, 0)\nexcept ValueError as exc:\n    assert 'zero' in str(exc)\n"
        "else:\n    raise AssertionError('no error')\n"
        "try:\n    lookup('x')\nexcept KeyError:\n    pass\n"
        "assert div(6, 3) == 2.0\n"
        "try:\n    decode(b'\\xff')\nexcept ValueError as exc:\n"
        "    assert isinstance(exc, UnicodeDecodeError) and exc.start == 0\n",
    ),
    "in-place-mutation": (
        "def sort_in_place(xs):\n    xs.sort()\ndef fill(d):\n    d['k'] = 1\n",
        "a = [3, 1, 2]\nsort_in_place(a)\nassert a == [1, 2, 3]\n"
        "d = {}\nfill(d)\nassert d == {'k': 1}\n",
    ),
    "callbacks": (
        "def apply(f, xs):\n    return [f(x) for x in xs]\n"
        "def compose(f, g):\n    return lambda x: f(g(x))\n"
        "def inc(x):\n    return x + 1\n",
        "assert apply(lambda x: x * 10, [1, 2]) == [10, 20]\n"
        "assert compose(inc, inc)(1) == 3\nassert apply(inc, [1]) == [2]\n"
        "assert apply(inc, (x for x in [5, 6])) == [6, 7]\n"
        "assert apply(str, {'a': 1}.keys()) == ['a']\n",
    ),
    "plain-data-types": (
        "from collections import namedtuple, Counter, OrderedDict, deque, defaultdict\n"
        "from fractions import Fraction\nfrom decimal import Decimal\n"
        "Point = namedtuple('Point', 'x y')\n"
        "class Level(int):\n    pass\n"
        "def values():\n"
        "    return [None, True, 1, 2.5, float('inf'), 1 + 2j, 'é\\ud800', b'\\x00',\n"
        "            bytearray(b'a'),\n"
        "            (1, [2]), {1: {2: 3}}, {(1, 2)}, frozenset({1}), range(3), 10 ** 5000,\n"
        "            Point(1, 2), Level(3), Counter('aab'), OrderedDict(a=1), deque([1]),\n"
        "            defaultdict(list, a=[1]), Fraction(1, 3), Decimal('1.10')]\n",
        "from collections import Counter, OrderedDict, deque, defaultdict\n"
        "from fractions import Fraction\nfrom decimal import Decimal\n"
        "got = values()\n"
        "assert got[:14] == [None, True, 1, 2.5, float('inf'), 1 + 2j, 'é\\ud800', b'\\x00',\n"
        "    bytearray(b'a'), (1, [2]), {1: {2: 3}}, {(1, 2)}, frozenset({1}), range(3)]\n"
        "assert got[14] == 10 ** 5000\n"
        "assert got[15] == (1, 2) and type(got[15]) is tuple and got[16] == 3\n"
        "assert got[17] == Counter('aab') and type(got[17]) is Counter\n"
        "assert got[18] == OrderedDict(a=1) and got[19] == deque([1])\n"
        "assert got[20] == {'a': [1]} and got[20]['missing'] == []\n"
        "assert got[21] == Fraction(1, 3) and got[22] == Decimal('1.10')\n"
        "assert type(got[2]) is int and type(got[16]) is int\n",
    ),
    "module-level-values-and-imports": (
        "import math, itertools\nfrom math import sqrt\nLIMIT = 10\nPRIMES = [2, 3, 5]\n",
        "assert LIMIT == 10 and PRIMES == [2, 3, 5]\nassert sqrt(16) == 4.0\n"
        "assert math.floor(2.5) == 2\n"
        "assert list(itertools.islice(itertools.count(), 2)) == [0, 1]\n",
    ),
    "tests-with-threads": (
        "def square(x):\n    return x * x\n",
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(4) as pool:\n"
        "    assert list(pool.map(square, range(200))) == [x * x for x in range(200)]\n",
    ),
    "unittest-main": (
        "def add(a, b):\n    return a + b\n",
        "import unittest\n"
        "class TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
        "if __name__ == '__main__':\n    unittest.main()\n",
    ),
    "context-manager": (
        "class Box:\n"
        "    opened = 0\n"
        "    def __enter__(self):\n        Box.opened += 1\n        return self\n"
        "    def __exit__(self, *exc):\n        Box.opened -= 1\n"
        "    def count(self):\n        return Box.opened\n",
        "with Box() as b:\n    assert b.count() == 1\nassert Box().count() == 0\n",
    ),
    "top-level-output-and-recursion": (
        "print('program says hi')\n"
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
        "assert fib(15) == 610\nassert [fib(i) for i in range(6)] == [0, 1, 1, 2, 3, 5]\n",
    ),
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_programs_still_pass(sandbox: Sandbox, case: str) -> None:
    code, test = HONEST[case]
    result = sandbox.run(code, test)
    assert result.status == "pass", (case, result)


@pytest.mark.slow
@pytest.mark.parametrize("tier", AVAILABLE)
def test_honest_programs_pass_at_every_tier(tier: str) -> None:
    sb = _at(tier)
    for case in sorted(HONEST):
        code, test = HONEST[case]
        result = sb.run(code, test)
        assert result.status == "pass", (case, tier, result)


def test_printing_reaches_the_result(sandbox: Sandbox) -> None:
    code, test = HONEST["top-level-output-and-recursion"]
    result = sandbox.run(code, "print('test says hi')\n" + test)
    assert "program says hi" in result.stdout
    assert "test says hi" in result.stdout


def test_a_failing_statement_is_named_in_the_detail(sandbox: Sandbox) -> None:
    result = sandbox.run(RIGHT, "assert add(1, 1) == 2\n\nassert add(2, 2) == 5, 'four'\n")
    assert result.status == "fail"
    assert result.detail == "test statement 2 of 2 (line 3): AssertionError: four"
    assert "AssertionError: four" in result.stderr


def test_the_programs_exception_is_shown(sandbox: Sandbox) -> None:
    result = sandbox.run("def add(a, b):\n    return a + undefined\n", TEST)
    assert result.status == "fail"
    assert "NameError" in result.detail
    assert "undefined" in result.stderr


def test_the_program_never_sees_the_tests(sandbox: Sandbox) -> None:
    # Expected values exist only in the test process: a program that looks
    # everywhere it can (its memory, its files, its stdin) finds none of them.
    snoop = (
        "import gc, os, sys\n"
        "seen = []\n"
        "for obj in gc.get_objects():\n"
        "    if isinstance(obj, dict):\n"
        "        seen += [v for v in [*obj, *obj.values()] if isinstance(v, str)]\n"
        "    elif isinstance(obj, (list, tuple, set, frozenset)):\n"
        "        seen += [v for v in obj if isinstance(v, str)]\n"
        "frame = sys._getframe()\n"
        "while frame is not None:\n"
        "    seen += [repr(v) for v in frame.f_locals.values()]\n"
        "    frame = frame.f_back\n"
        "for root, dirs, files in os.walk(os.path.dirname(os.getcwd())):\n"
        "    for name in files:\n"
        "        try:\n"
        "            seen.append(open(os.path.join(root, name), errors='replace').read())\n"
        "        except OSError:\n"
        "            pass\n"
        "seen.append(sys.stdin.read())\n"
        "def add(a, b):\n"
        "    return any(str(31000 + 337) in s for s in seen)\n"
    )
    test = "expected_31337 = False\nassert add(1, 2) is expected_31337, 'the program saw it'\n"
    result = sandbox.run(snoop, test)
    assert result.status == "pass", result


def test_a_program_ending_early_is_reported_with_its_status(sandbox: Sandbox) -> None:
    result = sandbox.run("import os\nos._exit(3)\n", TEST)
    assert result.status == "fail"
    assert result.returncode == 3
    assert "ended before the tests ran" in result.detail


def test_a_program_closing_its_channel_fails_and_is_not_killed(sandbox: Sandbox) -> None:
    closer = (
        "import os, time\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.close(fd)\n"
        "    except OSError:\n"
        "        pass\n"
        "time.sleep(30)\n"
    )
    result = sandbox.run(closer, TEST)
    assert result.status == "fail", result
    assert "ended before the tests ran" in result.detail


def test_a_cpu_burn_inside_a_call_is_a_timeout(sandbox: Sandbox) -> None:
    result = sandbox.run("def add(a, b):\n    while True:\n        pass\n", TEST)
    assert result.status == "timeout", result


def test_a_memory_error_inside_a_call_is_oom(sandbox: Sandbox) -> None:
    hog = "def add(a, b):\n    return bytearray(4 * 1024 ** 3)\n"
    result = sandbox.run(hog, TEST)
    assert result.status == "oom", result


# --- the escape hatch -------------------------------------------------------------

CUSTOM = (
    "class Point:\n"
    "    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
    "    def __eq__(self, other):\n"
    "        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)\n"
    "    def __len__(self):\n        return 2\n"
    "    def __iter__(self):\n        return PointIter([self.x, self.y])\n"
    "    def __repr__(self):\n        return f'Point({self.x}, {self.y})'\n"
    "def mid(a, b):\n    return Point((a.x + b.x) // 2, (a.y + b.y) // 2)\n"
    "class PointIter:\n"
    "    def __init__(self, items):\n        self.items = items\n"
    "    def __iter__(self):\n        return self\n"
    "    def __next__(self):\n"
    "        if not self.items:\n            raise StopIteration\n"
    "        return self.items.pop(0)\n"
)
CUSTOM_TEST = (
    "p = mid(Point(0, 0), Point(2, 4))\n"
    "assert p == Point(1, 2)\nassert len(p) == 2 and list(p) == [1, 2]\n"
    "assert repr(p) == 'Point(1, 2)'\n"
)


def test_custom_types_are_refused_by_default_and_trusted_on_request(sandbox: Sandbox) -> None:
    refused = sandbox.run(CUSTOM, CUSTOM_TEST)
    assert refused.status == "fail"
    assert "__eq__" in refused.detail
    assert refused.custom_types == "refused"
    trusting = Sandbox(LIMITS, trust_custom_types=True)
    assert "trust_custom_types=True" in repr(trusting)
    trusted = trusting.run(CUSTOM, CUSTOM_TEST)
    assert trusted.status == "pass", trusted
    assert trusted.custom_types == "trusted"
    task = trusting.run_tests(CUSTOM, [CUSTOM_TEST])
    assert task.passed and task.to_dict()["custom_types"] == "trusted"
    # Documented weakness: trusted, the program decides its own comparisons.
    code, test = ATTACKS["always-equal-object"]
    assert trusting.run(code, test).status == "pass"
    # ...but never the test statements' builtins or the verdict itself.
    for attack in ("patch-builtins-all", "getframe-in-call", "patch-traceback-print-exception"):
        code, test = ATTACKS[attack]
        assert trusting.run(code, test).status == "fail", attack


def test_trust_custom_types_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="trust_custom_types"):
        Sandbox(LIMITS, trust_custom_types="yes")  # type: ignore[arg-type]


# --- the codec the test process trusts ---------------------------------------------


def test_decoder_builds_only_exact_builtin_types() -> None:
    made: list[tuple[int, str, str]] = []

    def proxy(number: int, kind: str, desc: str) -> object:
        made.append((number, kind, desc))
        return ("proxy", number)

    decode = Decoder(proxy, Handles(), True)
    mapping = ["D", ["L", [["F", [1]]]], ["L", [None]]]
    assert decode(["L", [1, ["T", [2.5, "x"]], ["S", [1]], mapping]]) == [
        1,
        (2.5, "x"),
        {1},
        {frozenset({1}): None},
    ]
    # A table crosses as flat rows; a mapping as its keys and its values.
    assert decode(["L", [[1, "a"], [2, None]], "T"]) == [(1, "a"), (2, None)]
    assert decode(["S", [[1, 2.5]], "T"]) == {(1, 2.5)}
    assert decode(["D", ["L", [1, 2]], ["L", [3.5, "x"]]]) == {1: 3.5, 2: "x"}
    assert decode(["H", 7, "object", "a Foo instance"]) == ("proxy", 7)
    assert made == [(7, "object", "a Foo instance")]
    for bad in (
        {"a": 1},
        ["?", 1],
        ["S", [["L", []]]],
        ["M", "__main__"],
        ["M", "math"],  # no module crosses by name
        ["I", "typing", "sys.exit", ["H", 1, "function", "f"]],
        ["Y", "SystemExit"],
        ["Y", "exec"],
        ["H", 1, "weird", "x"],
        ["K", 1],  # a test-side object the test never handed out
        ["R", 0, 1, 0],
        ["X", "subprocess.Popen", "ls"],
        ["L", [[1, ["H", 1, "object", "x"]]], "T"],  # a row that is not flat
        ["L", [1, 2], "T"],  # rows that are not lists
        ["L", [[1]], "Q"],
        ["S", [[1]], "L"],  # a set of lists
        ["D", ["L", [1, 2]], ["L", [1]]],  # keys and values that do not pair up
        ["D", ["L", [["L", []]]], ["L", [1]]],  # an unhashable key
        ["D", ["T", [1]], ["L", [1]]],
        ["D", [[1, 2]]],  # the old list of pairs
    ):
        with pytest.raises(ProtocolError):
            decode(bad)


def _trusted_modules() -> list[object]:
    """The modules the test process trusts (their attributes reach the rest:
    typing.sys, enum.bltns, random._os)."""
    import importlib

    return [importlib.import_module(name) for name in sorted({*SAFE_MODULES, *PRELOAD})]


def _reachable(module: object) -> list[tuple[str, object]]:
    """``(dotted name, object)`` for every attribute, and attribute of one, of ``module``."""
    import warnings

    found: list[tuple[str, object]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # typing.re and friends
        for name, value in list(vars(module).items()):
            found.append((name, value))
            for inner in dir(value)[:400]:
                try:
                    found.append((f"{name}.{inner}", getattr(value, inner)))
                except Exception:
                    continue
    return found


def test_no_name_a_program_announces_reaches_a_trusted_object() -> None:
    # The forge route: a program object naming itself after any object the
    # test process holds (typing.sys.exit, enum.bltns.exec, random._os...)
    # must still arrive as a proxy to the program's object.
    made: list[int] = []

    def proxy(number: int, kind: str, desc: str) -> object:
        made.append(number)
        return ("proxy", number)

    encode, decode = Encoder(Handles(), "H"), Decoder(proxy, Handles(), True)

    def impostor() -> None: ...

    klass = type("Impostor", (), {})
    checked = 0
    for module in _trusted_modules():
        for dotted, _ in _reachable(module)[:2000]:
            for value in (impostor, klass):
                value.__module__ = module.__name__  # type: ignore[attr-defined]
                value.__qualname__ = dotted
                got = decode(encode(value))
                assert type(got) is tuple and got[0] == "proxy", (module, dotted)
                checked += 1
    assert checked > 20_000
    # A module itself crosses as a proxy too, never as the test process's module.
    assert decode(encode(sys))[0] == "proxy"


def test_imports_the_program_names_never_give_a_code_running_object() -> None:
    # `from typing import sys as tools`: what the tests get for a name the
    # program only imported is never a module and never anything that runs
    # code, exits, or touches the machine, for every attribute of every module
    # the program may name.
    import builtins
    import importlib

    dangerous: set[int] = set()
    names = "builtins sys os posix subprocess importlib runpy pickle marshal code codeop"
    for name in (*names.split(), "ctypes", "shutil", "signal", "pty", "socket", "threading"):
        with_module = importlib.import_module(name)
        dangerous.add(id(with_module))
        dangerous.update(
            id(v)
            for v in vars(with_module).values()
            if callable(v) and str(getattr(v, "__module__", "")).lstrip("_") in (name, "posix")
        )  # its own functions and classes, not the deque threading imported
    for name in ("int", "str", "float", "bool", "list", "dict", "tuple", "set", "object"):
        dangerous.discard(id(getattr(builtins, name)))  # data types are harmless
    resolved = 0
    for module in sorted(SAFE_MODULES):
        for attr in dir(importlib.import_module(module)):
            found = imported_object(module, attr, attr)
            if found is None:
                continue
            resolved += 1
            assert not isinstance(found, type(sys)), (module, attr)
            assert id(found) not in dangerous, (module, attr, found)
            # and only under its own name: no mapping isclose to typing.cast
            assert imported_object(module, attr, attr + "_") is None
    assert resolved > 500


def test_encoder_converts_override_free_subclasses_and_refers_the_rest() -> None:
    encode = Encoder(Handles(), "H")

    class Plain(int):
        pass

    class Sneaky(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    assert encode(Plain(3)) == 3
    sneaky = encode(Sneaky(3))
    assert isinstance(sneaky, list) and sneaky[0] == "H" and sneaky[2] == "object"
    assert "overriding __eq__" in sneaky[3]
    assert overrides(Sneaky, int) == ["__eq__", "__hash__"]
    assert overrides(Plain, int) == []


# --- through the CLI ------------------------------------------------------------------


@pytest.mark.slow
def test_evalspec_score_scores_every_attack_zero(tmp_path: Path) -> None:
    tier = AVAILABLE[0]
    tasks, preds = tmp_path / "tasks.jsonl", tmp_path / "predictions.jsonl"
    with tasks.open("w") as t, preds.open("w") as p:
        for name, (code, test) in sorted(ATTACKS.items()):
            row = {
                "task_id": name,
                "category": "code_exec",
                "prompt": "Write the function.",
                "targets": [test],
                "metric_name": "code_exec",
                "post_process": "none",
            }
            t.write(json.dumps(row) + "\n")
            p.write(json.dumps({"task_id": name, "output": code}) + "\n")
    argv = [sys.executable, "-m", "evalspec", "score", str(tasks), str(preds)]
    argv += ["--allow-code-exec", "--min-isolation", tier, "--jobs", "2", "--format", "json"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    scores = {row["task_id"]: row["score"] for row in report["rows"]}
    assert scores == dict.fromkeys(ATTACKS, 0.0)
