"""What the harness adapters' tests share: the fixture's tasks, a full set of model
outputs for them, and the report ``evalspec score`` gives those outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "fixtures" / "tasks.jsonl"
COMMAND = [sys.executable, "-m", "evalspec"]


def fixture_tasks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS.read_text().splitlines() if line.strip()]


def fixture_outputs() -> dict[str, str]:
    """Every task answered (the fixture's predictions leave one out): some wrong,
    one unparsed, the code tasks a passing and a failing program."""
    rows = [
        json.loads(line)
        for line in (ROOT / "fixtures" / "predictions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    outputs = {r["task_id"]: r["output"] for r in rows}
    for task in fixture_tasks():
        outputs.setdefault(task["task_id"], "I am not sure.")
    return outputs


SLICES = {
    "gsm8k": "test.jsonl",
    "mmlu": "high_school_computer_science_test.csv",
    "humaneval": "HumanEval.jsonl",
}
"""The public benchmark slices of fixtures/benchmarks, by the file their rows are in."""


SLICE_VERSIONS = [(name, version) for name in sorted(SLICES) for version in (1, 2)]
"""Each slice with each of its shipped mappings (``mapping.yaml`` at v1, ``mapping_v2.yaml``)."""


def imported_slice(name: str, tmp_path: Path, version: int = 1) -> tuple[Path, dict[str, str]]:
    """The slice imported by ``evalspec import`` with its shipped mapping at spec
    ``version``, and its outputs (HumanEval at v2: completions only)."""
    folder = ROOT / "fixtures" / "benchmarks" / name
    tasks = tmp_path / f"{name}.jsonl"
    mapping = folder / ("mapping.yaml" if version == 1 else f"mapping_v{version}.yaml")
    run = subprocess.run(
        [*COMMAND, "import", str(folder / SLICES[name]), "-m", str(mapping), "-o", str(tasks)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    predictions = folder / f"predictions_v{version}.jsonl"
    if not predictions.exists():
        predictions = folder / "predictions.jsonl"
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    return tasks, {r["task_id"]: r["output"] for r in rows}


def evalspec_report(tmp_path: Path, outputs: dict[str, str], tasks: Path = TASKS) -> dict[str, Any]:
    """``evalspec score --format json`` of ``outputs`` on ``tasks`` (default: the fixture's)."""
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        "".join(json.dumps({"task_id": k, "output": v}) + "\n" for k, v in outputs.items())
    )
    run = subprocess.run(
        [*COMMAND, "score", str(tasks), str(predictions), "--allow-code-exec", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report
