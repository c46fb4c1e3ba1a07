"""Peak memory of ``evalspec diff`` against ``evalspec validate`` on the same files.

    python benchmarks/diff_memory.py --tasks 100000

``diff`` keeps, per task id, its line, byte offset and a 16-byte digest of
the line, and reads again only the tasks that differ; ``validate`` keeps
only the ids. So both should stay far below the size of the file. The new
file is the old one with every 100th task edited, every 250th removed and a
few added. Printed: file size and each command's peak RSS (``ru_maxrss`` of
its own process, measured in a fresh child so the figures are separate).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import valid_task  # noqa: E402  (a sibling script, not a package)

# Runs COMMAND in a grandchild and prints the grandchild's peak RSS in KiB.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def write_pair(n: int, old: Path, new: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    with old.open("w", encoding="utf-8") as a, new.open("w", encoding="utf-8") as b:
        for i in range(n):
            task = valid_task(rng, i)
            a.write(json.dumps(task) + "\n")
            if i % 250 == 0:
                continue  # removed
            if i % 100 == 0:
                task = {**task, "prompt": task["prompt"] + " (edited)"}
            b.write(json.dumps(task) + "\n")
        for i in range(n, n + n // 500):
            b.write(json.dumps(valid_task(rng, i)) + "\n")


def peak_kib(*command: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    args = parser.parse_args()
    evalspec = [sys.executable, "-m", "evalspec"]
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "old.jsonl", Path(tmp) / "new.jsonl"
        write_pair(args.tasks, old, new)
        size = new.stat().st_size
        diff = peak_kib(*evalspec, "diff", "--format", "json", str(old), str(new))
        validate = peak_kib(*evalspec, "validate", "--jobs", "1", str(new))
        baseline = peak_kib(sys.executable, "-c", "import evalspec.cli.dispatch")
    print(f"tasks: {args.tasks}, new file: {size / 2**20:.1f} MiB")
    print(f"python + import evalspec.cli.dispatch: {baseline / 1024:.0f} MiB peak RSS")
    print(f"evalspec validate:            {validate / 1024:.0f} MiB peak RSS")
    print(f"evalspec diff:                {diff / 1024:.0f} MiB peak RSS")


if __name__ == "__main__":
    main()
