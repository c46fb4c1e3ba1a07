"""Worker slots: a run forked by a slot's zygote after another sees nothing of it.

Each slot keeps one pre-started interpreter (and, as root, one uid) across
runs (:mod:`evalspec.sandbox.slots`); these tests run real programs at every
tier this machine offers, one after the other in the same slot, and look for
what the first could have left to the second: files, environment, patched
modules, processes, System V IPC, the uid's state, and the zygote's memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.sandbox import Limits, Sandbox, slots
from evalspec.sandbox.uids import UID_RANGE

IS_ROOT = os.geteuid() == 0
AVAILABLE = available_tiers()
LIMITS = Limits(cpu_seconds=5, wall_seconds=20.0)
SOLUTION = "def add(a, b):\n    return a + b\n"
TEST = "assert add(2, 3) == 5\n"
#: Appended to a probing program, with CALLS as its test: a test must call the program.
DONE = "\ndef done():\n    return True\n"
CALLS = "assert done()\n"
#: Where a program below the namespace tier can write outside its directory.
SHARED = ("/tmp", "/dev/shm", "/var/tmp")

LEAVE = """
import builtins, ctypes, json, os, sys, time
T = {token!r}
for place in (os.getcwd(), os.environ.get("HOME", "."), *{shared!r}):
    try:
        with open(os.path.join(place, T), "w") as fh:
            fh.write(T)
    except OSError:
        pass
os.environ["LEFT_" + T] = T
os.putenv("LEFT2_" + T, T)
builtins.LEFT = T
json.LEFT = T
sys.modules["left_" + T] = json
keep = [T * 1000 for _ in range(100)]
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget({key}, 4096, 0o1666) if {shared!r} else -1  # IPC_CREAT | 0666
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        libc.prctl(15, T[:15].encode(), 0, 0, 0)  # PR_SET_NAME: findable in /proc
        for fd in range(3):
            os.close(fd)
        while True:
            time.sleep(0.05)
    os._exit(0)
os.wait()
time.sleep(0.2)
print("uid", os.getuid(), "shm", shm)
"""

LOOK = """
import builtins, json, os, sys
T = {token!r}
found = []
for place in (os.getcwd(), os.environ.get("HOME", "."), *{shared!r}):
    if os.path.exists(os.path.join(place, T)):
        found.append("file:" + place)
if any(T in k or T in v for k, v in os.environ.items()):
    found.append("env")
if hasattr(builtins, "LEFT") or hasattr(json, "LEFT"):
    found.append("patched")
if any(T in name for name in sys.modules):
    found.append("module")
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{{pid}}/comm") as fh:
                if fh.read().strip() == T[:15]:
                    found.append("process:" + pid)
        except OSError:
            pass
try:
    with open("/proc/sysvipc/shm") as fh:
        if any(row.split()[0] == str({key}) for row in fh.readlines()[1:]):
            found.append("shm")
except OSError:
    pass
print("uid", os.getuid())
print("found", *found)
"""


def _idle_zygotes(box: Sandbox) -> set[int]:
    """The pids of the idle zygotes that run ``box``'s programs."""
    plan = box._plan
    return {
        held.process.pid for held in slots.idle_slots() if held.key[:2] == (plan.tier, plan.python)
    }


def _mothers(box: Sandbox) -> set[int]:
    """The pids of the interpreters whose forks are ``box``'s slots' zygotes."""
    plan = box._plan
    return {
        mother.process.pid
        for mother in slots.mothers()
        if mother.key[:2] == (plan.tier, plan.python)
    }


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("PPid:")).split()[1])


