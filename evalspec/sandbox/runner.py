"""The :class:`Sandbox`: runs a task's code against its test programs."""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

import attrs

import evalspec.sandbox.verdict as verdict
from evalspec.sandbox.driver import NEVER_CALLED
from evalspec.sandbox.errors import NoTestsError, SandboxUnavailable, WeakIsolationWarning
from evalspec.sandbox.limits import Limits
from evalspec.sandbox.process import LaunchPlan, execute
from evalspec.sandbox.results import RunResult, TaskResult
from evalspec.sandbox.tiers import TIERS, probe, probe_tier, tier_rank, unavailable_message
from evalspec.sandbox.turns import Turns


def default_minimum_tier() -> str:
    """The weakest tier a sandbox falls back to when none is asked for.

    As root, ``uid-drop``: rlimits-only would run the program as root (one
    ``os.kill(-1, SIGKILL)`` ends every root process on the machine), so it is
    used only when asked for by name. Otherwise any tier.
    """
    return "uid-drop" if os.geteuid() == 0 else TIERS[-1]


class Sandbox:
    """Runs untrusted programs at the strongest isolation tier this machine allows.

    ``limits`` defaults to ``Limits()``; any run may pass its own.

    The tier is probed once per process (see :func:`probe_isolation`). With
    ``minimum_tier`` set, construction raises :class:`SandboxUnavailable`
    rather than run at a weaker tier; there is never a silent downgrade below
    it. Unset, a root harness still refuses ``rlimits-only`` (see
    :func:`default_minimum_tier`). ``tier`` asks for exactly one tier (raises
    when it is unavailable), for instance to compare tiers or test a weaker one. ``python`` pins the
    interpreter programs run under and ``unshare`` the util-linux ``unshare``
    binary (both found automatically by default).

    ``trust_custom_types`` is the escape hatch for test suites that compare
    values of the program's own classes (``assert Point(1, 2) == p``): such
    comparisons, truth tests, ``len``, hashing and iteration are then
    delegated to the program instead of failing the run. That lets the
    program decide those outcomes (an ``__eq__`` that is always true passes),
    so it is off by default and every result names it (``custom_types``).
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        minimum_tier: str | None = None,
        tier: str | None = None,
        python: str | None = None,
        unshare: str | None = None,
        trust_custom_types: bool = False,
        slots: bool = True,
    ) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
        if minimum_tier is not None:
            tier_rank(minimum_tier)  # reject unknown names before probing
        if tier is not None:
            plan, why = probe_tier(tier, python, unshare)
            if plan is None:
                raise SandboxUnavailable(
                    f"the code_exec sandbox cannot run at isolation tier {tier!r} here: "
                    + "; ".join(why)
                )
        else:
            report = probe(python, unshare)
            plan = report.plan
            minimum = minimum_tier if minimum_tier is not None else default_minimum_tier()
            if plan is None or tier_rank(plan.tier) > tier_rank(minimum):
                message = unavailable_message(report, minimum)
                if minimum_tier is None and minimum != TIERS[-1]:
                    message += (
                        "; a root harness never runs a program as root by default: give it "
                        "util-linux unshare (and unprivileged namespaces), or accept "
                        "rlimits-only explicitly with --min-isolation rlimits-only "
                        "(Sandbox(minimum_tier='rlimits-only'))"
                    )
                raise SandboxUnavailable(message)
        if minimum_tier is not None and tier_rank(plan.tier) > tier_rank(minimum_tier):
            raise SandboxUnavailable(
                f"isolation tier {plan.tier!r} was asked for, below the minimum {minimum_tier!r}"
            )
        if plan.tier == "rlimits-only" and os.geteuid() == 0:
            warnings.warn(
                "the code_exec sandbox runs as root at isolation tier 'rlimits-only': "
                "RLIMIT_NPROC binds nothing for root (a fork bomb is bounded only by the "
                "run's pids cgroup where one can be made, else by the wall clock), the "
                "program can write anywhere root can, mount, and reach the network",
                WeakIsolationWarning,
                stacklevel=2,
            )
        if type(trust_custom_types) is not bool:
            raise TypeError(f"trust_custom_types must be a bool, got {trust_custom_types!r}")
        self.trust_custom_types = trust_custom_types
        self.limits = limits if limits is not None else Limits()
        # ``slots=False``: every run starts its own interpreters, a child of this
        # process (the Ray executor: a node killed mid-run must take its runs with it,
        # so that Ray retries the task instead of reporting a killed program).
        self._plan: LaunchPlan = plan if slots else attrs.evolve(plan, slots=False)
        self._turns: Turns | None = None

    @property
    def tier(self) -> str:
        """The isolation tier every run of this sandbox uses."""
        return self._plan.tier

    @property
    def python(self) -> str:
        """The interpreter programs run under."""
        return self._plan.python_version or self._plan.python

    def __repr__(self) -> str:
        trust = ", trust_custom_types=True" if self.trust_custom_types else ""
        return f"Sandbox(tier={self.tier!r}, python={self.python!r}, limits={self.limits!r}{trust})"

    def paced(self, jobs: int) -> Sandbox:
        """This sandbox, its runs taking turns: at most ``jobs`` execute programs at once.

        Call it from up to ``2 * jobs`` threads (:meth:`map` does): each run is
        prepared at once (its directory, cgroup, leader, namespaces and private
        root), then waits for a turn before its supervisor gets the job, so the
        next runs' preparation overlaps the programs running now. A run's wall
        clock starts with its turn. See :mod:`evalspec.sandbox.turns`.
        """
        view = copy.copy(self)
        view._turns = Turns(jobs)
        return view

    def run(self, code: str, test: str, *, limits: Limits | None = None) -> RunResult:
        """Run the program ``code`` against the test program ``test``.

        The test runs in its own process with pristine builtins, reaching
        ``code``'s top-level names through proxies whose arguments and results
        cross as plain data; the run passes only when every test statement
        ran and held (see :mod:`evalspec.sandbox.driver`) and the tests called
        into the program (read or called one of its names); a blank ``test``
        tests nothing and fails without running.
        """
        if not test.strip():
            return RunResult(
                "fail",
                None,
                "",
                "",
                False,
                0.0,
                self.tier,
                detail=f"the test program is empty: {NEVER_CALLED}",
                python=self.python,
                custom_types=verdict.custom_types(self.trust_custom_types),
            )
        return execute(
            self._plan,
            code,
            limits or self.limits,
            test,
            trust_custom_types=self.trust_custom_types,
            turns=self._turns,
        )

    def run_tests(
        self, code: str, tests: Sequence[str], *, limits: Limits | None = None
    ) -> TaskResult:
        """Run ``code`` against each test program, each in its own process.

        Stops at the first test that does not pass (the task has failed, or has
        no verdict when that run was a ``sandbox_error``).
        """
        return run_each(
            self.run,
            code,
            tests,
            limits=limits,
            tier=self.tier,
            custom_types=verdict.custom_types(self.trust_custom_types),
        )

    def iter_map(
        self,
        items: Iterable[tuple[str, Sequence[str]]],
        *,
        jobs: int = 1,
        limits: Limits | None = None,
    ) -> Iterator[tuple[int, TaskResult]]:
        """Run many ``(code, tests)`` tasks, ``jobs`` programs at a time; yield
        ``(index, result)`` as each finishes (for progress reporting).

        ``2 * jobs`` threads run them through :meth:`paced`: ``jobs`` runs
        execute while as many more are prepared. Each thread only launches
        subprocesses (never forks the harness).
        """
        if type(jobs) is not int or jobs < 1:
            raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
        paced = self.paced(jobs)
        with ThreadPoolExecutor(
            max_workers=2 * jobs, thread_name_prefix="evalspec-sandbox"
        ) as pool:
            futures = {
                pool.submit(paced.run_tests, code, tests, limits=limits): index
                for index, (code, tests) in enumerate(items)
            }
            for future in as_completed(futures):
                yield futures[future], future.result()

    def map(
        self,
        items: Iterable[tuple[str, Sequence[str]]],
        *,
        jobs: int = 1,
        limits: Limits | None = None,
    ) -> list[TaskResult]:
        """Run many ``(code, tests)`` tasks, ``jobs`` programs at a time; results in input order."""
        done = dict(self.iter_map(items, jobs=jobs, limits=limits))
        return [done[i] for i in range(len(done))]


def run_each(
    run: Callable[..., RunResult],
    code: str,
    tests: Sequence[str],
    *,
    limits: Limits | None,
    tier: str,
    custom_types: str = "refused",
) -> TaskResult:
    """``run(code, test, limits=limits)`` for each test program, stopping at the
    first that does not pass: the contract of :meth:`Sandbox.run_tests`, shared
    by every executor (local or on a cluster)."""
    if isinstance(tests, str):
        raise TypeError("tests must be a sequence of test programs, not one string")
    if not tests:
        raise NoTestsError("a task needs at least one test program; none were given")
    results: list[RunResult] = []
    for test in tests:
        result = run(code, test, limits=limits)
        results.append(result)
        if not result.passed:
            break
    return TaskResult(
        results=tuple(results), tier=tier, tests=len(tests), custom_types=custom_types
    )
