"""Measure ``evalspec validate`` against the orjson parse floor and its peers, in one run.

    python benchmarks/bench.py --tasks 1000000 --repeats 3

Every approach runs as its own process on the same file, once per round;
each round also runs the floor (``orjson.loads`` per line), so every ratio
is paired with a floor measured moments apart, which matters on a shared
machine. Printed per approach: records/s (median), the per-record time as a
multiple of the floor's (min / median / max over rounds) and peak RSS of
the process tree. ``--startup`` adds start-up figures, ``--postprocess`` the
post-process rules on 1 MB adversarial inputs, ``--scoring`` the metrics if
``evalspec.score`` exists. Peers that are not installed are skipped (install
the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from generate import MIXES  # noqa: E402  (a sibling script, not a package)

PEERS = {  # approach -> (module it needs, what it reports)
    "msgspec": ("msgspec", "first error only"),
    "pydantic": ("pydantic", "field errors only"),
    "fastjsonschema": ("fastjsonschema", "first error only"),
    "jsonschema": ("jsonschema", "all schema errors"),
}
SLOW = {"jsonschema": 20_000}  # lines: the slowest peers run on a prefix


TIME = "/usr/bin/time"  # GNU time: its %M is the child's own peak RSS
# Measure as installed code runs: with byte-code caches, not compiling every start.
# PYTHONSAFEPATH (Python 3.11+): `python -m evalspec` puts the current directory on
# sys.path, as the console script does not, and the registry snapshot stamps each
# sys.path directory's mtime (a module or .dist-info there may shadow a plugin's):
# run from /tmp, where every --jobs run and this script's own temporary files change
# that mtime, each run of this tree rebuilt its snapshot (~60 ms) and the baseline's
# (run with PYTHONSAFEPATH) did not.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONSAFEPATH"] = "1"


def run(
    cmd: Sequence[str],
    out: str = os.devnull,
    ok: tuple[int, ...] = (0,),
    env: dict[str, str] | None = None,
) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one command.

    Through GNU time when present: a child forked straight from this (larger)
    process would report this process's RSS as its own peak.
    """
    with tempfile.NamedTemporaryFile("r") as rss_file, open(out, "wb") as sink:
        timed = [TIME, "-f", "%M", "-o", rss_file.name, *cmd] if os.path.exists(TIME) else cmd
        start = time.perf_counter()
        proc = subprocess.Popen(timed, stdout=sink, stderr=subprocess.PIPE, env=env or ENV)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak = usage.ru_maxrss
        if timed is not cmd:
            reported = rss_file.read().strip().splitlines()
            peak = int(reported[-1]) if reported and reported[-1].isdigit() else peak
    if proc.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return elapsed, peak


def ensure_file(n: int, path: Path, mix: str = "default") -> Path:
    if not path.exists():
        print(f"generating {n} tasks ({mix} mix) into {path} ...", file=sys.stderr)
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            for line in MIXES[mix](n):
                f.write(line + b"\n")
        tmp.rename(path)
    return path


def _baseline_env(baseline: Path | None) -> dict[str, str]:
    """The environment that runs the evalspec source tree ``baseline`` instead."""
    if baseline is None:
        return ENV
    # ENV's PYTHONSAFEPATH matters here too: ``python -m evalspec`` run from a checkout
    # would otherwise import the checkout's evalspec (the current directory comes
    # first on sys.path), not the baseline's, and the "baseline" would be this tree.
    return dict(ENV, PYTHONPATH=str(baseline), EVALSPEC_NO_PLUGIN_CACHE="")


# The labels each generator writes into task metadata (a string label with its
# values), so that lint reports the file's problems, not every task's label.
LINT_LABELS = {
    "default": "labels:\n  difficulty: [easy, medium, hard]\n"
    "  source: [synthetic, logged, curated]\nrequired: []\n",
    "other": "labels:\n  语言: [中文, English, 日本語]\nrequired: []\n",
}


