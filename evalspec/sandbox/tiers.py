"""Isolation tiers, how to launch each, and the once-per-process probe.

A tier is only "available" when a trivial program actually ran under it here:
finding ``unshare`` on PATH proves nothing (AppArmor, containers and sysctls
forbid user namespaces in many places), so each candidate is run once and the
outcome cached for the life of the process.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys

import attrs

from evalspec.sandbox.errors import SandboxUnavailable, UnknownTierError
from evalspec.sandbox.limits import Limits
from evalspec.sandbox.process import LaunchPlan, execute
from evalspec.sandbox.uids import UID_RANGE

#: Strongest first.
TIERS: tuple[str, ...] = ("namespace", "uid-drop", "rlimits-only")

_NAMESPACES = ("--net", "--pid", "--fork", "--kill-child", "--ipc", "--uts")
_PROBE_LIMITS = Limits(cpu_seconds=5, wall_seconds=20.0)


def tier_rank(tier: str) -> int:
    """0 for the strongest tier; raises :class:`UnknownTierError` for a bad name."""
    try:
        return TIERS.index(tier)
    except ValueError:
        raise UnknownTierError(
            f"unknown isolation tier {tier!r}; choose one of {', '.join(TIERS)}"
        ) from None


@attrs.frozen
class ProbeReport:
    """What the probe found: the plan in force and why stronger tiers were not had."""

    plan: LaunchPlan | None
    reasons: tuple[tuple[str, str], ...]

    @property
    def tier(self) -> str | None:
        """The strongest tier that worked, or None when nothing did."""
        return self.plan.tier if self.plan is not None else None

    def why_not(self, tier: str) -> str:
        """Why ``tier`` is not available here (one line)."""
        found = [why for t, why in self.reasons if t == tier]
        return "; ".join(found) if found else "not tried"


def _interpreters(python: str | None) -> list[str]:
    """The harness's interpreter, then same-version ones an unprivileged uid can run.

    A dropped uid cannot exec a Python under a 0700 home (pyenv in /root), so
    the tiers that drop privileges may fall back to a system interpreter of the
    same major.minor version; the probe checks the version, and every result
    names the interpreter used.
    """
    if python is not None:
        return [python]
    found = [sys.executable]
    base = getattr(sys, "_base_executable", None)
    for extra in (
        base,
        os.path.realpath(sys.executable),
        shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/bin:/bin"),
        shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/local/bin"),
    ):
        if extra and extra not in found:
            found.append(extra)
    return found


def jail_binds(python: str) -> tuple[str, ...]:
    """Host paths the namespace tier's private root shows (read-only) for ``python``.

    The system directories an interpreter and its shared libraries live in,
    plus the prefix of every hop of the interpreter's symlink chain (a venv's
    directory with its ``pyvenv.cfg``, the real installation behind it).
    """
    binds = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
    path = os.path.abspath(python)
    for _ in range(40):  # symlink hops; a loop ends here and fails in the probe
        prefix = os.path.dirname(os.path.dirname(path))
        if prefix not in ("", "/"):
            binds.append(prefix)
        if not os.path.islink(path):
            break
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    kept: list[str] = []
    for candidate in sorted(set(binds), key=len):
        # A path inside one already shown needs no mount of its own.
        if not any(candidate == k or candidate.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(candidate)
    return tuple(kept)


def _plans(tier: str, python: str, unshare: str | None) -> list[LaunchPlan]:
    root = os.geteuid() == 0
    if tier == "namespace":
        if unshare is None:
            return []
        # --mount: the jail's private root lives in a mount namespace of its
        # own (private propagation, so nothing it mounts reaches the host).
        namespaces = (unshare, "--mount", *_NAMESPACES, "--")
        binds = jail_binds(python)
        if root:
            # Root makes the namespaces itself; the jail drops to the run's uid.
            return [
                LaunchPlan(tier, python, namespaces, "ns", per_run_uid=True, jail=True, binds=binds)
            ]
        user_ns = (unshare, "--user", "--map-root-user", "--mount", *_NAMESPACES, "--")
        return [LaunchPlan(tier, python, user_ns, "ns", jail=True, userns=True, binds=binds)]
    if tier == "uid-drop":
        if not root:
            return []
        return [LaunchPlan(tier, python, per_run_uid=True)]
    return [LaunchPlan(tier, python)]


def _probe_program(tier: str) -> str:
    want = sys.version_info[:2]
    lines = ["import os, sys", f"assert sys.version_info[:2] == {want!r}, sys.version"]
    if tier == "namespace":
        lines += [
            "assert os.getpid() == 2, os.getpid()",
            "import errno, socket",
            "s = socket.socket()",
            "try:",
            "    s.connect(('127.0.0.1', 9))",
            "except OSError as exc:",
            "    assert exc.errno == errno.ENETUNREACH, exc",
            "else:",
            "    raise AssertionError('network reachable')",
        ]
    if tier != "rlimits-only" and os.geteuid() == 0:
        lines.append(f"assert {UID_RANGE.start} <= os.getuid() < {UID_RANGE.stop}, os.getuid()")
    if tier == "namespace":
        # The private root is in place: the host's /run (its sockets) is not there.
        lines.append("assert not os.path.exists('/run'), os.listdir('/')")
    lines.append("print(sys.version.split()[0], sys.prefix)")
    return "\n".join(lines) + "\n"


@functools.cache
def probe_tier(
    tier: str, python: str | None = None, unshare: str | None = None
) -> tuple[LaunchPlan | None, tuple[str, ...]]:
    """Try ``tier`` alone: the plan that ran a trivial program, or the reasons none did.

    Cached per arguments for the life of the process.
    """
    tier_rank(tier)
    unshare_path = unshare if unshare is not None else shutil.which("unshare")
    reasons: list[str] = []
    for interpreter in _interpreters(python):
        for plan in _plans(tier, interpreter, unshare_path):
            result = execute(plan, _probe_program(tier), _PROBE_LIMITS)
            if result.passed:
                version = " ".join(result.stdout.split()[:2])
                seen = f"{plan.python} (Python {version})" if version else plan.python
                return attrs.evolve(plan, python_version=seen), ()
            why = result.detail
            tail = result.stderr.strip().splitlines()[-1:]
            if tail:
                why = f"{why}: {tail[0]}"
            reasons.append(f"{plan.prefix[0] if plan.prefix else interpreter}: {why}")
    if not reasons:
        if tier == "namespace":
            reasons.append("util-linux unshare not found")
        elif tier == "uid-drop":
            reasons.append("needs root to change uid")
    return None, tuple(reasons)


def probe(python: str | None = None, unshare: str | None = None) -> ProbeReport:
    """Find the strongest tier that runs here (each tier probed once per process).

    ``python`` pins the interpreter (default: the harness's, with same-version
    fallbacks); ``unshare`` is util-linux's unshare (default: found on PATH).
    """
    reasons: list[tuple[str, str]] = []
    for tier in TIERS:
        plan, why = probe_tier(tier, python, unshare)
        if plan is not None:
            return ProbeReport(plan, tuple(reasons))
        reasons.extend((tier, w) for w in why)
    return ProbeReport(None, tuple(reasons))


def probe_isolation() -> str:
    """The strongest isolation tier available to this process (probed once, cached).

    Raises :class:`SandboxUnavailable` when no tier can run a trivial program.
    """
    report = probe()
    if report.tier is None:
        raise SandboxUnavailable(unavailable_message(report, TIERS[-1]))
    return report.tier


def unavailable_message(report: ProbeReport, minimum: str) -> str:
    """One line saying which tier was asked for, what is in force, and why."""
    have = report.tier or "none"
    missing = "; ".join(
        f"{tier}: {report.why_not(tier)}" for tier in TIERS[: tier_rank(minimum) + 1]
    )
    return (
        f"the code_exec sandbox cannot run at isolation tier {minimum!r} here "
        f"(strongest available: {have}); {missing}"
    )