def _live_zygotes(box: Sandbox) -> set[int]:
    """The pids of ``box``'s idle zygotes that are still running, as their
    pidfds say (an idle slot killed by an earlier test stays listed until a run
    picks it up; its pid may since be another process's)."""
    plan = box._plan
    return {
        held.process.pid
        for held in slots.idle_slots()
        if held.key[:2] == (plan.tier, plan.python) and held.process.poll() is None
    }


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_second_run_in_the_same_slot_sees_nothing_of_the_first(tier: str) -> None:
    box = sandbox_at(tier, LIMITS)
    assert box.run(SOLUTION, TEST).passed  # a slot exists and is idle
    before = _idle_zygotes(box)
    token = "slot" + uuid.uuid4().hex[:20]
    key = int(token[-7:], 16) + 1
    # rlimits-only as root writes the host's shared places (and IPC) as root:
    # nothing scrubs those there, slots or not (docs/sandbox.md says so).
    shared = SHARED if tier != "rlimits-only" else ()
    try:
        first = box.run(LEAVE.format(token=token, shared=shared, key=key) + DONE, CALLS)
        assert first.passed, first
        assert _idle_zygotes(box) == before  # the same slot's zygote ran it
        second = box.run(LOOK.format(token=token, shared=shared, key=key) + DONE, CALLS)
        assert second.passed, second
        assert _idle_zygotes(box) == before
    finally:
        for place in SHARED:
            Path(place, token).unlink(missing_ok=True)
    assert second.stdout.splitlines()[-1] == "found", second.stdout
    uid_first = int(first.stdout.split()[1])
    uid_second = int(second.stdout.split()[1])
    if IS_ROOT and tier != "rlimits-only":
        # The slot kept its uid: the scrub between runs is what the test shows.
        assert uid_first == uid_second
        assert uid_first in UID_RANGE


def _memory_of(pid: int) -> bytes:
    """Every readable private mapping of ``pid`` (root reads a non-dumpable process)."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            span, perms = fields[0], fields[1]
            if not perms.startswith("r") or (len(fields) > 5 and fields[5].startswith("[v")):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except OSError:
                continue
    return b"".join(chunks)


@pytest.mark.skipif(not IS_ROOT, reason="reading another process's memory needs root")
@pytest.mark.parametrize("tier", AVAILABLE)
def test_the_zygote_never_holds_anything_of_a_run(tier: str) -> None:
    # A fork can only inherit what its zygote holds: after a run, neither its
    # program, nor its tests, nor what it printed is in the zygote's memory.
    box = sandbox_at(tier, LIMITS)
    token = uuid.uuid4().hex
    program = f"MARK = {token[:16]!r} + {token[16:]!r}\nprint(MARK)\n" + SOLUTION
    test = f"assert add(2, 3) == 5  # {token[::-1]}\n"
    result = box.run(program, test)
    assert result.passed, result
    assert token in result.stdout
    zygotes = _idle_zygotes(box)
    assert zygotes
    assert _mothers(box)
    for pid in zygotes | _mothers(box):
        memory = _memory_of(pid)
        assert len(memory) > 1_000_000  # the scan really read the interpreter
        assert token[:16].encode() not in memory
        assert token.encode() not in memory
        assert token[::-1].encode() not in memory


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_killed_zygote_is_replaced(tier: str) -> None:
    box = sandbox_at(tier, LIMITS)
    assert box.run(SOLUTION, TEST).passed
    killed = _idle_zygotes(box)
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    for _ in range(3):
        result = box.run(SOLUTION, TEST)
        assert result.passed, result
    # A fresh zygote ran them (killed ones not used yet may still be listed).
    assert _idle_zygotes(box) - killed


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_keys_slots_are_forks_of_one_started_interpreter(tier: str) -> None:
    # A new slot costs a fork of its mother, not an interpreter's start-up:
    # however many slots the runs needed, one interpreter was started.
    box = sandbox_at(tier, LIMITS)
    results = box.map([(SOLUTION, [TEST])] * 8, jobs=2)
    assert all(result.passed for result in results), results
    zygotes = _live_zygotes(box)
    assert len(zygotes) >= 2  # 2 jobs keep up to 4 runs in flight, each on a slot
    (mother,) = _mothers(box)
    assert _parent(mother) == os.getpid()
    assert {_parent(pid) for pid in zygotes} == {mother}


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_killed_mother_is_replaced(tier: str) -> None:
    box = sandbox_at(tier, LIMITS)
    assert box.run(SOLUTION, TEST).passed
    plan = box._plan
    (started,) = [m for m in slots.mothers() if m.key[:2] == (plan.tier, plan.python)]
    mother = started.process.pid
    os.kill(mother, signal.SIGKILL)
    started.process.wait()  # dead before the next run looks
    for held in slots.idle_slots():  # so the next run needs a new slot
        if held.key[:2] == (plan.tier, plan.python):
            held.process.kill()
            held.process.wait(timeout=10)
    for _ in range(3):
        result = box.run(SOLUTION, TEST)
        assert result.passed, result
    (replacement,) = _mothers(box)
    assert replacement != mother
    assert {_parent(pid) for pid in _live_zygotes(box)} == {replacement}


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_killed_zygote_is_seen_to_end_through_its_pidfd(tier: str) -> None:
    # The harness is not a zygote's parent: its pidfd is how it kills the
    # zygote and sees it end.
    box = sandbox_at(tier, LIMITS)
    assert box.run(SOLUTION, TEST).passed
    plan = box._plan
    held = next(
        h
        for h in slots.idle_slots()
        if h.key[:2] == (plan.tier, plan.python) and h.process.poll() is None
    )
    held.process.kill()
    assert held.process.wait(timeout=10) == -9
    assert held.process.poll() == -9
    assert box.run(SOLUTION, TEST).passed  # and a fresh slot replaces it


def _pidfds() -> list[int]:
    """This process's descriptors that are pidfds."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:[pidfd]":
                found.append(int(name))
    return found


