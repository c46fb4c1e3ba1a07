"""Where `validate --jobs 1`'s memory goes: /proc/self/status at points of one run.

    python -P benchmarks/id_memory.py FILE

Runs ``iter_problems(FILE, jobs=1)`` in this process and prints VmHWM, VmRSS,
RssAnon and RssFile (MiB) with the minor page faults so far: after the imports and
the registry snapshot, after chunks 1, 2, 10, 50, 100, 150 and 200 (4 MiB each),
and at the end (the id table freed). Linux only (/proc).
"""

from __future__ import annotations

import resource
import sys

from evalspec.registry.build import default_registry
from evalspec.validation.engine import Tally, iter_problems

FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile")
AT_CHUNKS = {1, 2, 10, 50, 100, 150, 200}


def status() -> str:
    got = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in FIELDS:
                got[key] = int(value.split()[0]) // 1024
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    return " ".join(f"{k}={got[k]}" for k in FIELDS) + f" MiB, minor faults {faults}"


def main() -> None:
    path = sys.argv[1]
    spec = default_registry().spec
    print("imports and registry:", status(), flush=True)
    chunks = 0

    def on_chunk(tally: Tally) -> None:
        nonlocal chunks
        chunks += 1
        if chunks in AT_CHUNKS:
            print(f"chunk {chunks}:", status(), flush=True)

    problems = sum(1 for _ in iter_problems(path, jobs=1, spec=spec, on_chunk=on_chunk))
    print(f"end ({problems} problems):", status())


if __name__ == "__main__":
    main()
