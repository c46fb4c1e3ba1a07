"""Isolation, cleanup and non-interference of the code_exec sandbox, with real hostile programs.

Every test runs real programs in real subprocesses at every tier this machine
offers (as root here: namespace, uid-drop and rlimits-only). Each test that
looks at what runs leave behind gives the sandbox a temporary directory of its
own (``private_tmp``), so other suites running concurrently on the machine
cannot disturb the check.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_helpers import signals_at_their_defaults
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.sandbox import Limits, Sandbox, cgroups
from evalspec.sandbox.removal import mounts_under, remove_tree
from evalspec.sandbox.tiers import jail_binds
from evalspec.sandbox.uids import UID_RANGE, lease, processes_of

IS_ROOT = os.geteuid() == 0
SOLUTION = "def add(a, b):\n    return a + b\n"
TEST = "assert add(2, 3) == 5\n"
# A program of top-level statements says it ran to its end; its test reads
# that (a test that reads nothing of the program fails: it tested nothing).
RAN = "ran_to_the_end = True\n"
RAN_TEST = "assert ran_to_the_end is True\n"
SMALL = Limits(cpu_seconds=2, wall_seconds=8.0, memory_bytes=256 * 1024 * 1024)
#: Enough for a program writing thousands of entries on a loaded disk.
ROOMY = Limits(cpu_seconds=10, wall_seconds=30.0, memory_bytes=256 * 1024 * 1024)


AVAILABLE = available_tiers()
#: Tiers where each run has a uid of its own (the harness is root).
OWN_UID = [t for t in AVAILABLE if t != "rlimits-only"] if IS_ROOT else []
needs_namespace = pytest.mark.skipif(
    "namespace" not in AVAILABLE, reason="the namespace tier is not available here"
)


def _box(tier: str, limits: Limits = SMALL) -> Sandbox:
    return sandbox_at(tier, limits)


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary directory only this test's runs use; it must be empty afterwards."""
    path = Path(tempfile.mkdtemp(prefix="evalspec-isolation-test-"))
    path.chmod(0o755)  # a dropped uid must be able to reach its working directory
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    yield path
    monkeypatch.undo()
    # evalspec-<euid> is the user's private directory (the cache key, locks), made on
    # purpose by the command and kept across runs: not the sandbox's.
    left = sorted(set(os.listdir(path)) - {f"evalspec-{os.geteuid()}"})
    remove_tree(str(path))
    assert left == [], f"the sandbox left {left} in its temporary directory"


def _daemon(name: str) -> str:
    """A program whose daemon (double fork, setsid, no descriptors) is named ``name``."""
    return (
        "import os, time, ctypes\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.closerange(0, 1024)\n"
        f"        ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.4)\n"
    )


def _no_process_mentions(text: str) -> bool:
    """No process on the machine has ``text`` in its command line or name."""
    needle = text.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for field in ("cmdline", "comm"):
            try:
                if needle in Path(f"/proc/{name}/{field}").read_bytes():
                    return False
            except OSError:
                continue
    return True


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_disk_budget_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="disk_bytes"):
        Limits(disk_bytes=bad)  # type: ignore[arg-type]
    assert Limits().disk_bytes == 128 * 1024 * 1024


# --- item 3: nothing a program leaves behind breaks the harness ---------------

LITTER = """
import os, socket, stat
top = os.getcwd()
# 1,200 levels deep (by descriptor: the path grows beyond what open() takes)
fd = os.open(".", os.O_RDONLY)
for _ in range(1200):
    os.mkdir("d" * 40, dir_fd=fd)
    nxt = os.open("d" * 40, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nxt
os.close(fd)
os.makedirs("locked/inner/deeper")
open("locked/inner/f", "w").close()
os.chmod("locked/inner", 0)
os.chmod("locked", 0)
os.mkfifo("fifo")
s = socket.socket(socket.AF_UNIX)
s.bind("sock")
os.symlink("loop", "loop")
os.symlink(".", "self")
os.symlink("/", "root")
open(os.fsencode(top) + b"/bad\\xff\\n name", "w").close()
os.mkdir("many")
for i in range(3000):
    open(f"many/{i}", "w").close()
open("readonly", "w").close()
os.chmod("readonly", 0)
os.chmod(".", 0o500)   # even the working directory
"""