@pytest.mark.parametrize("tier", AVAILABLE)
def test_the_harness_holds_its_zygotes_pidfds_close_on_exec(tier: str) -> None:
    # They arrive from the mother over a socket, and CPython's recv_fds drops
    # its MSG_CMSG_CLOEXEC flag: without more, a process the harness starts
    # later with close_fds=False would hold a handle on a zygote.
    box = sandbox_at(tier, LIMITS)
    assert box.run(SOLUTION, TEST).passed
    plan = box._plan
    idle = [h for h in slots.idle_slots() if h.key[:2] == (plan.tier, plan.python)]
    # A zygote seen to end has had its pidfd closed; each live one holds one.
    live = [h for h in idle if h.process.poll() is None]
    assert live  # the run left its slot idle
    pidfds = _pidfds()
    assert len(pidfds) >= len(live)
    assert [fd for fd in pidfds if os.get_inheritable(fd)] == []


def _run_harness(script: str, tier: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (formatted with this directory and ``tier``) as a harness
    process of its own; it must exit 0."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(script.format(tests=str(Path(__file__).parent), tier=tier)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


CROWDED_HARNESS = """
import os, resource, sys
sys.path.insert(0, {tests!r})
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), max(hard, 2048)))
held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # numbers past select's 1024
from sandbox_tiers import sandbox_at
from evalspec.sandbox import Limits, slots
box = sandbox_at({tier!r}, Limits(cpu_seconds=5, wall_seconds=20.0))
results = box.map([("def add(a, b):\\n    return a + b\\n", ["assert add(2, 3) == 5"])] * 4, jobs=2)
print(*(result.status for result in results))
print(min(held), max(held), *(h.control.fileno() for h in slots.idle_slots()))
"""


@pytest.mark.skipif(not IS_ROOT, reason="raising the descriptor limit past 1024 may need root")
@pytest.mark.parametrize("tier", AVAILABLE)
def test_slots_work_in_a_harness_holding_descriptors_past_1024(tier: str) -> None:
    # The slots wait on their sockets and pidfds with poll, not select (which
    # refuses a descriptor numbered 1024 or more).
    proc = _run_harness(CROWDED_HARNESS, tier)
    statuses, numbers = proc.stdout.splitlines()
    assert statuses.split() == ["pass"] * 4
    assert all(int(n) >= 1024 for n in numbers.split()[2:])


HARNESS = """
import sys
sys.path.insert(0, {tests!r})
from sandbox_tiers import sandbox_at
from evalspec.sandbox import Limits, slots
box = sandbox_at({tier!r}, Limits(cpu_seconds=5, wall_seconds=20.0))
assert box.run("def add(a, b):\\n    return a + b\\n", "assert add(2, 3) == 5").passed
for held in slots.idle_slots():
    print(held.process.pid, held.lease.uid if held.lease else -1, flush=True)
for mother in slots.mothers():
    print(mother.process.pid, -1, flush=True)
"""


@pytest.mark.parametrize("tier", AVAILABLE)
def test_slots_end_with_the_harness(tier: str) -> None:
    # The zygotes see their control socket close and exit, then their mother
    # does; the uids go back.
    proc = _run_harness(HARNESS, tier)
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert rows
    for pid, uid in ((int(a), int(b)) for a, b in rows):
        until = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < until:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}"), f"zygote {pid} outlived its harness"
        if uid >= 0:
            lock = next(
                os.path.join(d, str(uid))
                for d in ("/run/evalspec-sandbox-uids", "/var/lib/evalspec-sandbox-uids")
                if os.path.exists(os.path.join(d, str(uid)))
            )
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again
            finally:
                os.close(fd)