def _lint_layout(path: Path, root: Path, mix: str = "default") -> Path:
    """An evals-as-code layout whose one dataset is ``path`` (hard-linked, or copied),
    with the labels of the ``mix`` that wrote it."""
    layout = root / "layout"
    subprocess.run(
        [sys.executable, "-m", "evalspec", "init", str(layout)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=ENV,
    )
    dataset = layout / "datasets" / "example.jsonl"
    dataset.unlink()
    try:
        os.link(path, dataset)
    except OSError:
        shutil.copyfile(path, dataset)
    (layout / "config" / "labels.yaml").write_text(LINT_LABELS[mix], encoding="utf-8")
    return layout


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def machine_parallelism(jobs: int) -> float:
    """How much faster ``jobs`` processes burn CPU than one, right now (1.0 to jobs)."""
    import multiprocessing

    work = [3_000_000] * (2 * jobs)
    start = time.perf_counter()
    for n in work:
        _burn(n)
    serial = time.perf_counter() - start
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        start = time.perf_counter()
        pool.map(_burn, work)
        parallel = time.perf_counter() - start
    return serial / parallel


def throughput(
    path: Path,
    repeats: int,
    jobs: int,
    baseline: Path | None = None,
    lint: bool = False,
    mix: str = "default",
    peers: bool = True,
) -> None:
    with path.open("rb") as f:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
    py = sys.executable
    approaches: dict[str, tuple[list[str], int, str]] = {
        "orjson.loads per line (floor)": (
            [py, str(HERE / "peers.py"), "floor", str(path)],
            lines,
            "nothing",
        ),
        "evalspec validate --jobs 1": (
            [py, "-m", "evalspec", "validate", "--jobs", "1", str(path)],
            lines,
            "all errors, line + rule + field",
        ),
        f"evalspec validate --jobs {jobs}": (
            [py, "-m", "evalspec", "validate", "--jobs", str(jobs), str(path)],
            lines,
            "same output as --jobs 1",
        ),
    }
    if baseline is not None:
        approaches["baseline: evalspec validate --jobs 1"] = (
            [py, "-m", "evalspec", "validate", "--jobs", "1", str(path)],
            lines,
            "the --baseline source tree",
        )
        if jobs > 1:
            approaches[f"baseline: evalspec validate --jobs {jobs}"] = (
                [py, "-m", "evalspec", "validate", "--jobs", str(jobs), str(path)],
                lines,
                "the --baseline source tree",
            )
    for name, (module, reports) in PEERS.items() if peers else ():
        if importlib.util.find_spec(module) is None:
            print(f"skipping {name}: not installed (pip install '.[bench]')", file=sys.stderr)
            continue
        limit = min(lines, SLOW.get(name, lines))
        label = name if limit == lines else f"{name} (first {limit} lines)"
        cmd = [py, str(HERE / "peers.py"), name, str(path), str(limit)]
        approaches[label] = (cmd, limit, reports)
    tmp = tempfile.mkdtemp(prefix="evalspec-bench-")
    if lint:
        layout = _lint_layout(path, Path(tmp), mix)
        approaches["evalspec lint (the file as a layout's dataset)"] = (
            [py, "-m", "evalspec", "lint", "--no-git", str(layout)],
            lines,
            "validation + data card, labels, semantic checks",
        )
        if baseline is not None:
            approaches["baseline: evalspec lint"] = (
                [py, "-m", "evalspec", "lint", "--no-git", str(layout)],
                lines,
                "the --baseline source tree",
            )
    times: dict[str, list[float]] = {k: [] for k in approaches}
    rss: dict[str, list[int]] = {k: [] for k in approaches}
    # What the machine gave a trivial pool in each round, measured right after the
    # round's --jobs runs: the shared machine's spare cores change from minute to
    # minute, so a --jobs speed-up means something only beside its own round's.
    calibration: list[float] = []
    outputs: dict[str, str] = {}
    lint_outputs: dict[str, str] = {}
    try:
        for r in range(repeats):
            for name, (cmd, _, _) in approaches.items():
                out = os.devnull
                # outputs compared: must be identical (validate's, and lint's)
                kept = lint_outputs if "evalspec lint" in name else outputs
                if "evalspec" in name and r == 0:
                    out = kept[name] = os.path.join(tmp, f"{len(outputs) + len(lint_outputs)}.txt")
                ok = (0, 1) if "evalspec" in name else (0,)
                env = _baseline_env(baseline) if name.startswith("baseline") else ENV
                seconds, peak = run(cmd, out, ok, env)
                times[name].append(seconds)
                rss[name].append(peak)
                print(f"round {r + 1}: {name}: {seconds:.2f} s", file=sys.stderr)
                if name == f"evalspec validate --jobs {jobs}":
                    calibration.append(machine_parallelism(jobs))
                    print(f"round {r + 1}: calibration: {calibration[-1]:.2f}x", file=sys.stderr)
        same = len({Path(p).read_bytes() for p in outputs.values()}) == 1
        same_lint = len({Path(p).read_bytes() for p in lint_outputs.values()}) <= 1
    finally:
        shutil.rmtree(tmp)
    floor_name = next(iter(approaches))
    floor = [t / lines for t in times[floor_name]]
    single = times["evalspec validate --jobs 1"]
    print(
        f"\nfile: {path} ({lines} lines, {path.stat().st_size / 2**20:.0f} MiB), {repeats} rounds"
    )
    print(f"output identical ({', '.join(outputs)}): {same}")
    if len(lint_outputs) > 1:
        print(f"output identical ({', '.join(lint_outputs)}): {same_lint}")
    parallel = times[f"evalspec validate --jobs {jobs}"]
    speedup = statistics.median(a / b for a, b in zip(single, parallel, strict=True))
    print(f"--jobs {jobs} speed-up over --jobs 1 (paired, median): {speedup:.2f}x")
    if "baseline: evalspec validate --jobs 1" in times:
        base = times["baseline: evalspec validate --jobs 1"]
        ratio = statistics.median(a / b for a, b in zip(single, base, strict=True))
        print(f"validate --jobs 1 / baseline validate --jobs 1 (paired, median): {ratio:.2f}x")
    if f"baseline: evalspec validate --jobs {jobs}" in times:
        base_parallel = times[f"baseline: evalspec validate --jobs {jobs}"]
        ratio = statistics.median(a / b for a, b in zip(parallel, base_parallel, strict=True))
        print(f"validate --jobs {jobs} / baseline's (paired, median): {ratio:.2f}x")
        base_speedup = statistics.median(
            a / b
            for a, b in zip(
                times["baseline: evalspec validate --jobs 1"], base_parallel, strict=True
            )
        )
        print(
            f"baseline's --jobs {jobs} speed-up over its --jobs 1 (paired, median): "
            f"{base_speedup:.2f}x"
        )
    for other in ("evalspec lint (the file as a layout's dataset)", "baseline: evalspec lint"):
        if other in times:
            ratio = statistics.median(a / b for a, b in zip(times[other], single, strict=True))
            print(f"{other} / validate --jobs 1 (paired, median): {ratio:.2f}x")
    if calibration:
        share = statistics.median(
            a / b / c for a, b, c in zip(single, parallel, calibration, strict=True)
        )
        print(
            f"(calibration: a trivial CPU-bound pool of {jobs} ran "
            f"{statistics.median(calibration):.2f}x faster than one process, median of the "
            f"rounds ({min(calibration):.2f}-{max(calibration):.2f}x); --jobs {jobs}'s "
            f"speed-up / its round's calibration, paired median: {share:.2f})\n"
        )
    print(
        "| approach | records/s (median) | x floor per record: min / median / max "
        "| peak RSS | reports |"
    )
    print("|---|---:|---|---:|---|")
    for name, (_, n, reports) in approaches.items():
        per = [t / n for t in times[name]]
        ratios = [p / f for p, f in zip(per, floor, strict=True)]
        rate = n / statistics.median(times[name])
        print(
            f"| {name} | {rate:,.0f} | {min(ratios):.2f} / {statistics.median(ratios):.2f} / "
            f"{max(ratios):.2f} | {max(rss[name]) / 1024:.0f} MiB | {reports} |"
        )


def _fake_site(root: Path, n: int) -> None:
    """``n`` installed distributions, each with entry points in some other group."""
    for i in range(n):
        info = root / f"fakedist{i}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakedist{i}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[console_scripts]\nfake{i} = fake{i}:main\n")


