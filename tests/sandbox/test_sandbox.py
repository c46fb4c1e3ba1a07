"""The code_exec sandbox, tested with real hostile programs in real subprocesses.

Every hostile program is followed by a correct one on the same sandbox: the
run must go on with the next task. Limits are kept small so the file is fast.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_tiers import available_tiers, sandbox_at

from evalspec.errors import EvalspecError
from evalspec.sandbox import (
    STATUSES,
    TIERS,
    CodeExecNotAllowed,
    Limits,
    NoTestsError,
    RunResult,
    Sandbox,
    SandboxUnavailable,
    UnknownTierError,
    WeakIsolationWarning,
    probe_isolation,
    require_opt_in,
)
from evalspec.sandbox.process import LaunchPlan, execute
from evalspec.sandbox.tiers import probe

SMALL = Limits(cpu_seconds=1, wall_seconds=3.0, memory_bytes=256 * 1024 * 1024)
SOLUTION = "def add(a, b):\n    return a + b\n"
TEST = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"
IS_ROOT = os.geteuid() == 0


# Tiers this machine offers; the strongest is always exercised, and on a root
# machine the lower tiers too (that is where RLIMIT_NPROC and escapes differ).
AVAILABLE = available_tiers()


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    """The sandbox at the strongest tier here, with small limits."""
    return Sandbox(SMALL)


def _sandbox_at(tier: str) -> Sandbox:
    return sandbox_at(tier, SMALL)


def _goes_on(sb: Sandbox) -> None:
    """After a hostile run, the next task still runs and passes."""
    result = sb.run(SOLUTION, TEST)
    assert result.status == "pass", result
    # and the host can still start processes
    assert subprocess.run(["true"], check=False).returncode == 0


def _workdir_of(result: RunResult) -> Path:
    line = next(x for x in result.stdout.splitlines() if x.startswith("CWD="))
    return Path(line[4:])


# --- opt-in -----------------------------------------------------------------


def test_require_opt_in_refuses_without_opt_in_and_says_how() -> None:
    with pytest.raises(CodeExecNotAllowed) as info:
        require_opt_in(False)
    message = str(info.value)
    assert "untrusted" in message
    assert "--allow-code-exec" in message
    assert "allow_code_exec=True" in message
    assert isinstance(info.value, EvalspecError)
    require_opt_in(True)  # opting in raises nothing


def test_require_opt_in_accepts_only_true() -> None:
    with pytest.raises(CodeExecNotAllowed):
        require_opt_in("yes")  # type: ignore[arg-type]


# --- limits -----------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["cpu_seconds", "memory_bytes", "file_size_bytes", "open_files", "processes"]
)
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_limits_reject_non_positive_integers(field: str, bad: object) -> None:
    with pytest.raises(ValueError, match=field):
        Limits(**{field: bad})  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -0.5, float("inf"), float("nan"), "1"])
def test_limits_reject_bad_wall_clock(bad: object) -> None:
    with pytest.raises(ValueError, match="wall_seconds"):
        Limits(wall_seconds=bad)  # type: ignore[arg-type]


# --- probe and tiers --------------------------------------------------------


def test_probe_reports_a_known_tier_and_sandbox_uses_it(sandbox: Sandbox) -> None:
    tier = probe_isolation()
    assert tier in TIERS
    assert probe_isolation() == tier  # cached, stable
    assert sandbox.tier == tier
    assert AVAILABLE and AVAILABLE[0] == tier
    result = sandbox.run(SOLUTION, TEST)
    assert result.tier == tier
    assert sandbox.run_tests(SOLUTION, [TEST]).tier == tier


def _namespaces_work_here() -> bool:
    """The brief's own check, run directly: can this process make the namespaces?"""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    argv = [unshare, "--user", "--map-root-user", "--net", "--pid", "--fork"]
    argv += ["--kill-child", "--mount-proc", "true"]
    return subprocess.run(argv, check=False, capture_output=True).returncode == 0


def test_namespace_tier_is_found_where_the_kernel_allows_it() -> None:
    # Where unshare works from here, the probe must find the namespace tier
    # (on this machine class it does); elsewhere it must report a lower one.
    report = probe()
    if _namespaces_work_here():
        assert report.tier == "namespace", report.reasons
    else:
        assert report.tier in TIERS[1:], report.reasons