KILLED_HARNESS = """
import sys
sys.path.insert(0, {tests!r})
from sandbox_tiers import sandbox_at
from evalspec.sandbox import Limits, slots
box = sandbox_at({tier!r}, Limits(cpu_seconds=60, wall_seconds=120.0))
assert box.run("x = 1\\n", "assert x == 1").passed
print(*(held.process.pid for held in slots.idle_slots()),
      *(mother.process.pid for mother in slots.mothers()), flush=True)
box.run({program!r}, "pass")
"""

NAMED_SLEEPER = """
import ctypes, time
ctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)  # PR_SET_NAME
time.sleep(120)
"""


def _named(name: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as fh:
                    if fh.read().strip() == name:
                        found.append(int(pid))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_run_in_flight_ends_when_its_harness_is_killed(tier: str) -> None:
    # SIGKILL leaves the harness no chance to clean up: the zygote sees its
    # control socket close and kills the run it was following, then exits.
    name = "sl" + uuid.uuid4().hex[:13]
    script = KILLED_HARNESS.format(
        tests=str(Path(__file__).parent), tier=tier, program=NAMED_SLEEPER.format(name=name)
    )
    harness = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert harness.stdout is not None
        zygotes = [int(pid) for pid in harness.stdout.readline().split()]
        assert zygotes
        until = time.monotonic() + 60
        while not _named(name) and time.monotonic() < until:
            time.sleep(0.05)
        assert _named(name), "the sleeping program never started"
    finally:
        harness.kill()
        harness.wait()
    until = time.monotonic() + 10
    while (_named(name) or any(os.path.exists(f"/proc/{z}") for z in zygotes)) and (
        time.monotonic() < until
    ):
        time.sleep(0.05)
    assert _named(name) == [], "the run outlived its killed harness"
    assert not [z for z in zygotes if os.path.exists(f"/proc/{z}")]


def test_a_forked_harness_child_does_not_share_its_parents_slots() -> None:
    # Two processes writing one zygote's socket would interleave their runs.
    box = sandbox_at(AVAILABLE[0], LIMITS)
    assert box.run(SOLUTION, TEST).passed
    assert slots.idle_slots()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, str(len(slots.idle_slots())).encode())
        os._exit(0)
    os.close(write)
    seen = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    assert seen == b"0"
    assert slots.idle_slots()  # the parent keeps its own


KEYS = """
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY = {{"x86_64": 248, "aarch64": 217}}[platform.machine()]
KEYCTL = {{"x86_64": 250, "aarch64": 219}}[platform.machine()]
T = {token!r}
RINGS = {rings!r}
if {leave!r}:
    for ring in RINGS:
        name = f"{{T}}{{ring}}".encode()
        assert libc.syscall(ADD_KEY, b"user", name, b"left", 4, ring) > 0, ring
found = []
for ring in RINGS:
    for kept in RINGS:
        name = f"{{T}}{{kept}}".encode()
        if libc.syscall(KEYCTL, 10, ring, b"user", name, 0) >= 0:  # KEYCTL_SEARCH
            found.append(f"{{kept}}@{{ring}}")
print("found", *found)
"""


def _harness_has_key(name: str) -> bool:
    import ctypes
    import platform

    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = {"x86_64": 250, "aarch64": 219}[platform.machine()]
    return bool(libc.syscall(keyctl, 10, -3, b"user", name.encode(), 0) >= 0)


@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_key_left_in_the_kernel_keyrings_reaches_no_later_run(tier: str) -> None:
    # Keys outlive processes: in the session keyring a run inherits (the zygote's,
    # so every later run of the slot; or the harness's), or in the user keyrings
    # of a uid the slot keeps. rlimits-only shares the harness's uid, so only its
    # session keyring is the run's own there (docs/sandbox.md).
    rings = (-3,) if tier == "rlimits-only" else (-3, -4, -5)  # session, user, user session
    box = sandbox_at(tier, LIMITS)
    assert box.run(SOLUTION, TEST).passed
    before = _idle_zygotes(box)
    token = "key" + uuid.uuid4().hex[:20]
    first = box.run(KEYS.format(token=token, rings=rings, leave=True) + DONE, CALLS)
    assert first.passed, first
    # The first run sees its own keys: the probe works.
    assert {f"{r}@{r}" for r in rings} <= set(first.stdout.split()[1:]), first.stdout
    second = box.run(KEYS.format(token=token, rings=rings, leave=False) + DONE, CALLS)
    assert second.passed, second
    assert _idle_zygotes(box) == before  # the same slot ran both
    assert second.stdout.split() == ["found"], second.stdout
    assert not _harness_has_key(f"{token}-3")