def _wall_ms(cmd: Sequence[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, env=env, cwd=cwd, check=False)
    return (time.perf_counter() - start) * 1000


def _project(root: Path) -> Path:
    """A project whose ``[tool.evalspec]`` table names a lock (this repository's)."""
    project = root / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "bench-project"\n\n[tool.evalspec]\nlock = "evalspec.lock"\n'
    )
    shutil.copy(ROOT / "evalspec" / "versions" / "evalspec.lock", project / "evalspec.lock")
    return project


def startup(repeats: int, baseline: Path | None = None) -> None:
    """Wall time of short commands, interleaved: every round runs each row once, so
    each ratio to ``python -c pass`` is paired with a run moments apart.

    Every command runs in a directory nothing writes to while it runs (and with
    ENV's ``PYTHONSAFEPATH``, so that directory is not on ``sys.path``): the
    modification time of each ``sys.path`` directory is part of the snapshot's key,
    and in a checkout ``-m`` would import the checkout's sources instead of the
    installed package.
    """
    py = sys.executable
    fixture = str(ROOT / "fixtures" / "tasks.jsonl")
    validate = [py, "-m", "evalspec", "validate", fixture]
    env = dict(ENV)
    nocache = dict(env, EVALSPEC_NO_PLUGIN_CACHE="1")
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp) / "cwd"
        here.mkdir()
        project = _project(Path(tmp))
        site = Path(tmp) / "site"
        _fake_site(site, 500)
        many = dict(env, PYTHONPATH=str(site))
        where = subprocess.run(
            [py, "-c", "import evalspec; print(evalspec.__file__)"],
            capture_output=True,
            text=True,
            cwd=here,
            env=env,
            check=False,
        ).stdout.strip()
        rows: list[tuple[str, list[str], dict[str, str], Path]] = [
            ("python -c pass", [py, "-c", "pass"], env, here),
            ("python -c 'import evalspec'", [py, "-c", "import evalspec"], env, here),
            ("evalspec validate fixtures/tasks.jsonl", validate, env, here),
        ]
        # The console script the installer wrote. pip's wrapper imports `re` (and so
        # `enum`) and compiles a pattern before evalspec runs, which `python -m` does
        # not; uv's wrapper does not (pypa/pip#13165: the wrapper is the installer's).
        script = Path(py).parent / "evalspec"
        if script.is_file():
            imports_re = b"import re" in script.read_bytes()
            name = "  same, the console script" + (
                " (its wrapper imports re)" if imports_re else ""
            )
            rows.append((name, [str(script), *validate[3:]], env, here))
        rows += [
            ("  same, in a project with [tool.evalspec]", validate, env, project),
            ("  same, plugin cache and snapshot off", validate, nocache, here),
        ]
        if baseline is not None:
            old = _baseline_env(baseline)
            rows += [
                (
                    "  baseline: python -c 'import evalspec'",
                    [py, "-c", "import evalspec"],
                    old,
                    here,
                ),
                ("  baseline: evalspec validate fixtures/tasks.jsonl", validate, old, here),
                ("  baseline: same, in the project", validate, old, project),
            ]
        rows += [
            ("  with 500 more distributions installed", validate, many, here),
            (
                "  same, cache and snapshot off",
                validate,
                dict(many, EVALSPEC_NO_PLUGIN_CACHE="1"),
                here,
            ),
        ]
        for name, cmd, e, cwd in rows:  # byte-code and snapshots written before timing
            done = subprocess.run(cmd, env=e, cwd=cwd, capture_output=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr!r}")
        times: dict[str, list[float]] = {name: [] for name, *_ in rows}
        for _ in range(repeats):
            for name, cmd, e, cwd in rows:
                times[name].append(_wall_ms(cmd, e, cwd))
    floor = times[rows[0][0]]
    print(f"\nstart-up, wall ms over {repeats} interleaved rounds (min / median):")
    print(f"evalspec imported from {where}")
    if where.startswith(str(ROOT)):
        print(
            "(this checkout, an editable install: its finder runs in every interpreter,"
            " `python -c pass` included; measure a regular install for the ratios)"
        )
    print("\n| command | min ms | median ms | x python -c pass (paired median) |")
    print("|---|---:|---:|---:|")
    for name, *_ in rows:
        xs = times[name]
        ratio = statistics.median(x / f for x, f in zip(xs, floor, strict=True))
        print(f"| {name} | {min(xs):.1f} | {statistics.median(xs):.1f} | {ratio:.2f} |")