def test_unavailable_minimum_tier_raises() -> None:
    with pytest.raises(SandboxUnavailable, match="namespace") as info:
        Sandbox(minimum_tier="namespace", unshare="/nonexistent/unshare")
    assert "strongest available" in str(info.value)
    with pytest.raises(SandboxUnavailable):
        Sandbox(tier="namespace", unshare="/nonexistent/unshare")


def test_without_namespaces_the_lower_tier_is_reported() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakIsolationWarning)
        sb = Sandbox(SMALL, unshare="/nonexistent/unshare")
    assert sb.tier == ("uid-drop" if IS_ROOT else "rlimits-only")
    result = sb.run(SOLUTION, TEST)
    assert result.status == "pass"
    assert result.tier == sb.tier


@pytest.fixture
def closed_python(tmp_path: Path) -> str:
    """An interpreter only root can reach (in a 0700 directory): as root, uid-drop
    cannot start it; with a missing unshare, namespace cannot either."""
    import sys

    den = tmp_path / "den"
    den.mkdir(mode=0o700)
    (den / "python").symlink_to(sys.executable)
    return str(den / "python")


def test_a_root_harness_refuses_rlimits_only_unless_asked(closed_python: str) -> None:
    # Fail closed: without namespace or uid-drop, root never runs a program as
    # root by default; the refusal says what is missing and how to get it.
    box = {"python": closed_python, "unshare": "/nonexistent/unshare"}
    if IS_ROOT:
        with pytest.raises(SandboxUnavailable) as info:
            Sandbox(SMALL, **box)
        message = str(info.value)
        assert "'uid-drop'" in message and "namespace: " in message and "uid-drop: " in message
        assert "--min-isolation rlimits-only" in message and "unshare" in message
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb = Sandbox(SMALL, minimum_tier="rlimits-only", **box)
    assert sb.tier == "rlimits-only"
    assert sb.run(SOLUTION, TEST).status == "pass"
    assert any(issubclass(w.category, WeakIsolationWarning) for w in caught) == IS_ROOT


def test_no_working_interpreter_raises_instead_of_scoring() -> None:
    with pytest.raises(SandboxUnavailable):
        Sandbox(python="/nonexistent/python3")


def test_unknown_tier_name_is_rejected() -> None:
    with pytest.raises(UnknownTierError):
        Sandbox(minimum_tier="docker")
    with pytest.raises(UnknownTierError):
        Sandbox(tier="chroot")


def test_root_at_rlimits_only_warns() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Sandbox(tier="rlimits-only")
    weak = [w for w in caught if issubclass(w.category, WeakIsolationWarning)]
    # Only root is exposed at this tier (RLIMIT_NPROC is void for uid 0).
    assert len(weak) == (1 if IS_ROOT else 0)
    if IS_ROOT:
        assert "RLIMIT_NPROC" in str(weak[0].message)


# --- verdicts ---------------------------------------------------------------


def test_correct_solution_passes(sandbox: Sandbox) -> None:
    result = sandbox.run(SOLUTION, TEST)
    assert result.status == "pass"
    assert result.passed
    assert result.returncode == 0
    assert result.status in STATUSES
    task = sandbox.run_tests(SOLUTION, [TEST, "assert add(0, 0) == 0\n"])
    assert task.passed
    assert len(task.results) == 2


def test_failing_test_fails_and_stops_the_task(sandbox: Sandbox) -> None:
    task = sandbox.run_tests(SOLUTION, ["assert add(1, 1) == 3\n", TEST])
    assert not task.passed
    assert task.status == "fail"
    assert len(task.results) == 1
    assert "AssertionError" in task.results[0].stderr


def test_empty_test_suite_is_an_error_not_a_pass(sandbox: Sandbox) -> None:
    with pytest.raises(NoTestsError):
        sandbox.run_tests(SOLUTION, [])
    with pytest.raises(TypeError):
        sandbox.run_tests(SOLUTION, TEST)


@pytest.mark.parametrize(
    "escape",
    [
        "import os\nos._exit(0)\n",
        "import sys\nsys.exit(0)\n",
        "raise SystemExit\n",
        "import atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit(0)\n",
        "print('PASSED')\nprint('P ' + '0' * 32)\nimport os\nos._exit(0)\n",
    ],
)
def test_exit_zero_before_the_tests_is_not_a_pass(sandbox: Sandbox, escape: str) -> None:
    result = sandbox.run(SOLUTION + escape, TEST)
    assert result.returncode == 0
    assert result.status == "fail"
    assert not result.passed
    _goes_on(sandbox)


