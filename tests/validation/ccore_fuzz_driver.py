"""Fuzz the compiled core under the sanitizers (run by test_ccore_build.py, in its own process).

    python ccore_fuzz_driver.py SEEDS_FILE SECONDS

Imports ``_core`` from the first entry of ``sys.path`` (the AddressSanitizer +
UndefinedBehaviorSanitizer build), then, until SECONDS have passed: byte
mutations of every seed line (and of mutants that stayed JSON, so the search
walks away from the seeds), and documents written by ``ccore_cases.write``
(repeated keys, escapes of every kind) drawn by hypothesis. Every input goes
through ``unique_keys`` and ``unique_keys_colliding`` (every hash equal), and
whenever the standard library reads it as JSON, both answers must be its answer.
Every input also goes, as one line, through the ``Voucher`` (the whole per-line
check in C), and whatever it vouches for the precise path must admit, with the
same id. Then the digest table, held to a dict on random ids. A sanitizer finding ends
the process with the sanitizer's exit code; a disagreement raises. Prints one
line of counts.
"""

from __future__ import annotations

import random
import sys
import time

import _core  # type: ignore[import-not-found]  # the sanitizer build, put first on sys.path
from ccore_cases import HOSTILE, documents, mutations, reference, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalspec.registry.build import default_registry
from evalspec.validation.fast import core_voucher, legal_triples
from evalspec.validation.precise import line_outcome

MAX_DEPTH = 300
SPEC = default_registry().spec
VOUCHER = core_voucher(_core, legal_triples(SPEC))


def vouch(raw: bytes, counts: dict[str, int]) -> None:
    line = raw.replace(b"\n", b" ")
    ids, lengths = VOUCHER.block(line)
    assert len(ids) == (1 if line else 0) and len(lengths) == 8 * len(ids)
    flags, lengths2, sums = VOUCHER.block_digests(line)  # True and a digest, or block's answer
    assert lengths2 == lengths and len(sums) == 4 * len(ids)
    if ids and flags[0] is True:
        assert ids[0] is not None and sums == _core.id_digests([ids[0]]), line[:300]
    else:
        assert flags == ids, line[:300]
    assert _core.merged_digests(flags, sums) == _core.id_digests([x for x in ids if x is not None])
    if not ids or ids[0] is None:
        return
    outcome = line_outcome(2, line, SPEC)
    if outcome is None or outcome[1] or outcome[0]["task_id"] != ids[0]:
        raise AssertionError(f"the voucher vouched for {line[:300]!r}: {outcome!r}")
    counts["vouched"] += 1


def check(raw: bytes, counts: dict[str, int]) -> bool:
    vouch(raw, counts)
    got = _core.unique_keys(raw, MAX_DEPTH)
    if _core.unique_keys_colliding(raw, MAX_DEPTH) is not got:
        raise AssertionError(f"the colliding build disagrees on {raw[:300]!r}")
    counts["inputs"] += 1
    want = reference(raw, MAX_DEPTH)
    if want is None:
        return False
    if got is not want:
        raise AssertionError(f"core says {got}, json.loads says {want} on {raw[:300]!r}")
    counts["json"] += 1
    counts["repeated"] += not want
    return True


