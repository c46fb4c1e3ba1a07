"""Sandboxed runs per second: the local pool at ``--jobs 1`` and ``--jobs 2``, and Ray.

    python benchmarks/scale.py --programs 60
    python benchmarks/scale.py --programs 60 --ray-address 127.0.0.1:6379

Each configuration scores the same ``code_exec`` tasks through
``evalspec.score_tasks`` (the path ``evalspec score`` takes): one program per
task, a trivial function and one test, so the figure is the per-run overhead
(interpreter start-up, sandbox set-up, scheduling), not the program. Ray runs
against ``--ray-address``, else a Ray instance started for the run on this
machine (install the ``ray`` extra; without it the Ray rows are skipped). The
Ray rows are measured twice: ``--jobs 1`` (one program in flight: the added
latency per run) and the default (as many in flight as the cluster has CPUs).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from evalspec import TaskSpec, score_tasks
from evalspec.sandbox import Limits, Sandbox

CODE = "```python\ndef add(a, b):\n    return a + b\n```"
TEST = "assert add(2, 3) == 5"


def tasks(n: int) -> tuple[list[TaskSpec], dict[str, str]]:
    specs = [
        TaskSpec(f"t{i}", "code_exec", "Write add.", [TEST], "code_exec", "extract_code_block")
        for i in range(n)
    ]
    return specs, {t.task_id: CODE for t in specs}


def measure(run: Callable[[], Any], programs: int, repeats: int) -> tuple[float, float]:
    """(median runs/s, median seconds per run) over ``repeats`` rounds."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        rates.append(programs / (time.perf_counter() - start))
    rate = statistics.median(rates)
    return rate, 1.0 / rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=40, help="programs per round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per configuration")
    parser.add_argument("--ray-address", default=None, help="an existing Ray cluster")
    args = parser.parse_args()

    specs, preds = tasks(args.programs)
    limits = Limits(cpu_seconds=5, wall_seconds=20.0)
    local = Sandbox(limits)
    rows: list[tuple[str, float, float]] = []

    def local_run(jobs: int) -> Callable[[], Any]:
        return lambda: score_tasks(specs, preds, allow_code_exec=True, sandbox=local, jobs=jobs)

    # One warm-up round: the tier probe and the interpreter's page cache.
    local_run(1)()
    for jobs in (1, 2):
        rate, per = measure(local_run(jobs), args.programs, args.repeats)
        rows.append((f"local --jobs {jobs} ({local.tier})", rate, per))

    if importlib.util.find_spec("ray") is None:
        print("ray is not installed: pip install 'evalspec-contract[ray]'", file=sys.stderr)
    else:
        from evalspec.cluster.ray import RaySandbox

        box = RaySandbox(limits, address=args.ray_address)
        try:
            score_tasks(specs, preds, allow_code_exec=True, sandbox=box)  # warm the workers
            for jobs in (1, None):
                label = f"ray --jobs {jobs or box.default_jobs} ({len(box.node_tiers)} nodes)"

                def ray_run(jobs: int | None = jobs) -> Any:
                    return score_tasks(specs, preds, allow_code_exec=True, sandbox=box, jobs=jobs)

                rate, per = measure(ray_run, args.programs, args.repeats)
                rows.append((label, rate, per))
        finally:
            box.close()

    print(f"{'executor':<36} {'runs/s':>8} {'ms/run':>8}")
    for label, rate, per in rows:
        print(f"{label:<36} {rate:>8.1f} {per * 1000:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