def test_forged_status_lines_do_not_pass(sandbox: Sandbox) -> None:
    # The program may write to every inherited descriptor; without the nonce
    # nothing it writes there is a pass.
    forge = (
        "import os\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, b'R\\nP 00\\nW 0 0.0\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    result = sandbox.run(SOLUTION + forge, TEST)
    assert result.status == "fail"
    _goes_on(sandbox)


# --- resource abuse -----------------------------------------------------------


def test_infinite_loop_is_stopped(sandbox: Sandbox) -> None:
    result = sandbox.run("while True:\n    pass\n", TEST)
    assert result.status == "timeout"  # by RLIMIT_CPU, or the wall clock on a busy host
    _goes_on(sandbox)


def test_sleeping_program_hits_the_wall_clock(sandbox: Sandbox) -> None:
    limits = Limits(cpu_seconds=1, wall_seconds=1.0)
    result = sandbox.run("import time\ntime.sleep(3600)\n", TEST, limits=limits)
    assert result.status == "timeout"
    assert "wall-clock" in result.detail
    _goes_on(sandbox)


def test_c_level_cpu_burn_is_stopped(sandbox: Sandbox) -> None:
    result = sandbox.run("x = 10 ** (10 ** 8)\n", TEST)
    assert result.status == "timeout"
    _goes_on(sandbox)


FORK_BOMB = "import os\nwhile True:\n    os.fork()\n"
STUBBORN_FORK_BOMB = (
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
)


@pytest.mark.parametrize("tier", [t for t in AVAILABLE if t != "rlimits-only" or not IS_ROOT])
@pytest.mark.parametrize("bomb", [FORK_BOMB, STUBBORN_FORK_BOMB], ids=["plain", "stubborn"])
def test_fork_bomb_is_contained(tier: str, bomb: str) -> None:
    # Not run at rlimits-only as root: there RLIMIT_NPROC binds nothing (the
    # documented reason that tier warns), and a real bomb would hurt this host.
    sb = _sandbox_at(tier)
    result = sb.run(bomb, TEST, limits=Limits(cpu_seconds=1, wall_seconds=1.5))
    assert result.status in ("fail", "timeout", "killed")
    if bomb == FORK_BOMB:
        # RLIMIT_NPROC bound: fork failed with EAGAIN instead of running away.
        assert "BlockingIOError" in result.stderr or "Resource temporarily" in result.stderr
    _goes_on(sb)


def test_thread_bomb_is_contained(sandbox: Sandbox) -> None:
    bomb = (
        "import threading, time\n"
        "while True:\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    )
    result = sandbox.run(bomb, TEST)
    assert result.status in ("fail", "oom", "timeout")
    _goes_on(sandbox)


def test_memory_hog_fails_and_the_harness_survives(sandbox: Sandbox) -> None:
    result = sandbox.run("b = bytearray(2 * 1024 ** 3)\n", TEST)
    assert result.status == "oom"
    assert "MemoryError" in result.stderr
    _goes_on(sandbox)


def test_huge_write_is_stopped_by_the_file_size_limit(sandbox: Sandbox) -> None:
    limits = Limits(cpu_seconds=3, wall_seconds=6.0, file_size_bytes=4 * 1024 * 1024)
    writer = (
        "import os\n"
        "print('CWD=' + os.getcwd(), flush=True)\n"
        "with open('big.bin', 'wb') as fh:\n"
        "    for _ in range(1024):\n"
        "        fh.write(b'x' * 1024 * 1024)\n"
    )
    result = sandbox.run(writer, TEST, limits=limits)
    assert result.status == "fail"
    assert "File too large" in result.stderr
    assert not _workdir_of(result).exists()  # and the big file went with it
    _goes_on(sandbox)


def test_output_flood_is_capped(sandbox: Sandbox) -> None:
    limits = Limits(cpu_seconds=3, wall_seconds=6.0, output_bytes=1000)
    flood = "import sys\nfor _ in range(2000):\n    sys.stdout.write('y' * 1000)\n"
    result = sandbox.run(SOLUTION + flood, TEST, limits=limits)
    assert result.status == "pass"  # flooding is allowed; keeping it all is not
    assert result.truncated
    assert len(result.stdout) == 1000


# --- escapes ------------------------------------------------------------------


@pytest.mark.parametrize("tier", AVAILABLE)
def test_writes_into_the_callers_directory_are_contained(
    tier: str, open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = open_dir  # like a checkout: 0755, owned by the caller
    monkeypatch.chdir(caller)
    sb = _sandbox_at(tier)
    writer = (
        "import os\n"
        "print('CWD=' + os.getcwd(), flush=True)\n"
        "open('relative.txt', 'w').write('x')\n"
        f"open({str(caller / 'absolute.txt')!r}, 'w').write('x')\n"
    )
    result = sb.run(SOLUTION + writer, TEST)
    workdir = _workdir_of(result)
    assert workdir != caller
    assert not workdir.exists()  # the temporary directory is removed
    assert not (caller / "relative.txt").exists()
    if tier == "rlimits-only" or not IS_ROOT:
        # Documented: without a uid drop the program runs as the caller, so
        # it can write wherever the caller can.
        assert result.status == "pass"
        assert (caller / "absolute.txt").exists()
    else:
        assert result.status == "fail"
        # uid-drop: not writable; namespace: not even there (its private root)
        missing = "FileNotFoundError" if tier == "namespace" else "PermissionError"
        assert missing in result.stderr
        assert list(caller.iterdir()) == []
    _goes_on(sb)


@pytest.mark.parametrize("tier", [t for t in AVAILABLE if t != "rlimits-only"])
def test_parallel_runs_cannot_find_or_watch_each_other(tier: str) -> None:
    # Parallel runs share the sandbox uid: the directory above each run's cwd
    # is not listable, and the driver is not dumpable (no /proc snooping).
    sb = _sandbox_at(tier)
    snoop = (
        "import os\n"
        "try:\n"
        "    os.listdir(os.path.dirname(os.getcwd()))\n"
        "except PermissionError:\n"
        "    print('parent not listable')\n"
        "import ctypes\n"
        "print('dumpable', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"
    )
    result = sb.run(SOLUTION + snoop, TEST)
    assert result.status == "pass", result
    if IS_ROOT:
        assert "parent not listable" in result.stdout
    assert "dumpable 0" in result.stdout  # PR_GET_DUMPABLE


def test_parent_environment_is_not_inherited(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "canary-6f1e2d")
    monkeypatch.setenv("PYTHONPATH", "/canary/path")
    probe = "import os, sys\nprint(dict(os.environ))\nprint(sys.path)\nprint(sys.flags.isolated)\n"
    result = sandbox.run(SOLUTION + probe, TEST)
    assert result.status == "pass"
    assert "canary" not in result.stdout
    assert "OMP_NUM_THREADS" in result.stdout
    assert result.stdout.splitlines()[-1] == "1"  # isolated mode


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A fresh directory under the system temp dir that the sandbox uid can reach
    (pytest's tmp_path sits under a 0700 directory, which would prove nothing)."""
    path = Path(tempfile.mkdtemp(prefix="evalspec-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 owned by the test."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.mark.parametrize("tier", AVAILABLE)
def test_network_to_localhost(tier: str, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    sb = _sandbox_at(tier)
    client = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
    result = sb.run(SOLUTION + client, TEST)
    assert result.tier == tier
    if tier == "namespace":
        assert result.status == "fail"
        assert "unreachable" in result.stderr
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    else:
        # Documented: below the namespace tier the network is reachable, and
        # the result says which tier was in force.
        assert result.status == "pass"
        listener.accept()[0].close()
    _goes_on(sb)


def _escaper(marker_dir: Path, *, close_fds: bool = False) -> str:
    """A program whose setsid() grandchild writes ``started``, then waits for the
    test to create ``go`` and, if it is still alive then, writes ``survived``.

    close_fds: the grandchild also drops every inherited descriptor, so no pipe
    of the run leads to it.
    """
    started, go, survived = (str(marker_dir / n) for n in ("started", "go", "survived"))
    return (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        {'os.closerange(0, 1024)' if close_fds else 'pass'}\n"
        f"        open({started!r}, 'w').close()\n"
        "        for _ in range(2000):\n"
        f"            if os.path.exists({go!r}):\n"
        f"                open({survived!r}, 'w').close()\n"
        "                break\n"
        "            time.sleep(0.01)\n"
        "    os._exit(0)\n"
        f"while not os.path.exists({started!r}):\n"
        "    time.sleep(0.01)\n"
    )


def _survived(marker_dir: Path) -> bool:
    """Signal the grandchild to write its marker, and see whether it did."""
    (marker_dir / "go").touch()
    time.sleep(0.5)  # a live grandchild polls every 10 ms
    return (marker_dir / "survived").exists()


@pytest.fixture
def marker_dir(open_dir: Path) -> Path:
    """Where an escaped grandchild would leave its markers (writable by it)."""
    path = open_dir / "markers"
    path.mkdir()
    path.chmod(0o777)
    return path


# Closing descriptors matters only below the namespace tier (the pipe sweep).
# The namespace tier's private root hides the host's marker directory; its
# escapes are tested in test_sandbox_isolation.py by process name instead.
ESCAPES = [pytest.param(t, False, id=f"{t}-keeps-fds") for t in AVAILABLE if t != "namespace"] + [
    pytest.param(t, True, id=f"{t}-closes-fds") for t in AVAILABLE if t != "namespace"
]


@pytest.mark.parametrize(("tier", "close_fds"), ESCAPES)
def test_setsid_grandchild_does_not_outlive_the_run(
    tier: str, close_fds: bool, marker_dir: Path
) -> None:
    sb = _sandbox_at(tier)
    started = time.monotonic()
    result = sb.run(SOLUTION + _escaper(marker_dir, close_fds=close_fds), TEST)
    assert result.status == "pass"
    assert time.monotonic() - started < SMALL.wall_seconds + 5  # never hung on a pipe
    assert (marker_dir / "started").exists()  # the grandchild did run
    assert not _survived(marker_dir)
    _goes_on(sb)


@pytest.mark.parametrize(("tier", "close_fds"), ESCAPES)
def test_escaped_grandchild_is_killed_on_timeout_too(
    tier: str, close_fds: bool, marker_dir: Path
) -> None:
    # The program outlives the wall clock while its setsid() grandchild waits:
    # the supervisor dies with the group, so this is the harness's job.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakIsolationWarning)
        sb = Sandbox(Limits(cpu_seconds=2, wall_seconds=1.0), tier=tier)
    result = sb.run(_escaper(marker_dir, close_fds=close_fds) + "time.sleep(60)\n", TEST)
    assert result.status == "timeout"
    assert (marker_dir / "started").exists()
    assert not _survived(marker_dir)


# --- setup failures ------------------------------------------------------------


def test_setup_failure_is_a_sandbox_error_not_a_fail() -> None:
    false = shutil.which("false")
    assert false is not None
    result = execute(LaunchPlan("rlimits-only", false), SOLUTION + TEST, SMALL)
    assert result.status == "sandbox_error"
    assert not result.passed
    missing = execute(LaunchPlan("rlimits-only", "/nonexistent/python3"), SOLUTION, SMALL)
    assert missing.status == "sandbox_error"
    assert "cannot start" in missing.detail


def test_broken_program_text_is_a_fail_not_a_sandbox_error(sandbox: Sandbox) -> None:
    for code in ("def add(a, b)\n    return a + b\n", "x = '\ud800'\n", "x = 1\0\n"):
        result = sandbox.run(code, TEST)
        assert result.status == "fail", (code, result)
        assert "Error" in result.stderr
    _goes_on(sandbox)


# --- parallel -----------------------------------------------------------------


def test_map_runs_tasks_in_parallel_and_keeps_order(sandbox: Sandbox) -> None:
    items = [
        (SOLUTION, [TEST]),
        ("while True:\n    pass\n", [TEST]),
        (SOLUTION, ["assert add(1, 2) == 4\n"]),
        ("import os\nos._exit(0)\n", [TEST]),
        (SOLUTION, [TEST, "assert add(5, 5) == 10\n"]),
    ]
    results = sandbox.map(items, jobs=2)
    assert [r.status for r in results] == ["pass", "timeout", "fail", "fail", "pass"]
    assert results[0].to_dict()["tier"] == sandbox.tier
    assert results[4].to_dict()["passed"] is True
    assert [r.passed for r in results] == [True, False, False, False, True]
    with pytest.raises(ValueError, match="jobs"):
        sandbox.map(items, jobs=0)