@pytest.mark.parametrize("tier", AVAILABLE)
def test_litter_is_removed_and_the_run_reported(tier: str, private_tmp: Path) -> None:
    box = _box(tier, ROOMY)
    started = time.monotonic()
    result = box.run(SOLUTION + LITTER, TEST)
    print(tier, "litter run and cleanup", time.monotonic() - started, "s")
    assert result.status == "pass", result
    assert "cleanup" not in result.detail
    assert box.run(SOLUTION, TEST).status == "pass"


@pytest.mark.parametrize("tier", AVAILABLE)
def test_immutable_files_are_removed_where_they_can_be_made(tier: str, private_tmp: Path) -> None:
    # Only root may set the immutable flag: the program succeeds at rlimits-only
    # (run as root), is refused elsewhere; either way nothing stays behind.
    chattr = (
        "import fcntl, struct, os\n"
        "os.makedirs('frozen/dir')\n"
        "open('frozen/dir/f', 'w').close()\n"
        "made = []\n"
        "for path, flag in (('frozen/dir/f', 0x10), ('frozen/dir', 0x10), ('frozen', 0x20)):\n"
        "    fd = os.open(path, os.O_RDONLY)\n"
        "    try:\n"
        "        old = struct.unpack('l', fcntl.ioctl(fd, 0x80086601, bytes(8)))[0]\n"
        "        fcntl.ioctl(fd, 0x40086602, struct.pack('l', old | flag))\n"
        "        made.append(path)\n"
        "    except OSError:\n"
        "        pass\n"
        "    os.close(fd)\n"
        "print('immutable', made)\n"
    )
    result = _box(tier).run(SOLUTION + chattr, TEST)
    assert result.status == "pass", result
    assert "cleanup" not in result.detail


def _canary_and_top(tmp_path: Path) -> tuple[Path, Path]:
    """A directory that must survive a removal, and a tree to remove."""
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep").write_text("x")
    return canary, Path(tempfile.mkdtemp(prefix="evalspec-removal-test-"))


@pytest.mark.skipif(not IS_ROOT, reason="only root can make files immutable or mount")
def test_removal_clears_attributes_and_detaches_mounts(tmp_path: Path) -> None:
    # The harness side alone, with what a root program could leave: immutable
    # and append-only files and directories, a bind mount of a directory that
    # must survive, a mount over the top directory itself.
    import fcntl
    import struct

    canary, top = _canary_and_top(tmp_path)
    (top / "frozen" / "dir").mkdir(parents=True)
    (top / "frozen" / "dir" / "f").write_text("x")
    (top / "log").write_text("x")
    (top / "mnt").mkdir()
    subprocess.run(["mount", "--bind", str(canary), str(top / "mnt")], check=True)
    for path, flag in (
        (top / "frozen/dir/f", 0x10),
        (top / "frozen/dir", 0x10),
        (top / "log", 0x20),
    ):
        fd = os.open(path, os.O_RDONLY)
        try:
            flags = struct.unpack("l", fcntl.ioctl(fd, 0x80086601, b"\0" * 8))[0]
            fcntl.ioctl(fd, 0x40086602, struct.pack("l", flags | flag))
        except OSError as exc:
            pytest.skip(f"this file system keeps no attributes: {exc}")
        finally:
            os.close(fd)
    with pytest.raises(PermissionError):
        (top / "frozen/dir/f").unlink()  # the attributes are real
    assert not remove_tree(str(top))
    assert not top.exists()
    assert (canary / "keep").read_text() == "x"
    # a mount over the top directory itself: detached, the mounted tree kept
    top.mkdir()
    subprocess.run(["mount", "--bind", str(canary), str(top)], check=True)
    assert not remove_tree(str(top))
    assert not top.exists()
    assert (canary / "keep").read_text() == "x"