def _adversarial() -> dict[str, str]:
    mb = 1 << 20
    return {
        "1 MB of spaces": " " * mb,
        "1 MB of newlines": "\n" * mb,
        "1 MB of backticks": "`" * mb,
        "fence then 1 MB unclosed": "```python\n" + "x" * mb,
        "1 MB of '``\\n'": "``\n" * (mb // 3),
        "1 MB of lowercase letters": "f" * mb,
        "1 MB alternating space/letter": " a" * (mb // 2),
        "1 MB of \\r\\n blank lines": " \r\n" * (mb // 3),
        "1 MB of lone surrogates": "\ud800" * mb,
    }


def postprocess(repeats: int) -> None:
    import evalspec

    registry = evalspec.default_registry()
    inputs = _adversarial()
    print("\npost-process rules on 1 MB adversarial inputs (worst case, min of repeats):\n")
    print("| rule | worst input | ms (1 MB) | ms (2 MB) / ms (1 MB) |")
    print("|---|---|---:|---:|")
    for name, rule in registry.post_processors.items():
        worst, worst_ms, growth = "", -1.0, 0.0
        for label, text in inputs.items():
            one = _best(functools.partial(rule, text), repeats)
            if one > worst_ms:
                two = _best(functools.partial(rule, text + text), repeats)
                worst, worst_ms, growth = label, one, two / max(one, 1e-9)
        print(f"| {name} | {worst} | {worst_ms:.2f} | {growth:.1f} |")


def _best(fn: Callable[[], object], repeats: int) -> float:
    xs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - start)
    return min(xs) * 1000


def _score_all(scorer: Callable[..., Any], pairs: list[Any]) -> None:
    for prediction, targets in pairs:
        scorer(prediction, targets)


def _references() -> dict[str, Callable[[str, Sequence[str]], Any]]:
    """Each metric's reference implementation, called the way its authors document."""
    refs: dict[str, Callable[[str, Sequence[str]], Any]] = {
        "exact_match": lambda p, ts: any(p == t for t in ts),
        "accuracy": lambda p, ts: any(p == t for t in ts),
    }
    oracle = ROOT / "tests" / "squad_v11_oracle.py"
    if oracle.exists():  # the official SQuAD v1.1 script's functions, kept in the tests
        spec = importlib.util.spec_from_file_location("squad_v11_oracle", oracle)
        assert spec is not None and spec.loader is not None
        squad = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(squad)
        refs["f1"] = lambda p, ts: squad.metric_max_over_ground_truths(squad.f1_score, p, ts)
    if importlib.util.find_spec("rouge_score") is not None:
        rouge_scorer = importlib.import_module("rouge_score.rouge_scorer")  # untyped

        rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
        refs["rouge_l"] = lambda p, ts: max(rouge.score(t, p)["rougeL"].fmeasure for t in ts)
    if importlib.util.find_spec("sacrebleu") is not None:
        import sacrebleu

        refs["bleu_4"] = lambda p, ts: sacrebleu.sentence_bleu(p, list(ts)).score / 100
    return refs


def scoring(repeats: int, n: int = 100_000) -> None:
    if importlib.util.find_spec("evalspec.scoring.scorer") is None:
        print("\nscoring: evalspec.scoring.scorer does not exist in this checkout; skipped")
        return
    import random

    import evalspec

    registry = evalspec.default_registry()
    rng = random.Random(0)
    words = ("the cat sat on a mat while 42 dogs ran far away from home " * 2).split(" ")[:14]

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))

    pairs = [(sentence(), [sentence() for _ in range(rng.randint(1, 3))]) for _ in range(n)]
    refs = _references()
    print(f"\nscoring {n} predictions per metric, records/s (best of {repeats}):\n")
    print("| metric | evalspec | reference | reference is |")
    print("|---|---:|---:|---|")
    for name, metric in registry.metrics.items():
        if metric.scorer is None or metric.sandboxed:
            print(f"| {name} | runs code in the sandbox: see the sandbox section | | |")
            continue
        ours = _best(functools.partial(_score_all, metric.scorer, pairs), repeats)
        ref = refs.get(name)
        theirs = _best(functools.partial(_score_all, ref, pairs), repeats) if ref else None
        what = {
            "f1": "SQuAD v1.1 script",
            "rouge_l": "rouge-score",
            "bleu_4": "sacrebleu",
        }.get(name, "Python ==")
        theirs_text = f"{n / (theirs / 1000):,.0f}" if theirs else "not installed"
        print(f"| {name} | {n / (ours / 1000):,.0f} | {theirs_text} | {what} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--file", type=Path, help="default: a generated file in the temp dir")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--startup", action="store_true")
    parser.add_argument("--postprocess", action="store_true")
    parser.add_argument("--scoring", action="store_true")
    parser.add_argument(
        "--mix",
        action="append",
        choices=sorted(MIXES),
        help="task mix to generate and measure (repeatable; default: both, or with --file "
        "the default mix: the file's labels for --lint)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a directory holding another evalspec package (say, `git archive REV evalspec "
        "| tar -x -C DIR`): measured beside this one, in the same rounds",
    )
    parser.add_argument("--lint", action="store_true", help="also time evalspec lint")
    parser.add_argument(
        "--no-peers", action="store_true", help="skip the peers (msgspec, pydantic, ...)"
    )
    args = parser.parse_args()
    # One named file is one mix (the default unless --mix says which): without this,
    # the same file was measured twice, once under each mix's name.
    args.mix = args.mix or (["default"] if args.file else sorted(MIXES))
    if not args.no_throughput:
        for mix in args.mix:
            name = f"evalspec-bench-{args.tasks}.jsonl"
            if mix != "default":
                name = f"evalspec-bench-{mix}-{args.tasks}.jsonl"
            path = args.file or Path(tempfile.gettempdir()) / name
            print(f"\n### {mix} mix\n")
            ensure_file(args.tasks, path, mix)
            throughput(
                path, args.repeats, args.jobs, args.baseline, args.lint, mix, not args.no_peers
            )
    if args.startup:
        startup(max(args.repeats, 20), args.baseline)
    if args.postprocess:
        postprocess(max(args.repeats, 5))
    if args.scoring:
        scoring(args.repeats)


if __name__ == "__main__":
    main()
