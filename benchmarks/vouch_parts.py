"""Where the fast path's time goes, measured in one process (no start-up, no I/O).

    python benchmarks/vouch_parts.py FILE [--rounds 5]

Reads FILE into ~1 MiB blocks of whole lines (as ``evalspec.validation.engine`` does),
then, interleaved round by round, times the floor (``orjson.loads`` per line)
and ``FastPath.vouch_ids`` over every block, and a few of the fast path's
parts alone: the msgspec decode, the colon counts and the metadata
re-encoding; then the typed check built up step by step on the lines the
fast path vouches for (typed decode, + the category-pair lookup, + the id
and prompt checks, + the duplicate-key proof), and, if jiter is installed,
a C parser that does report repeated keys (``catch_duplicate_keys``) with
no field checks at all. Printed: the minimum and the median of each, and its ratio to
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
from evalspec.validation.fast import FastPath, _typed_decoder


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

    # The typed check built up step by step, on the lines the fast path vouches for
    # (what each of its steps adds to the decode; see fastpath._typed_vouchers).
    fast_lines = [line for line, v in zip(lines, vouched, strict=True) if v is not None]
    legal = {
        (name, metric, rule): None
        for name, cat in spec.categories.items()
        for metric in cat.metrics
        for rule in cat.post_processes
    }
    typed = _typed_decoder(spec, legal).decode
    unset = msgspec.UNSET

    def typed_decode() -> None:
        for line in fast_lines:
            typed(line)

    def plus_pair_lookup() -> None:
        for line in fast_lines:
            t = typed(line)
            legal.get((t.category, t.metric_name, t.post_process))

    def plus_id_and_prompt_checks() -> None:
        for line in fast_lines:
            t = typed(line)
            legal.get((t.category, t.metric_name, t.post_process))
            tid = t.task_id
            _ = " " in tid or not tid.isprintable()
            _ = t.prompt[-1].isspace()

    def plus_duplicate_key_proof() -> None:
        for line in fast_lines:
            t = typed(line)
            legal.get((t.category, t.metric_name, t.post_process))
            tid = t.task_id
            _ = " " in tid or not tid.isprintable()
            _ = t.prompt[-1].isspace()
            k = 6 + t.prompt.count(":") + tid.count(":") + "\x00".join(t.targets).count(":")
            if t.few_shot_examples:
                k += 1 + encode(t.few_shot_examples).count(b":")
            if t.metadata is not unset:
                k += 1 + encode(t.metadata).count(b":")
            _ = k == line.count(b":")

    parts: list[Callable[[], Any]] = [
        vouch_ids,
        msgspec_untyped,
        colon_count_per_line,
        metadata_reencoded,
        typed_decode,
        plus_pair_lookup,
        plus_id_and_prompt_checks,
        plus_duplicate_key_proof,
    ]
    try:  # a C parser that does report repeated keys (untyped: no field checks)
        import jiter
    except ImportError:
        pass
    else:

        def jiter_catching_duplicate_keys() -> None:
            for line in lines:
                try:  # noqa: SIM105  (as in the floor)
                    jiter.from_json(line, catch_duplicate_keys=True, allow_inf_nan=False)
                except ValueError:
                    pass

        parts.append(jiter_catching_duplicate_keys)
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
