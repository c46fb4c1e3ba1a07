"""lint's semantic checks in one process: a baseline tree's ``SemanticChecks`` against
this tree's, on the tasks the validator's fast path vouches for, interleaved.

    python benchmarks/lint_checks.py FILE --mix default|other --baseline /tmp/evalspec-old

Both get the same msgspec structs (decoded once, beforehand), in line order, the
first task of each id only, as lint's reader hands them over; this tree's checker
is given the reader's id table (filled in the timed loop, which the baseline's
reader paid outside its checker) and recalls the lines it asks for from memory
(lint reads them again from the file). The findings must be identical.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import LINT_LABELS  # noqa: E402  (the labels bench.py --lint writes)

from evalspec.evals import lint as new  # noqa: E402
from evalspec.evals.labels import parse_labels  # noqa: E402
from evalspec.registry.build import default_registry  # noqa: E402
from evalspec.validation.fast import FastPath  # noqa: E402


def _baseline_lint(tree: Path) -> Any:
    """The baseline's ``evalspec/evals/lint.py``, on this tree's other modules."""
    spec = importlib.util.spec_from_file_location(
        "baseline_lint", tree / "evalspec" / "project" / "lint.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--mix", choices=sorted(LINT_LABELS), default="default")
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    old = _baseline_lint(args.baseline)
    registry = default_registry()
    vouch = FastPath(registry.spec).vouch_struct
    assert vouch is not None, "needs msgspec (the fast extra)"
    labels, _ = parse_labels(LINT_LABELS[args.mix])
    tasks: list[tuple[int, Any]] = []
    ids: set[str] = set()
    with args.file.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            task = vouch(raw)
            if task is not None and task.task_id not in ids:
                ids.add(task.task_id)
                tasks.append((number, task))
    by_line = dict(tasks)

    def run_old() -> tuple[float, list[Any]]:
        checks = old.SemanticChecks(registry, labels)
        add = checks.add_struct
        start = time.perf_counter()
        for number, task in tasks:
            add(number, task)
        found = checks.findings()
        return time.perf_counter() - start, found

    def recall(lines: set[int]) -> Iterator[tuple[int, Any]]:
        return ((n, by_line[n]) for n in sorted(lines))

    def run_new() -> tuple[float, list[Any]]:
        seen: dict[str, int] = {}
        checks = new.SemanticChecks(registry, labels, keep_tasks=False, seen=seen)
        add, first = checks.add_struct, seen.setdefault
        start = time.perf_counter()
        for number, task in tasks:
            first(task.task_id, number)
            add(number, task)
        found = checks.findings(recall)
        return time.perf_counter() - start, found

    runs: dict[str, Callable[[], tuple[float, list[Any]]]] = {"baseline": run_old, "this": run_new}
    times: dict[str, list[float]] = {name: [] for name in runs}
    expected: list[Any] | None = None
    for _ in range(args.rounds):
        for name, run in runs.items():
            gc.collect()
            gc.disable()  # as lint's reader runs
            try:
                took, found = run()
            finally:
                gc.enable()
            times[name].append(took)
            if expected is None:
                expected = found
            assert found == expected, "the findings differ"
    assert expected is not None
    print(f"{args.file}: {len(tasks)} tasks, {len(expected)} findings, identical: True")
    for name, values in times.items():
        print(f"  {name}: min {min(values):.3f} s, median {statistics.median(values):.3f} s")
    ratio = statistics.median(b / a for a, b in zip(times["baseline"], times["this"], strict=True))
    print(f"  this / baseline (paired median): {ratio:.2f}x")


if __name__ == "__main__":
    main()