@pytest.mark.skipif(not IS_ROOT, reason="only root can mount")
def test_a_mount_whose_path_mountinfo_escapes_is_detached(tmp_path: Path) -> None:
    # /proc/self/mountinfo writes space, tab, newline and backslash as octal
    # escapes: a mount point named with them is found and detached all the same.
    canary, top = _canary_and_top(tmp_path)
    point = top / "a dir\\with\tescapes"
    point.mkdir()
    subprocess.run(["mount", "--bind", str(canary), str(point)], check=True)
    assert mounts_under(str(top)) == [str(point)]
    assert not remove_tree(str(top))
    assert not top.exists()
    assert (canary / "keep").read_text() == "x"


@pytest.mark.skipif(not IS_ROOT, reason="only a root program can mount")
def test_a_bind_mount_in_the_workdir_is_never_followed(tmp_path: Path, private_tmp: Path) -> None:
    # A root program (rlimits-only) mounts a host directory into its working
    # directory: removal must detach it, never delete through it.
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep").write_text("x")
    program = (
        "import os, subprocess\n"
        "os.mkdir('m')\n"
        f"subprocess.run(['mount', '--bind', {str(canary)!r}, 'm'], check=False)\n"
    )
    result = _box("rlimits-only").run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    assert (canary / "keep").read_text() == "x"


@pytest.mark.slow
@pytest.mark.parametrize("tier", AVAILABLE)
def test_huge_litter_is_removed(tier: str, private_tmp: Path) -> None:
    # 4,000 levels of 200-byte names (far beyond PATH_MAX) and 40,000 files.
    program = (
        "import os\n"
        "os.mkdir('many')\n"
        "for i in range(40000):\n"
        "    open(f'many/{i}', 'w').close()\n"
        "fd = os.open('.', os.O_RDONLY)\n"
        "for _ in range(4000):\n"
        "    os.mkdir('n' * 200, dir_fd=fd)\n"
        "    nxt = os.open('n' * 200, os.O_RDONLY, dir_fd=fd)\n"
        "    os.close(fd)\n"
        "    fd = nxt\n"
    )
    # Generous limits: outside the namespace tier's tmpfs this is kernel time on the
    # host's file system, which was measured at 0.5-19 s for the same program on one
    # machine (it grows with the dentry cache); what is tested is the clean-up.
    limits = Limits(cpu_seconds=120, wall_seconds=240.0, disk_bytes=512 * 1024 * 1024)
    result = _box(tier, limits).run(SOLUTION + program, TEST)
    assert result.status == "pass", result


@pytest.mark.slow
@pytest.mark.parametrize("tier", AVAILABLE)
def test_map_reports_every_run_whatever_is_left(tier: str, private_tmp: Path) -> None:
    box = _box(tier, ROOMY)
    tasks = [(SOLUTION + LITTER, [TEST]), (SOLUTION, [TEST]), ("x = (", [TEST])]
    statuses = [t.results[0].status for t in box.map(tasks, jobs=2)]
    assert statuses == ["pass", "pass", "fail"]


def _write_tasks(tmp: Path, solutions: dict[str, str]) -> tuple[Path, Path]:
    tasks, preds = tmp / "tasks.jsonl", tmp / "predictions.jsonl"
    rows = [
        {
            "task_id": task_id,
            "category": "code_exec",
            "prompt": "Write add.",
            "targets": [TEST],
            "metric_name": "code_exec",
            "post_process": "none",
        }
        for task_id in solutions
    ]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds.write_text(
        "".join(json.dumps({"task_id": k, "output": v}) + "\n" for k, v in solutions.items())
    )
    return tasks, preds


SCORE = (sys.executable, "-m", "evalspec", "score", "--allow-code-exec")


def _score_env(private_tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(private_tmp)}


