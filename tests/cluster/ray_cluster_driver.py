"""Driver of the real-cluster tests (tests/cluster/test_ray_cluster.py); runs INSIDE the network
namespace the test creates, where loopback is the only interface.

It starts a Ray head and a second node (each its own ``ray start`` process),
a moto S3 server on 127.0.0.1, runs evalspec against them, prints one JSON
object with what it saw on its last stdout line, and stops every Ray process
(``ray stop --force``) whatever happened. Usage:
``python ray_cluster_driver.py WORKDIR RAY_TEMP_DIR``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

RAY = str(Path(sys.executable).with_name("ray"))
PORT = 6379
ADDRESS = f"127.0.0.1:{PORT}"


def log(msg: str) -> None:
    print(f"[driver {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def evalspec(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def alive_nodes() -> int:
    code = (
        f"import ray; ray.init(address={ADDRESS!r}, logging_level='ERROR'); "
        "print(sum(1 for n in ray.nodes() if n['Alive']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else -1


def wait_for_nodes(n: int, node: subprocess.Popen[bytes] | None = None) -> None:
    for _ in range(40):
        if node is not None and node.poll() is not None:
            raise RuntimeError(f"the node's `ray start` exited with {node.returncode}")
        if alive_nodes() == n:
            return
        time.sleep(1)
    raise RuntimeError(f"the cluster never had {n} alive nodes")


def start_worker_node(work: Path) -> subprocess.Popen[bytes]:
    """A second node, waited for until the cluster has two alive nodes.

    On a loaded machine `ray start` can give up connecting to the head; it is
    tried three times, its output kept in WORKDIR/node-N.log.
    """
    for attempt in range(3):
        log_file = (work / f"node-{attempt}.log").open("wb")
        # Its own session: every process of the node can be found and killed.
        node = subprocess.Popen(
            [
                RAY,
                "start",
                f"--address={ADDRESS}",
                "--num-cpus=1",
                "--disable-usage-stats",
                "--block",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log_file.close()
        try:
            wait_for_nodes(2, node)
            return node
        except RuntimeError as exc:
            log(f"second node, attempt {attempt + 1}: {exc}")
            if node.poll() is None:
                kill_node(node)
    tail = (work / "node-2.log").read_text(errors="replace")[-1500:]
    raise RuntimeError(f"the second node never joined; its last log ends:\n{tail}")


def _session_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[3])  # field 6: the session id


def kill_node(node: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process of the node: its session (Ray puts each worker process in
    its own process group, but they stay in the session ``ray start`` opened)."""
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    for pid in pids:
        if _session_of(pid) == node.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    node.wait()


def start_s3(work: Path) -> tuple[Any, str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def upload_shards(endpoint: str, work: Path) -> None:
    import boto3

    s3 = boto3.resource("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = s3.Bucket("evalspec-shards")
    bucket.create()
    for shard in sorted((work / "shards").iterdir()):
        bucket.put_object(Key=f"evals/{shard.name}", Body=shard.read_bytes())
    bucket.put_object(Key="other/skip.jsonl", Body=b"{}\n")


def score(work: Path, name: str, preds: str, executor: str) -> dict[str, Any]:
    where = ["--executor", "ray", "--ray-address", ADDRESS] if executor == "ray" else []
    proc = evalspec(
        "score",
        str(work / f"{name}.jsonl"),
        str(work / preds),
        "--allow-code-exec",
        *(where or ["--jobs", "2"]),
        "--format",
        "json",
        "--bootstrap",
        "200",
    )
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr[-4000:]}


def exhaust_retries(work: Path, results: dict[str, Any]) -> None:
    """max_retries=0 and the node holding a program killed: sandbox_error, not fail."""
    import ray

    from evalspec.cluster.ray import RaySandbox
    from evalspec.sandbox import Limits

    node = start_worker_node(work)
    ray.init(address=ADDRESS, logging_level="ERROR", log_to_driver=False)
    try:
        box = RaySandbox(Limits(wall_seconds=30.0, cpu_seconds=5), max_retries=0)
        code = "import time\ntime.sleep(6)\nslept = True\n"
        out: list[Any] = []
        threads = [
            threading.Thread(target=lambda: out.append(box.run(code, "assert slept")))
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        time.sleep(2.5)
        kill_node(node)
        for t in threads:
            t.join(timeout=120)
        results["exhaust"] = {
            "statuses": sorted(r.status for r in out),
            "details": [r.detail for r in out],
        }
    finally:
        ray.shutdown()


def main() -> int:
    work = Path(sys.argv[1])
    temp = sys.argv[2]  # short (Ray's socket paths have a limit); the test removes it
    results: dict[str, Any] = {}
    env_before = dict(os.environ)
    server = None
    try:
        server, endpoint = start_s3(work)
        # The nodes inherit these: they read the shards themselves.
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": endpoint,
                "RAY_USAGE_STATS_ENABLED": "0",
                # Nothing of ~/.ray: a token left there by another cluster would
                # switch the head to token auth. No token is needed in a namespace
                # only loopback exists in.
                "HOME": str(work / "home"),
                "RAY_AUTH_MODE": "disabled",
            }
        )
        (work / "home").mkdir(exist_ok=True)
        upload_shards(endpoint, work)
        log("starting the head")
        subprocess.run(
            [
                RAY,
                "start",
                "--head",
                f"--port={PORT}",
                "--num-cpus=1",
                "--disable-usage-stats",
                "--include-dashboard=false",
                f"--temp-dir={temp}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            timeout=180,
        )
        node = start_worker_node(work)
        results["nodes_at_start"] = 2
        results["interfaces"] = subprocess.run(
            ["ip", "-o", "addr"], capture_output=True, text=True, check=False
        ).stdout
        log("scoring on the cluster")
        results["score_ray"] = score(work, "code", "code_preds.jsonl", "ray")
        results["score_local"] = score(work, "code", "code_preds.jsonl", "local")

        log("sharded validation")
        pattern = "s3://evalspec-shards/evals/*.jsonl"
        for executor in ("ray", "local"):
            extra = ["--ray-address", ADDRESS] if executor == "ray" else []
            proc = evalspec("validate", pattern, "--executor", executor, *extra)
            results[f"validate_{executor}"] = {
                "rc": proc.returncode,
                "stdout": proc.stdout,
                "stderr": proc.stderr[-4000:],
            }

        log("a node killed mid-run")
        started = time.monotonic()
        killer = threading.Timer(5.0, kill_node, args=(node,))
        killer.start()
        results["kill_ray"] = score(work, "slow", "slow_preds.jsonl", "ray")
        killer.join()
        results["kill_seconds"] = time.monotonic() - started
        results["nodes_after_kill"] = alive_nodes()
        results["kill_local"] = score(work, "slow", "slow_preds.jsonl", "local")

        log("retries exhausted")
        exhaust_retries(work, results)
    except Exception as exc:  # reported to the test, which fails on it
        results["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        subprocess.run(
            [RAY, "stop", "--force"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        if server is not None:
            server.stop()
        os.environ.clear()
        os.environ.update(env_before)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
