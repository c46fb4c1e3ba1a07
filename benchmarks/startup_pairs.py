"""Start-up of whole commands, each round paired with ``python -c pass`` of the same round.

    python benchmarks/startup_pairs.py [--rounds 30] [--cwd DIR] 'NAME=COMMAND' ...

The first command is the one every ratio is taken to (give ``python -c pass``
of the venv measured). Each round runs every command once, in the order given,
after 3 warm-up rounds (byte code and caches written); printed per command: the
minimum and the median wall time, the median of its paired ratios to the first
command, and the same for CPU time (user + sys of the child, ``getrusage``).
COMMAND is split at spaces; write a space inside one argument as ``@``
(``python -c import@evalspec``). Used for issue 25's start-up figures
(benchmarks/README.md, "Issue 25: warm start-up"), with a venv of each tree:

    python benchmarks/startup_pairs.py --cwd /tmp/quiet \\
        'python -c pass=/tmp/venv-main/bin/python -c pass' \\
        'main=/tmp/venv-main/bin/python -m evalspec validate fixtures/tasks.jsonl' \\
        'branch=/tmp/venv-branch/bin/python -m evalspec validate fixtures/tasks.jsonl'

Run them in a directory nothing writes to (``--cwd``): ``python -m`` puts it on
``sys.path``, which is part of the registry snapshot's key.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import time


def _run(cmd: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, cwd=cwd, env=env, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu


def _paired(xs: list[float], base: list[float]) -> float:
    return statistics.median(x / b for x, b in zip(xs, base, strict=True) if b > 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("rows", nargs="+", metavar="NAME=COMMAND")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cwd", default=os.getcwd())
    args = parser.parse_args()
    rows = []
    for row in args.rows:
        name, _, command = row.partition("=")
        rows.append((name, [word.replace("@", " ") for word in command.split()]))
    # The measured commands write byte code as they would for a user.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for _ in range(3):
        for _, cmd in rows:
            _run(cmd, args.cwd, env)
    wall: dict[str, list[float]] = {name: [] for name, _ in rows}
    cpu: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.rounds):
        for name, cmd in rows:
            w, c = _run(cmd, args.cwd, env)
            wall[name].append(w)
            cpu[name].append(c)
    first = rows[0][0]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.rounds} rounds, load average now {load}\n")
    print(f"| command | min ms | median ms | x {first} (paired median) | CPU ms median | CPU x |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, _ in rows:
        print(
            f"| {name} | {min(wall[name]):.1f} | {statistics.median(wall[name]):.1f} "
            f"| {_paired(wall[name], wall[first]):.2f} | {statistics.median(cpu[name]):.1f} "
            f"| {_paired(cpu[name], cpu[first]):.2f} |"
        )


if __name__ == "__main__":
    main()
