"""``--executor ray`` on a real local Ray cluster: a head and a second node, each started
with ``ray start`` as its own process, inside a network namespace this test
creates (loopback only, so no traffic can leave the machine, and Ray binds
127.0.0.1 there by itself).

The whole body runs in tests/cluster/ray_cluster_driver.py under ``unshare`` with new
network, pid and mount namespaces: when the driver ends, or this test kills
it, the kernel kills every process of the namespace, Ray's included. The
driver also runs ``ray stop --force`` in a ``finally``. Checked: reports
identical to local scoring apart from provenance; sharded validation of an S3
glob (moto's server, in the same namespace) identical to local; a node killed
mid-run changes nothing; retries exhausted give ``sandbox_error``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("ray_cluster_driver.py")

ADD_TESTS = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]
GOOD = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
RAISES = "```python\ndef add(a, b):\n    raise ValueError('no')\n```"


def code_task(task_id: str, tests: list[str], difficulty: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "category": "code_exec",
        "prompt": "Write add(a, b).",
        "targets": tests,
        "metric_name": "code_exec",
        "post_process": "extract_code_block",
        "metadata": {"difficulty": difficulty},
    }


def mcq_line(task_id: str, **extra: Any) -> bytes:
    d = {
        "task_id": task_id,
        "category": "mcq",
        "prompt": "Q?\nA. x\nB. y",
        "targets": ["A"],
        "metric_name": "exact_match",
        "post_process": "extract_letter",
        **extra,
    }
    return json.dumps(d).encode() + b"\n"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def prepare(work: Path) -> None:
    tasks = [code_task(f"add_{i}", ADD_TESTS, "hard" if i % 2 else "easy") for i in range(4)]
    write_jsonl(work / "code.jsonl", tasks)
    samples = [GOOD, WRONG, RAISES, GOOD]
    write_jsonl(
        work / "code_preds.jsonl",
        [
            {"task_id": t["task_id"], "outputs": samples[i:] + samples[:i]}
            for i, t in enumerate(tasks)
        ],
    )
    slow_tests = ["import time\ntime.sleep(1.5)\nassert add(1, 2) == 3"]
    slow = [code_task(f"slow_{i}", slow_tests, "easy") for i in range(8)]
    write_jsonl(work / "slow.jsonl", slow)
    write_jsonl(
        work / "slow_preds.jsonl",
        [{"task_id": t["task_id"], "outputs": [GOOD, WRONG]} for t in slow],
    )
    shards = work / "shards"
    shards.mkdir()
    (shards / "part-000.jsonl").write_bytes(mcq_line("a1") + mcq_line("dup") + mcq_line("a1"))
    (shards / "part-001.jsonl").write_bytes(mcq_line("b1") + b"{bad\n" + mcq_line("dup"))
    (shards / "part-002.jsonl").write_bytes(mcq_line("c1", metric_name="nope") + mcq_line("b1"))


def _can_run() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a network namespace"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs util-linux unshare and iproute2 ip"
    for module in ("ray", "moto", "boto3", "s3fs"):
        if importlib.util.find_spec(module) is None:
            return f"needs {module} (pip install '.[test,ray]')"
    return None


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    why = _can_run()
    if why is not None:
        pytest.skip(why)
    work = tmp_path_factory.mktemp("ray")
    prepare(work)
    # Ray's session directory: short, for its socket paths; removed at the end.
    temp = tempfile.mkdtemp(prefix="evr", dir="/tmp")
    script = f"ip link set lo up && exec {sys.executable} {DRIVER} {work} {temp}"
    proc = subprocess.Popen(
        [
            "unshare",
            "--net",
            "--pid",
            "--mount",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--",
            "bash",
            "-c",
            script,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=540)
    finally:
        # Killing unshare kills its child (--kill-child), pid 1 of the namespace,
        # and with it every process of the namespace: no Ray process survives.
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        shutil.rmtree(temp, ignore_errors=True)
    assert proc.returncode == 0, err[-3000:]
    lines = out.strip().splitlines()
    assert lines, err[-3000:]
    results: dict[str, Any] = json.loads(lines[-1])
    (work / "results.json").write_text(lines[-1])  # for a post-mortem
    assert "error" not in results, (results["error"], err[-3000:])
    yield results


def _without_executor(report: dict[str, Any]) -> dict[str, Any]:
    ce = report["provenance"]["code_exec"]
    for key in ("executor", "nodes", "node_tiers"):
        ce.pop(key, None)
    return report


def test_only_loopback_exists_where_the_cluster_runs(cluster_run: dict[str, Any]) -> None:
    interfaces = cluster_run["interfaces"].splitlines()
    assert interfaces and all(line.split()[1] == "lo" for line in interfaces)


def test_ray_report_is_the_local_report_apart_from_provenance(cluster_run: dict[str, Any]) -> None:
    ray_run, local_run = cluster_run["score_ray"], cluster_run["score_local"]
    assert ray_run["rc"] == 0, ray_run["stderr"]
    assert local_run["rc"] == 0, local_run["stderr"]
    ray_report, local_report = json.loads(ray_run["stdout"]), json.loads(local_run["stdout"])
    ce = ray_report["provenance"]["code_exec"]
    assert ce["executor"] == "ray" and ce["nodes"] == 2 and len(ce["node_tiers"]) == 2
    assert ce["isolation_tier"] == local_report["provenance"]["code_exec"]["isolation_tier"]
    assert "executor" not in local_report["provenance"]["code_exec"]
    assert _without_executor(ray_report) == local_report
    rows = {r["task_id"]: r for r in local_report["rows"]}
    assert [s["score"] for s in rows["add_0"]["samples"]] == [1.0, 0.0, 0.0, 1.0]
    assert rows["add_0"]["samples"][1]["detail"]["statuses"] == ["fail"]
    assert local_report["pass_at_k"]["pass@1"]["all"]["mean"] == 0.5


def test_sharded_s3_validation_on_the_cluster_is_the_local_one(
    cluster_run: dict[str, Any],
) -> None:
    ray_run, local_run = cluster_run["validate_ray"], cluster_run["validate_local"]
    assert ray_run["rc"] == 1, ray_run["stderr"]
    assert (ray_run["stdout"], ray_run["rc"]) == (local_run["stdout"], local_run["rc"])
    lines = ray_run["stdout"].splitlines()
    base = "s3://evalspec-shards/evals"
    assert lines == [
        f"{base}/part-000.jsonl:3: duplicate_task_id task_id — task_id 'a1' is already used "
        "on line 1",
        f"{base}/part-000.jsonl: 3 tasks, 2 valid, 1 invalid",
        f"{base}/part-001.jsonl:2: invalid_json — not valid JSON: Expecting property name "
        "enclosed in double quotes at column 2",
        f"{base}/part-001.jsonl:3: duplicate_task_id task_id — task_id 'dup' is already used "
        f"on line 2 of {base}/part-000.jsonl",
        f"{base}/part-001.jsonl: 3 tasks, 1 valid, 2 invalid",
        lines[5],  # the unknown metric, with the known names
        f"{base}/part-002.jsonl:2: duplicate_task_id task_id — task_id 'b1' is already used "
        f"on line 1 of {base}/part-001.jsonl",
        f"{base}/part-002.jsonl: 2 tasks, 0 valid, 2 invalid",
        f"{base}/*.jsonl: 3 shards, 8 tasks, 3 valid, 5 invalid",
    ]
    assert lines[5].startswith(f"{base}/part-002.jsonl:1: unknown_metric")


def test_a_node_killed_mid_run_is_retried_and_changes_nothing(
    cluster_run: dict[str, Any],
) -> None:
    ray_run, local_run = cluster_run["kill_ray"], cluster_run["kill_local"]
    assert ray_run["rc"] == 0, ray_run["stderr"]
    assert local_run["rc"] == 0, local_run["stderr"]
    assert cluster_run["nodes_after_kill"] == 1  # the node really died
    assert cluster_run["kill_seconds"] > 5.0  # the run outlived the kill
    ray_report, local_report = json.loads(ray_run["stdout"]), json.loads(local_run["stdout"])
    assert ray_report["provenance"]["code_exec"]["nodes"] == 2  # both were there at start
    assert _without_executor(ray_report) == local_report
    assert [r["score"] for r in local_report["rows"]] == [0.5] * 8


def test_retries_exhausted_is_a_sandbox_error_never_a_fail(cluster_run: dict[str, Any]) -> None:
    exhaust = cluster_run["exhaust"]
    assert exhaust["statuses"] == ["pass", "sandbox_error"], exhaust
    assert any("not run after 0 retries" in d for d in exhaust["details"])


def test_an_unreachable_cluster_is_a_usage_error_not_a_hang(tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("needs ray (pip install '.[test,ray]')")
    prepare(tmp_path)
    cmd = [sys.executable, "-m", "evalspec"]
    nowhere = ["--executor", "ray", "--ray-address", "127.0.0.1:1"]
    files = [tmp_path / "code.jsonl", tmp_path / "code_preds.jsonl"]
    score = subprocess.run(
        [*cmd, "score", *files, "--allow-code-exec", *nowhere],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert score.returncode == 2 and score.stdout == ""
    assert "cannot connect to the Ray cluster at 127.0.0.1:1" in score.stderr
    assert "Traceback" not in score.stderr
    validate = subprocess.run(
        [*cmd, "validate", str(tmp_path / "shards" / "*.jsonl"), *nowhere],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert validate.returncode == 2
    assert "cannot connect to the Ray cluster" in validate.stderr
