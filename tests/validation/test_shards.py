"""A dataset in shards (evalspec/validation/shards.py): a quoted glob validated as one dataset,
task ids unique across shards in shard order, the same verdicts as the
concatenated shards, and the same output whatever the number of partitions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.validation.shards import (
    _merge,
    check_shard,
    cross_duplicates,
    expand,
    is_pattern,
    partition_of,
    validate_shards_local,
)


def task(tid: str, **extra: object) -> bytes:
    d: dict[str, object] = {
        "task_id": tid,
        "category": "mcq",
        "prompt": "Q?\nA. x\nB. y",
        "targets": ["A"],
        "metric_name": "exact_match",
        "post_process": "extract_letter",
    }
    d.update(extra)
    return json.dumps(d).encode() + b"\n"


SHARDS = {
    "part-000.jsonl": task("a1") + task("a2") + task("dup") + b"\n" + task("a1"),
    "part-001.jsonl": task("b1") + task("dup") + b"{bad\n" + task("a2"),
    "part-002.jsonl": task("c1") + task("b1", metric_name="nope") + task("b1"),
}


def evalspec(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    for name, data in SHARDS.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "notes.txt").write_text("not a shard")
    return tmp_path


ERROR = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<rule>\S+)")


def test_glob_output_is_the_concatenation_told_shard_by_shard(shards: Path) -> None:
    proc = evalspec("validate", str(shards / "part-*.jsonl"))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    names = sorted(SHARDS)
    # The concatenation's verdicts, mapped back to (shard, line).
    whole = shards / "whole.jsonl"
    whole.write_bytes(b"".join(SHARDS[n] for n in names))
    concat = evalspec("validate", whole)
    starts = []
    at = 0
    for n in names:
        starts.append(at)
        at += SHARDS[n].count(b"\n")
    expected = []
    for line in concat.stdout.splitlines()[:-1]:
        m = ERROR.match(line)
        assert m is not None
        number = int(m["line"])
        index = max(i for i, s in enumerate(starts) if s < number)
        expected.append((names[index], number - starts[index], m["rule"]))
    found = [
        (Path(m["file"]).name, int(m["line"]), m["rule"])
        for m in map(ERROR.match, lines)
        if m is not None and not m["file"].endswith("*.jsonl")
    ]
    assert found == expected
    assert f"already used on line 3 of {shards / 'part-000.jsonl'}" in proc.stdout
    assert f"{shards / 'part-001.jsonl'}: 4 tasks, 1 valid, 3 invalid" in lines
    assert lines[-1] == f"{shards / 'part-*.jsonl'}: 3 shards, 11 tasks, 5 valid, 6 invalid"
    assert concat.stdout.splitlines()[-1].endswith("11 tasks, 5 valid, 6 invalid")


def test_json_and_junit_formats_carry_every_shard(shards: Path) -> None:
    proc = evalspec("validate", str(shards / "part-*.jsonl"), "--format", "json")
    doc = json.loads(proc.stdout)
    assert [Path(f["path"]).name for f in doc["files"]] == sorted(SHARDS)
    assert doc["datasets"] == [
        {
            "pattern": str(shards / "part-*.jsonl"),
            "shards": 3,
            "total": 11,
            "valid": 5,
            "invalid": 6,
        }
    ]
    junit = evalspec("validate", str(shards / "part-*.jsonl"), "--format", "junit")
    assert junit.returncode == 1 and junit.stdout.count("<testcase") == 3


def test_a_pattern_matching_nothing_is_an_io_error(tmp_path: Path) -> None:
    proc = evalspec("validate", str(tmp_path / "none-*.jsonl"))
    assert proc.returncode == 2
    assert "matches no shard" in proc.stderr and "Traceback" not in proc.stderr


# Slow: s3fs and botocore are in the test-full extra, not in the quick suite's.
@pytest.mark.slow
@pytest.mark.parametrize("url", ["s3://evalspec-audit/*.jsonl", "s3://evalspec-audit/a.jsonl"])
def test_a_remote_error_that_is_no_oserror_is_one_line(tmp_path: Path, url: str) -> None:
    # botocore's NoCredentialsError is no OSError: the listing (a glob) and the
    # reading (one URL) both ended in a traceback with exit code 1.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",  # no wait on the instance metadata service
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", url],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    listed = f"cannot list {url}: " if "*" in url else ""  # as for a listing's OSError
    assert proc.stderr == (
        f"evalspec: error: cannot read {url}: {listed}Unable to locate credentials\n"
    )


@pytest.mark.parametrize("command", ["validate", "score"])
def test_ray_without_the_extra_says_how_to_install_it(shards: Path, command: str) -> None:
    # Ray hidden from the interpreter (None in sys.modules makes its import fail).
    code = (
        "import sys; sys.modules['ray'] = None; from evalspec.cli.dispatch import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    files = [shards / "part-000.jsonl"] * (2 if command == "score" else 1)
    proc = subprocess.run(
        [sys.executable, "-c", code, command, *map(str, files), "--executor", "ray"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "pip install 'evalspec-contract[ray]'" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_patterns_and_expansion(shards: Path) -> None:
    assert is_pattern("s3://b/x.jsonl") and is_pattern("a/*.jsonl") and not is_pattern("a.jsonl")
    assert [Path(p).name for p in expand(str(shards / "part-*.jsonl"))] == sorted(SHARDS)
    assert expand(str(shards / "plain.jsonl")) == [str(shards / "plain.jsonl")]


@given(st.lists(st.text(min_size=1), max_size=50), st.integers(1, 16))
def test_partitions_are_in_range(ids: list[str], n: int) -> None:
    assert all(0 <= partition_of(i, n) < n for i in ids)


def test_partitions_are_the_same_in_every_interpreter() -> None:
    # A stable hash, not Python's salted one: another node must agree.
    ids = ["a1", "dup", "é-ü", "x" * 300]
    code = (
        "from evalspec.validation.shards import partition_of; "
        "print([partition_of(i, 7) for i in %r])"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code % ids],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert seen == {f"{[partition_of(i, 7) for i in ids]}\n"}


@pytest.mark.parametrize("partitions", [1, 2, 7])
def test_any_number_of_partitions_gives_the_same_verdicts(shards: Path, partitions: int) -> None:
    paths = expand(str(shards / "part-*.jsonl"))
    results = [check_shard(p, None, partitions) for p in paths]
    duplicates = [
        d for p in range(partitions) for d in cross_duplicates(*(r[1][p] for r in results))
    ]
    merged = _merge([r[0] for r in results], duplicates)
    assert merged == validate_shards_local(paths, None)


def test_a_file_named_like_a_glob_is_that_file(tmp_path: Path) -> None:
    literal = tmp_path / "data[1].jsonl"
    literal.write_bytes(task("x1"))
    (tmp_path / "data1.jsonl").write_bytes(b"{bad\n")
    proc = evalspec("validate", literal)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout == f"{literal}: 1 task, 1 valid, 0 invalid\n"


def test_a_shard_a_symlink_sends_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    # As for a task file named or found in a directory: its lines would be printed
    # back as invalid tasks' text (here /proc/self/environ: the CI job's tokens).
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "data" / "a.jsonl").write_bytes(task("a"))
    (repo / "data" / "b.jsonl").symlink_to("/proc/self/environ")
    proc = subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", "--format", "json", "data/*.jsonl"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "EVALSPEC_AUDIT_SECRET": "hunter2-audit"},
    )
    assert proc.returncode == 2, proc.stderr
    assert "hunter2-audit" not in proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        "evalspec: error: cannot read data/*.jsonl: refusing to read data/b.jsonl: it is a symlink"
    )
