"""Sandboxed programs as Ray tasks: ``evalspec score --executor ray``.

:class:`RaySandbox` has the surface scoring uses of
:class:`evalspec.sandbox.Sandbox` (``tier``, ``limits``, ``run``,
``run_tests``), so a metric's scorer cannot tell them apart. Each program (a
task's code followed by one test program) is one Ray task, scheduled on any
node of the cluster with a CPU. On its node the task builds (once per worker
process) an ordinary :class:`~evalspec.sandbox.Sandbox` with the same limits
and minimum tier, so every node applies the sandbox it would apply locally; a
node that cannot reach the minimum tier is refused when the executor starts.
A test program runs only after the previous one passed, exactly as
``Sandbox.run_tests`` does, so verdicts are those of a local run.

A node lost mid-run loses the Ray tasks it held: Ray reruns each on another
node up to ``max_retries`` times; a program still not run after that is a
``sandbox_error`` (never a fail): its task has no score and is counted, as
for a local sandbox failure.

Ray is the optional ``ray`` extra, imported only here and only when asked for.
The cluster's nodes need evalspec installed (the same version) in the
interpreter Ray starts workers with.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from evalspec.errors import EvalspecError, MissingDependencyError
from evalspec.sandbox import (
    TIERS,
    Limits,
    RunResult,
    Sandbox,
    SandboxUnavailable,
    TaskResult,
    require_opt_in,
)


class RayUnavailable(EvalspecError):
    """The Ray cluster cannot be reached (or started)."""


DEFAULT_MAX_RETRIES = 3
"""Reruns of a program whose node (or worker process) died before it finished."""

_node_sandboxes: dict[tuple[Limits, str | None], Sandbox] = {}
"""Per Ray worker process: the sandbox of each (limits, minimum tier), probed once."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`MissingDependencyError` naming the extra."""
    try:
        # By name: Ray is an optional extra, absent where the type checker runs.
        return importlib.import_module("ray")
    except ImportError as exc:
        raise MissingDependencyError("--executor ray", "ray", "ray") from exc


@contextlib.contextmanager
def stdout_kept_for_reports() -> Iterator[None]:
    """While Ray is connected, file descriptor 1 goes to stderr.

    Ray's driver threads print retries and worker errors to stdout; a report
    written to stdout must not be interleaved with them. On leaving, stdout
    is put back (after :func:`disconnect`, so nothing of Ray's follows).
    """
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _check_reachable(address: str | None) -> None:
    """Fail fast on a ``HOST:PORT`` nobody listens on: Ray itself retries for minutes."""
    if address is None or "://" in address or ":" not in address:
        return  # "auto", "local", a ray:// client URL: Ray's own resolution
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise RayUnavailable(f"cannot connect to the Ray cluster at {address}: {why}") from None


def connect(address: str | None) -> Any:
    """The ``ray`` module, connected to the cluster at ``address`` (see :class:`RaySandbox`)."""
    ray = import_ray()
    if not ray.is_initialized():
        _check_reachable(address)
        try:
            # Workers' output stays in the cluster's logs, not in evalspec's output.
            ray.init(address=address, log_to_driver=False, logging_level="WARNING")
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            where = address or "RAY_ADDRESS or a local cluster"
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RayUnavailable(f"cannot connect to the Ray cluster at {where}: {why}") from None
    return ray


def _node_sandbox(limits: Limits, minimum_tier: str | None) -> Sandbox:
    key = (limits, minimum_tier)
    box = _node_sandboxes.get(key)
    if box is None:
        # No worker slots on a node: a slot's zygote would outlive a node killed
        # mid-run and report its runs as killed programs; without them the runs die
        # with the node's worker, and Ray retries the task (tests/cluster).
        box = _node_sandboxes[key] = Sandbox(limits, minimum_tier=minimum_tier, slots=False)
    return box


def run_program(code: str, test: str, limits: Limits, minimum_tier: str | None) -> RunResult:
    """The body of one Ray task: one program in this node's sandbox."""
    try:
        box = _node_sandbox(limits, minimum_tier)
    except SandboxUnavailable as exc:
        return _sandbox_error("", f"this node cannot run the sandbox: {exc}")
    return box.run(code, test)


def probe_node(limits: Limits, minimum_tier: str | None) -> tuple[str | None, str]:
    """The body of a node's start-up probe: ``(tier, "")`` or ``(None, why not)``."""
    try:
        return _node_sandbox(limits, minimum_tier).tier, ""
    except SandboxUnavailable as exc:
        return None, str(exc)


def _sandbox_error(tier: str, detail: str) -> RunResult:
    return RunResult("sandbox_error", None, "", "", False, 0.0, tier, detail=detail)