def test_score_survives_litter_and_leaves_nothing(tmp_path: Path, private_tmp: Path) -> None:
    tasks, preds = _write_tasks(tmp_path, {"litter": SOLUTION + LITTER, "plain": SOLUTION})
    proc = subprocess.run(
        [*SCORE, str(tasks), str(preds), "--jobs", "2", "--format", "json", "--bootstrap", "0"],
        capture_output=True,
        text=True,
        env=_score_env(private_tmp),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = {r["task_id"]: r["score"] for r in json.loads(proc.stdout)["rows"]}
    assert rows == {"litter": 1.0, "plain": 1.0}


# --- item 4: runs never interfere ---------------------------------------------

FORKER = """
import os, time
children = 0
try:
    for _ in range(300):
        pid = os.fork()
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        children += 1
except OSError:
    pass
print("children", children)
time.sleep(4)
"""

NEIGHBOUR = """
import os, time
time.sleep(1.0)  # the forker next door has taken its budget by now
pids = []
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        time.sleep(1.5)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    assert os.waitpid(pid, 0)[1] == 0
"""


@pytest.mark.skipif(not OWN_UID, reason="a uid per run needs the harness to be root")
@pytest.mark.parametrize("tier", OWN_UID)
def test_a_forking_neighbour_changes_no_verdict(tier: str, private_tmp: Path) -> None:
    # 60 processes per run; the forker takes its whole budget, and three
    # neighbours fork 20 children each at the same time. Were the budget the
    # uid's, the neighbours' fork() would fail (EAGAIN).
    limits = Limits(cpu_seconds=5, wall_seconds=15.0, processes=60)
    box = _box(tier, limits)
    tasks = [(FORKER + RAN, [RAN_TEST])] + [(SOLUTION + NEIGHBOUR, [TEST])] * 3
    parallel = box.map(tasks, jobs=4)
    assert int(parallel[0].results[0].stdout.split()[1]) >= 50  # it took its whole budget
    assert [t.passed for t in parallel] == [True, True, True, True], parallel


@pytest.mark.slow
@pytest.mark.skipif(not OWN_UID, reason="a uid per run needs the harness to be root")
@pytest.mark.parametrize("tier", OWN_UID)
def test_jobs_never_change_a_verdict(tier: str, private_tmp: Path) -> None:
    limits = Limits(cpu_seconds=5, wall_seconds=15.0, processes=60)
    box = _box(tier, limits)
    wrong = "def add(a, b):\n    return a - b\n"
    tasks = [
        (FORKER + RAN, [RAN_TEST]),
        (SOLUTION + NEIGHBOUR, [TEST]),
        (wrong + NEIGHBOUR, [TEST]),
        ("import os\nos.kill(-1, 9)\n" + SOLUTION, [TEST]),
        (SOLUTION + NEIGHBOUR, [TEST]),
    ]
    verdicts = {jobs: [t.passed for t in box.map(tasks, jobs=jobs)] for jobs in (1, 2, 5)}
    assert verdicts[1] == [True, True, False, False, True], verdicts
    assert verdicts[2] == verdicts[1] and verdicts[5] == verdicts[1], verdicts


@pytest.mark.skipif(not OWN_UID, reason="a uid per run needs the harness to be root")
@pytest.mark.parametrize("tier", OWN_UID)
def test_kill_minus_one_reaches_only_its_own_run(tier: str, private_tmp: Path) -> None:
    # kill(-1) signals every process the caller may signal: with a uid per
    # run that is its own run only (in the namespace tier, not even pid 1).
    killer = (
        "import os, signal, time\n"
        "time.sleep(0.5)\n"
        "try:\n"
        "    os.kill(-1, signal.SIGKILL)\n"
        "except ProcessLookupError:\n"
        "    print('nobody else to kill')\n"
    )
    slow = SOLUTION + "import time\ntime.sleep(1.5)\n"
    box = _box(tier)
    results = box.map([(killer + RAN, [RAN_TEST]), (slow, [TEST]), (slow, [TEST])], jobs=3)
    assert [r.passed for r in results[1:]] == [True, True]


@pytest.mark.parametrize("tier", OWN_UID)
def test_a_private_temporary_directory_does_not_stop_a_dropped_uid(
    tier: str, private_tmp: Path
) -> None:
    # A 0700 $TMPDIR (pytest's, a user's): the run's uid could not reach its
    # directory there; the run still starts, and leaves nothing in either place.
    private_tmp.chmod(0o700)
    result = _box(tier).run(SOLUTION + "import os\nprint(os.getcwd())\n", TEST)
    assert result.status == "pass", result
    assert not os.path.exists(result.stdout.strip())


@pytest.mark.skipif(not IS_ROOT, reason="uid leases are for a root harness")
def test_uid_leases_are_distinct_across_processes() -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom evalspec.sandbox.uids import lease\n"
            "held = lease()\nprint(held.uid, flush=True)\nsys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        theirs = int(holder.stdout.readline())
        mine = [lease() for _ in range(20)]
        try:
            ids = {held.uid for held in mine}
            assert theirs not in ids and len(ids) == 20
            assert all(uid in UID_RANGE for uid in ids | {theirs})
        finally:
            for held in mine:
                held.release()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(not OWN_UID, reason="a uid per run needs the harness to be root")
@pytest.mark.parametrize("tier", OWN_UID)
def test_no_process_of_the_run_outlives_it(tier: str, private_tmp: Path) -> None:
    # A daemon: double fork, setsid, every descriptor closed, a unique name.
    name = uuid.uuid4().hex[:12]
    daemon = "import os\nprint('uid', os.getuid(), flush=True)\n" + _daemon(name)
    result = _box(tier).run(SOLUTION + daemon, TEST)
    assert result.status == "pass", result
    uid = int(result.stdout.split()[1])
    assert uid in UID_RANGE
    assert _no_process_mentions(name)
    assert processes_of(uid) == []


@pytest.mark.skipif("uid-drop" not in OWN_UID, reason="uid-drop needs a root harness")
def test_files_and_ipc_left_in_shared_places_are_removed(private_tmp: Path) -> None:
    token = uuid.uuid4().hex
    program = (
        "import os, ctypes\n"
        f"for d in ('/tmp', '/var/tmp', '/dev/shm'):\n"
        f"    open(os.path.join(d, 'evalspec-leftover-{token}'), 'w').write('x')\n"
        f"os.makedirs('/tmp/evalspec-leftover-dir-{token}/a/b')\n"
        "libc = ctypes.CDLL(None)\n"
        "print('shm', libc.shmget(0, 4096, 0o1600))\n"
        "print('uid', os.getuid())\n"
    )
    result = _box("uid-drop").run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not os.path.exists(os.path.join(d, f"evalspec-leftover-{token}"))
    assert not os.path.exists(f"/tmp/evalspec-leftover-dir-{token}")
    uid = result.stdout.split("uid")[1].split()[0]
    rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    assert not [r for r in rows if r.split()[7] == uid]


# A cgroup per run, where this machine lets the harness make one.
CONTROLLERS = {h.controller for h in cgroups.hierarchies()}
needs_memory_cgroup = pytest.mark.skipif(
    not CONTROLLERS & {"memory", "unified"}, reason="no writable memory cgroup here"
)
needs_pids_cgroup = pytest.mark.skipif(
    not CONTROLLERS & {"pids", "unified"}, reason="no writable pids cgroup here"
)

HOGS = """
import os, time
for _ in range(6):
    if os.fork() == 0:
        block = bytearray(60 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(1.5)
        os._exit(0)
codes = [os.wait()[1] for _ in range(6)]
print("statuses", *codes)
"""


@needs_memory_cgroup
@pytest.mark.parametrize("tier", AVAILABLE)
def test_a_runs_memory_is_bounded_across_its_processes(tier: str, private_tmp: Path) -> None:
    # Six processes of 60 MiB each, every one within RLIMIT_AS; together far
    # beyond the run's 100 MiB: the kernel kills some of them, not a neighbour.
    mib = 1024 * 1024
    limits = Limits(cpu_seconds=5, wall_seconds=20.0, memory_bytes=90 * mib, disk_bytes=10 * mib)
    result = _box(tier, limits).run(HOGS + RAN, RAN_TEST)
    assert result.status == "pass", result
    statuses = result.stdout.split()[1:]
    assert "9" in statuses, statuses  # SIGKILLed by the memory controller
    assert _box(tier).run(SOLUTION, TEST).status == "pass"


@needs_pids_cgroup
@pytest.mark.skipif(not IS_ROOT, reason="RLIMIT_NPROC already binds a non-root program")
def test_a_root_fork_bomb_is_bounded_by_the_runs_pids_group(private_tmp: Path) -> None:
    # rlimits-only as root: RLIMIT_NPROC binds nothing, the pids group does.
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    limits = Limits(cpu_seconds=1, wall_seconds=1.5, processes=32)
    result = _box("rlimits-only", limits).run(bomb, "assert ran_to_the_end")
    assert result.status in ("timeout", "killed")
    assert subprocess.run(["true"], check=False).returncode == 0


@pytest.mark.skipif(not CONTROLLERS, reason="no writable cgroup here")
def test_run_groups_are_removed(private_tmp: Path) -> None:
    box = _box(AVAILABLE[0])
    forks = "import os\nif os.fork() == 0:\n    os._exit(0)\nos.wait()\n"
    assert box.run(SOLUTION + forks, TEST).status == "pass"
    for hierarchy in cgroups.hierarchies():
        mine = [n for n in os.listdir(hierarchy.directory) if n.startswith(f"run-{os.getpid()}-")]
        assert mine == []


# --- item 5: the namespace tier keeps its word ---------------------------------


@pytest.fixture
def host_sockets(tmp_path: Path) -> Iterator[list[str]]:
    """Listening Unix sockets of the host: in /tmp, in a test directory, abstract."""
    paths = [str(tmp_path / "host.sock"), f"/tmp/evalspec-host-{uuid.uuid4().hex[:8]}.sock"]
    abstract = "\0evalspec-host-" + uuid.uuid4().hex[:8]
    listeners = []
    for address in [*paths, abstract]:
        s = socket.socket(socket.AF_UNIX)
        s.bind(address)
        if not address.startswith("\0"):
            os.chmod(address, 0o777)
        s.listen()
        s.setblocking(False)
        listeners.append(s)
    os.chmod(tmp_path, 0o755)
    yield [*paths, abstract]
    for s in listeners:
        try:
            conn, _ = s.accept()
        except BlockingIOError:
            pass
        else:
            conn.close()
            raise AssertionError("a sandboxed program reached a host Unix socket")
        finally:
            s.close()
    os.unlink(paths[1])


@needs_namespace
def test_no_host_unix_socket_is_reachable(host_sockets: list[str], private_tmp: Path) -> None:
    program = (
        "import socket\n"
        f"for address in {host_sockets!r}:\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    try:\n"
        "        s.connect(address)\n"
        "    except OSError as exc:\n"
        "        print('refused', type(exc).__name__)\n"
        "    else:\n"
        "        print('CONNECTED', repr(address))\n"
        "import os\n"
        "for place in ('/run', '/var/run', '/var/lib', '/home', '/dev/log', '/sys'):\n"
        "    print(place, os.path.exists(place))\n"
    )
    result = _box("namespace").run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    assert "CONNECTED" not in result.stdout
    assert result.stdout.count("refused") == len(host_sockets)
    assert " True" not in result.stdout


@needs_namespace
def test_tmp_and_shm_writes_vanish_with_the_run(private_tmp: Path) -> None:
    token = uuid.uuid4().hex
    program = (
        "import os\n"
        f"for d in ('/tmp', '/dev/shm', os.getcwd()):\n"
        f"    open(os.path.join(d, 'evalspec-probe-{token}'), 'w').write('x')\n"
        "print(*sorted(os.listdir('/tmp')))\n"
    )
    box = _box("namespace")
    result = box.run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    for d in ("/tmp", "/dev/shm", "/var/tmp"):
        assert not os.path.exists(os.path.join(d, f"evalspec-probe-{token}"))
    # the program's /tmp is its own: no host entry shows, only the directory
    # its working directory lies in (the same path as on the host) and, when the
    # interpreter lives under /tmp (a CI checkout's venv), its read-only bind
    bound = {
        Path(b).relative_to("/tmp").parts[0]
        for b in jail_binds(box.python)
        if Path(b).is_relative_to("/tmp") and b != "/tmp"
    }
    expected = sorted({private_tmp.name, f"evalspec-probe-{token}", *bound})
    assert result.stdout.split() == expected


@needs_namespace
def test_shm_and_tmp_share_one_disk_budget(private_tmp: Path) -> None:
    limits = Limits(disk_bytes=8 * 1024 * 1024, file_size_bytes=16 * 1024 * 1024)
    program = (
        "import errno, os\n"
        "written = 0\n"
        "try:\n"
        "    for i, d in enumerate(['/dev/shm', '/tmp', '.'] * 4):\n"
        "        with open(os.path.join(d, f'fill{i}'), 'wb') as fh:\n"
        "            for _ in range(1024):\n"
        "                fh.write(b'x' * 1024)\n"
        "                written += 1024\n"
        "except OSError as exc:\n"
        "    print('stopped', errno.errorcode[exc.errno], written)\n"
    )
    result = _box("namespace", limits).run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    assert "stopped ENOSPC" in result.stdout
    assert int(result.stdout.split()[-1]) <= 8 * 1024 * 1024


@needs_namespace
def test_nested_user_namespaces_and_chroot_are_refused(private_tmp: Path) -> None:
    program = (
        "import ctypes, os, subprocess\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('unshare-user', libc.unshare(0x10000000), ctypes.get_errno())\n"
        "print('unshare-mount', libc.unshare(0x00020000), ctypes.get_errno())\n"
        "tool = subprocess.run(['unshare', '--user', '--map-root-user', 'true'])\n"
        "print('tool', tool.returncode)\n"
        "try:\n"
        "    os.chroot('.')\n"
        "except PermissionError:\n"
        "    print('chroot refused')\n"
        "for path in ('/usr/evalspec-x', '/etc/evalspec-x', '/evalspec-x'):\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "    except OSError as exc:\n"
        "        print('write refused', exc.errno)\n"
    )
    result = _box("namespace").run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    assert "unshare-user -1 1\n" in result.stdout  # EPERM
    assert "unshare-mount -1 1\n" in result.stdout
    assert "tool 0" not in result.stdout
    assert "chroot refused" in result.stdout
    assert result.stdout.count("write refused") == 3


@needs_namespace
def test_the_namespace_sees_only_its_own_processes_and_no_network(private_tmp: Path) -> None:
    program = (
        "import os, socket\n"
        "print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "print('ifaces', [n for _, n in socket.if_nameindex()])\n"
        "for kind in ('uts', 'ipc', 'net', 'pid', 'mnt'):\n"
        "    print(kind, os.readlink(f'/proc/self/ns/{kind}'))\n"
    )
    result = _box("namespace").run(SOLUTION + program, TEST)
    assert result.status == "pass", result
    pids = [int(p) for p in result.stdout.split("]")[0].split("[")[1].split(",")]
    assert pids[:2] == [1, 2] and len(pids) <= 4, pids  # the run's own, nobody else's
    for kind in ("uts", "ipc", "net", "pid", "mnt"):
        # every one of these namespaces is new, none is the harness's
        host = os.readlink(f"/proc/self/ns/{kind}")
        assert f"{kind} {kind}:[" in result.stdout
        assert host not in result.stdout
    assert "ifaces ['lo']" in result.stdout or "ifaces []" in result.stdout


@needs_namespace
def test_a_daemon_dies_with_the_namespace(private_tmp: Path) -> None:
    name = uuid.uuid4().hex[:12]
    daemon = _daemon(name)
    box = _box("namespace", Limits(cpu_seconds=2, wall_seconds=1.5))
    assert box.run(SOLUTION + daemon, TEST).status == "pass"
    assert _no_process_mentions(name)
    assert box.run(daemon + "time.sleep(30)\n", TEST).status == "timeout"
    assert _no_process_mentions(name)


# --- item 7: evalspec score stopped by a signal ---------------------------------


STOP_SLEEPER = (
    "import os, time\n"
    "for _ in range(3):\n"
    "    if os.fork() == 0:\n"
    "        os.setsid()\n"
    "        time.sleep(60)\n"
    "time.sleep(60)\n"
)


def _stop_score(tmp_path: Path, private_tmp: Path, sig: signal.Signals) -> None:
    tasks, preds = _write_tasks(tmp_path, {f"t{i}": STOP_SLEEPER for i in range(6)})
    proc = subprocess.Popen(
        [*SCORE, str(tasks), str(preds), "--jobs", "3", "--output", str(tmp_path / "report")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_score_env(private_tmp),
        preexec_fn=signals_at_their_defaults,
    )
    deadline = time.monotonic() + 30
    while len(os.listdir(private_tmp)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the programs and their children are running now
    assert proc.poll() is None
    stopped = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - stopped < 5, "the runs were not ended at once"
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert f"stopped by {sig.name}" in err
    assert not (tmp_path / "report").exists()
    assert _no_process_mentions(str(private_tmp))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_score_stopped_by_a_signal_ends_every_run(
    sig: signal.Signals, tmp_path: Path, private_tmp: Path
) -> None:
    _stop_score(tmp_path, private_tmp, sig)


@pytest.mark.slow
def test_score_stopped_at_any_moment_leaves_nothing(tmp_path: Path, private_tmp: Path) -> None:
    # SIGTERM at many moments: during the probe, while runs start, while they
    # run. Before the command installed its handler (while Python imports),
    # the default action ends it with no run started; afterwards it is 143.
    tasks, preds = _write_tasks(tmp_path, {f"t{i}": STOP_SLEEPER for i in range(4)})
    for step in range(16):
        proc = subprocess.Popen(
            [*SCORE, str(tasks), str(preds), "--jobs", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_score_env(private_tmp),
        )
        time.sleep(0.2 + 0.1 * step)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode in (143, -signal.SIGTERM), err
        assert "Traceback" not in err
        assert set(os.listdir(private_tmp)) <= {f"evalspec-{os.geteuid()}"}  # the user's own dir
        assert _no_process_mentions(str(private_tmp))


def test_a_stop_during_map_in_a_thread_returns(private_tmp: Path) -> None:
    # Not via the CLI: stop_all() from another thread ends runs in flight.
    from evalspec.sandbox import interrupt

    box = _box(AVAILABLE[0])
    timer = threading.Timer(1.0, interrupt.stop_all)
    started = time.monotonic()
    timer.start()
    try:
        results = box.map([(SOLUTION + "import time\ntime.sleep(30)\n", [TEST])] * 4, jobs=2)
    finally:
        timer.join()
        interrupt.resume()  # this process goes on testing
    assert time.monotonic() - started < 6
    assert {t.results[0].status for t in results} == {"sandbox_error"}


# --- the namespace tier without root (a user namespace of its own) ------------

NON_ROOT_CHECK = """
import ctypes, os, socket, sys
from evalspec.sandbox import Sandbox
from evalspec.sandbox.tiers import probe
report = probe()
if report.tier != "namespace":
    print("UNAVAILABLE", report.reasons)
    sys.exit(0)
program = (
    "import ctypes, os\\n"
    "libc = ctypes.CDLL(None, use_errno=True)\\n"
    "print('nested', libc.unshare(0x10000000), ctypes.get_errno())\\n"
    "status = open('/proc/self/status').read()\\n"
    "print('caps', status.split('CapEff:')[1].split()[0])\\n"
    "print('run', os.path.exists('/run'), 'home', os.path.exists('/home'))\\n"
    "ran_to_the_end = True\\n"
)
result = Sandbox(tier="namespace").run(program, "assert ran_to_the_end is True")
print(result.status, result.stdout.replace("\\n", " "))
"""


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become another user")
def test_namespace_tier_for_an_unprivileged_harness() -> None:
    # The harness itself runs as nobody: the jail is built in a user namespace,
    # every capability is dropped and nested user namespaces are refused.
    import attrs
    import pluggy

    paths = {str(Path(__file__).parents[2])} | {
        str(Path(m.__file__).parents[1]) for m in (attrs, pluggy) if m.__file__
    }
    system = f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"
    if not os.path.exists(system):
        pytest.skip(f"no {system} an unprivileged user can run")
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            system,
            "-c",
            NON_ROOT_CHECK,
        ],
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": ":".join(sorted(paths))},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr:
        pytest.skip("evalspec is not importable by an unprivileged user here")
    assert proc.returncode == 0, proc.stderr
    if proc.stdout.startswith("UNAVAILABLE"):
        pytest.skip(f"no user namespaces for an unprivileged user here: {proc.stdout}")
    assert proc.stdout.split() == [
        "pass",
        "nested",
        "-1",
        "1",
        "caps",
        "0000000000000000",
        "run",
        "False",
        "home",
        "False",
    ]
