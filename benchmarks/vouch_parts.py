"""Where the fast path's time goes, measured in one process (no start-up, no I/O).

    python benchmarks/vouch_parts.py FILE [--rounds 5]

Reads FILE into ~1 MiB blocks of whole lines (as ``evalspec.parallel`` does),
then, interleaved round by round, times the floor (``orjson.loads`` per line)
and ``FastPath.vouch_ids`` over every block, and a few of the fast path's
parts alone: the msgspec decode, the colon counts and the metadata
re-encoding. Printed: the minimum and the median of each, and its ratio to
the floor of the same round (median of the paired ratios). The precise path
(the ~2% of lines the fast path does not vouch for) and the uniqueness table
are not in these figures; ``bench.py`` measures the whole command.
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

import evalspec
from evalspec.fastpath import FastPath


def _blocks(path: str) -> list[tuple[bytes, list[bytes]]]:
    blocks = []
    with open(path, "rb") as f:
        while data := f.read(1 << 20):
            data += f.readline()
            blocks.append((data, io.BytesIO(data).readlines()))
    return blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spec = evalspec.default_registry().spec
    fast = FastPath(spec)
    blocks = _blocks(args.file)
    lines = [line for _, block_lines in blocks for line in block_lines]
    loads = orjson.loads
    encode = msgspec.json.Encoder().encode
    vouched = [t for data, ls in blocks for t in fast.vouch_ids(ls, data)]
    print(f"{args.file}: {len(lines)} lines, {sum(v is not None for v in vouched)} vouched for")
    decode = msgspec.json.Decoder().decode  # untyped: the parse alone, as a reference
    metas = []
    for line in lines:
        try:
            obj = loads(line)
        except orjson.JSONDecodeError:
            continue
        if type(obj) is dict and type(obj.get("metadata")) is dict:
            metas.append(obj["metadata"])

    def floor() -> None:
        for line in lines:
            try:  # noqa: SIM105  (suppress() would add a context manager to the floor)
                loads(line)
            except orjson.JSONDecodeError:
                pass

    def vouch_ids() -> None:
        for data, ls in blocks:
            fast.vouch_ids(ls, data)

    def msgspec_untyped() -> None:
        for line in lines:
            try:  # noqa: SIM105  (as in the floor)
                decode(line)
            except msgspec.DecodeError:
                pass

    def colon_count_per_line() -> None:
        for line in lines:
            line.count(b":")

    def metadata_reencoded() -> None:
        for meta in metas:
            encode(meta).count(b":")

    parts: list[Callable[[], Any]] = [
        vouch_ids,
        msgspec_untyped,
        colon_count_per_line,
        metadata_reencoded,
    ]
    times: dict[str, list[float]] = {f.__name__: [] for f in [floor, *parts]}
    for _ in range(args.rounds):
        for f in [floor, *parts]:
            gc.collect()
            gc.disable()
            t0 = time.perf_counter()
            f()
            times[f.__name__].append(time.perf_counter() - t0)
            gc.enable()
    print("| part | min s | median s | x floor (paired median) |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        ratio = statistics.median(t / fl for t, fl in zip(ts, times["floor"], strict=True))
        print(f"| {name} | {min(ts):.3f} | {statistics.median(ts):.3f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