def _weakest(tiers: Sequence[str]) -> str:
    return max(tiers, key=TIERS.index)


class RaySandbox:
    """Runs sandboxed programs as Ray tasks on the cluster at ``address``.

    ``address`` as for ``ray.init`` (``None``: ``RAY_ADDRESS``, else a running
    local cluster, else a new one on this machine). Every alive node with a
    CPU is probed at start-up; :class:`SandboxUnavailable` is raised when one
    cannot reach ``minimum_tier`` or none has a CPU. ``tier`` is the weakest
    tier among the nodes (what a result can promise); ``node_tiers`` lists
    each node's. ``default_jobs`` (the cluster's CPUs) is how many programs
    scoring keeps in flight unless told otherwise.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        minimum_tier: str | None = None,
        address: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self._started = not import_ray().is_initialized()
        ray = connect(address)
        self.limits = limits if limits is not None else Limits()
        self.minimum_tier = minimum_tier
        self.max_retries = max_retries
        self._ray = ray
        self._run = ray.remote(num_cpus=1, max_retries=max_retries)(run_program)
        self.node_tiers = self._probe_nodes()
        self.tier = _weakest(self.node_tiers)
        self.default_jobs = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def _probe_nodes(self) -> list[str]:
        ray = self._ray
        strategies = importlib.import_module("ray.util.scheduling_strategies")

        nodes = [n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) > 0]
        if not nodes:
            raise SandboxUnavailable("the Ray cluster has no alive node with a CPU")
        probe = ray.remote(num_cpus=1, max_retries=self.max_retries)(probe_node)
        refs = [
            probe.options(
                scheduling_strategy=strategies.NodeAffinitySchedulingStrategy(
                    n["NodeID"], soft=False
                )
            ).remote(self.limits, self.minimum_tier)
            for n in nodes
        ]
        tiers: list[str] = []
        problems: list[str] = []
        for node, (tier, why) in zip(nodes, ray.get(refs), strict=True):
            if tier is None:
                problems.append(f"node {node.get('NodeManagerAddress', node['NodeID'])}: {why}")
            else:
                tiers.append(tier)
        if problems:
            raise SandboxUnavailable("; ".join(problems))
        return sorted(tiers, key=TIERS.index)

    def provenance(self) -> dict[str, Any]:
        """Where programs ran, for the report: executor, node count and each node's tier."""
        return {"executor": "ray", "nodes": len(self.node_tiers), "node_tiers": self.node_tiers}

    def run(self, code: str, test: str, *, limits: Limits | None = None) -> RunResult:
        """One program as a Ray task; ``sandbox_error`` when Ray could not run it."""
        ray = self._ray
        ref = self._run.remote(code, test, limits or self.limits, self.minimum_tier)
        try:
            result: RunResult = ray.get(ref)
        except ray.exceptions.RayError as exc:
            # Node or worker lost beyond max_retries: no verdict on the program.
            why = str(exc).splitlines()[0].split(". ")[0] if str(exc) else "no detail"
            return _sandbox_error(
                self.tier,
                f"the Ray task was not run after {self.max_retries} retries "
                f"({type(exc).__name__}: {why})",
            )
        return result

    def run_tests(
        self, code: str, tests: Sequence[str], *, limits: Limits | None = None
    ) -> TaskResult:
        """``code`` against each test program, stopping at the first that does not pass.

        The same contract as ``Sandbox.run_tests``, each program a Ray task.
        """
        from evalspec.sandbox.runner import run_each

        return run_each(self.run, code, tests, limits=limits, tier=self.tier)

    def close(self) -> None:
        """Disconnect; a cluster this object started on this machine is stopped."""
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()

    def __repr__(self) -> str:
        return f"RaySandbox(tier={self.tier!r}, nodes={len(self.node_tiers)})"


def open_ray_sandbox(
    allow_code_exec: bool,
    *,
    address: str | None = None,
    limits: Limits | None = None,
    minimum_tier: str | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> RaySandbox:
    """A :class:`RaySandbox` once the code-execution opt-in is checked.

    :raises CodeExecNotAllowed: ``allow_code_exec`` is false.
    :raises MissingDependencyError: Ray is not installed.
    :raises SandboxUnavailable: a node cannot reach ``minimum_tier``.
    """
    require_opt_in(allow_code_exec)
    return RaySandbox(limits, minimum_tier=minimum_tier, address=address, max_retries=max_retries)


__all__ = [
    "DEFAULT_MAX_RETRIES",
    "RaySandbox",
    "RayUnavailable",
    "connect",
    "import_ray",
    "open_ray_sandbox",
    "stdout_kept_for_reports",
]