def tables(rng: random.Random, counts: dict[str, int]) -> None:
    """The digest table under the sanitizers: random ids (surrogates, empty, long)
    in batches, as ids or as their digests, with digests of 1 to 32 bits, held to a
    dict of first lines."""
    from array import array

    alphabet = ["a", "b", "\ud800", "\U0001f600", "\x00", "é"]
    for round_ in range(60):
        table = _core.DigestTable(weak_bits=rng.choice([1, 2, 8, 32]))
        if rng.random() < 0.5:  # sized once (1.25 slots an id, any number of slots)
            table.reserve(rng.randint(0, 3000))
        first: dict[str, int] = {}
        line = 0
        for _ in range(rng.randint(1, 6)):
            batch = [
                "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3 + round_)))
                for _ in range(rng.randint(0, 400))
            ]
            lines = array("q", range(line + 1, line + 1 + len(batch)))
            line += len(batch)
            offsets = array("q", (n * 7 for n in lines))
            if rng.random() < 0.5:  # as a worker sends them: digests only
                candidates = set(table.add_digests(_core.id_digests(batch), lines, offsets))
            else:
                candidates = set(table.add(batch, lines, offsets))
            for pos, task_id in enumerate(batch):
                if task_id in first:
                    assert pos in candidates, (task_id, first[task_id])
                    # Its line, found from the mark of its 64 lines (7 bytes a line here).
                    line_, mark, skip = next(
                        f for f in table.find(task_id) if f[0] == first[task_id]
                    )
                    assert 0 <= skip < 64 and mark + 7 * skip == 7 * line_, (line_, mark, skip)
                elif pos in candidates:
                    table.insert(task_id, lines[pos], 7 * lines[pos])
                    first[task_id] = lines[pos]
                else:
                    first[task_id] = lines[pos]
            assert len(table) == len(first)
            counts["table_ids"] += len(batch)
    spans(rng, counts)


def spans(rng: random.Random, counts: dict[str, int]) -> None:
    """span_lines under the sanitizers: random lengths with skipped lines that are and
    are not lines of the block (those must be refused, never read past)."""
    from array import array

    for _ in range(300):
        n = rng.randint(0, 200)
        lengths = array("q", (rng.randint(0, 2000) for _ in range(n)))
        origin = rng.randint(0, 1000)
        if n and rng.random() < 0.8:
            skipped = sorted(rng.sample(range(origin, origin + n), rng.randint(0, n)))
            valid = True
        else:  # anything: out of order, repeated, outside the block, too many
            skipped = [
                rng.randint(origin - 5, origin + n + 5) for _ in range(rng.randint(0, n + 3))
            ]
            valid = skipped == sorted(set(skipped)) and all(
                origin <= k < origin + n for k in skipped
            )
        try:
            lines, offsets = _core.span_lines(lengths, array("q", skipped), origin, 3, 10)
        except ValueError:
            assert not valid, (list(lengths), skipped, origin)
            continue
        assert valid, (list(lengths), skipped, origin)
        kept = [i for i in range(n) if origin + i not in set(skipped)]
        assert array("q", lines).tolist() == [origin + i + 3 for i in kept]
        assert array("q", offsets).tolist() == [10 + sum(lengths[:i]) for i in kept]
        counts["span_lines"] += 1


def main() -> None:
    seeds_file, seconds = sys.argv[1], float(sys.argv[2])
    with open(seeds_file, "rb") as f:
        seeds = [line for line in f.read().split(b"\n") if line] + HOSTILE
    assert _core.__file__ is not None and "site-packages" not in _core.__file__
    with open("/proc/self/maps") as maps:
        assert "libasan" in maps.read(), "not run under AddressSanitizer"
    counts = {"inputs": 0, "json": 0, "repeated": 0, "vouched": 0, "table_ids": 0, "span_lines": 0}
    rng = random.Random(2025)
    deadline = time.monotonic() + seconds
    for raw in seeds:
        check(raw, counts)
    pool = list(seeds)
    mutating_until = deadline - seconds / 3  # the last third: generated documents
    while time.monotonic() < mutating_until:
        seed = rng.choice(pool)
        for raw in mutations(seed, rng, 20):
            if check(raw, counts) and len(pool) < 5000 and len(raw) < 100_000:
                pool.append(raw)  # still JSON: mutated further later

    @settings(
        max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(doc=documents, seed=st.integers(0, 2**32))
    def generated(doc: object, seed: int) -> None:
        raw = write(doc, random.Random(seed)).encode("utf-8")
        if not check(raw, counts):
            raise AssertionError(f"the writer wrote what json.loads does not read: {raw!r}")

    while time.monotonic() < deadline:
        generated()  # each run draws new documents
    tables(rng, counts)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
