"""n samples per task: "outputs" in predictions, per-sample scoring, pass@k in the
report (schema 2), the CLI's --pass-at and the gate on pass@K."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from report_schema import ROW, check_report

from evalspec import ScoringError, TaskSpec, build_report, read_predictions, score_tasks
from evalspec.model import Metric
from evalspec.registry.build import default_registry
from evalspec.scoring.passatk import PassAtKError, pass_at_k
from evalspec.scoring.scorer import score_task


def mcq(task_id: str, target: str = "B", difficulty: str = "easy") -> TaskSpec:
    return TaskSpec(
        task_id,
        "mcq",
        "Which?\nA. a\nB. b\nC. c",
        [target],
        "exact_match",
        "extract_letter",
        metadata={"difficulty": difficulty},
    )


def summary(task_id: str) -> TaskSpec:
    return TaskSpec(task_id, "summary", "Sum up.", ["the cat sat"], "rouge_l", "extract_first_line")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def evalspec(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )


# -- predictions ---------------------------------------------------------------


def test_outputs_lines_give_samples_and_output_lines_one() -> None:
    data = (
        b'{"task_id": "t1", "outputs": ["B", "A", "The answer is B"]}\n'
        b'{"task_id": "t2", "output": "C"}\n'
    )
    p = read_predictions(io.BytesIO(data), ["t1", "t2"])
    assert p.problems == ()
    assert dict(p.samples) == {"t1": ("B", "A", "The answer is B"), "t2": ("C",)}
    assert dict(p.outputs) == {"t1": "B", "t2": "C"}  # the first sample of each
    assert p.sampled and p.sampled_ids == {"t1"}
    assert p.for_scoring() == {"t1": ("B", "A", "The answer is B"), "t2": "C"}


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (b'{"task_id": "t1", "outputs": "B"}', "wrong_type"),
        (b'{"task_id": "t1", "outputs": ["B", null]}', "wrong_type"),
        (b'{"task_id": "t1", "outputs": [1]}', "wrong_type"),
        (b'{"task_id": "t1", "outputs": []}', "no_samples"),
        (b'{"task_id": "t1", "output": "B", "outputs": ["B"]}', "conflicting_fields"),
        (b'{"task_id": "t1"}', "missing_field"),
    ],
)
def test_bad_samples_are_line_problems(line: bytes, rule: str) -> None:
    p = read_predictions(io.BytesIO(line + b"\n"), ["t1"])
    assert [(x.line, x.rule, x.task_id) for x in p.problems] == [(1, rule, "t1")]
    assert not p.samples


def test_a_repeated_task_keeps_its_first_line_whatever_its_form() -> None:
    data = b'{"task_id": "t1", "output": "B"}\n{"task_id": "t1", "outputs": ["A", "A"]}\n'
    p = read_predictions(io.BytesIO(data), ["t1"])
    assert [x.rule for x in p.problems] == ["duplicate_task_id"]
    assert p.for_scoring() == {"t1": "B"} and not p.sampled


# -- scoring and the report ------------------------------------------------------


def test_each_sample_is_post_processed_and_scored() -> None:
    row = score_task(mcq("t1"), ["B", "Answer: A", "the answer is (B)", "nothing"])
    assert [s.prediction for s in row.samples or ()] == ["B", "A", "B", ""]
    assert [s.score for s in row.samples or ()] == [1.0, 0.0, 1.0, 0.0]
    assert [s.unparsed for s in row.samples or ()] == [False, False, False, True]
    assert (row.n, row.correct, row.score, row.unparsed) == (4, 2, 0.5, True)


def test_the_report_gives_pass_at_k_per_task_and_group() -> None:
    tasks = [mcq("t1"), mcq("t2", difficulty="hard"), mcq("t3", difficulty="hard"), mcq("t4")]
    outputs = {
        "t1": ["B", "A", "B", "C", "A"],  # n=5, c=2
        "t2": ["A", "A", "A", "A", "A"],  # c=0
        "t3": ["B"] * 5,  # c=5
        # t4 missing: pass@k 0, like every other missing score
    }
    scores = score_tasks(tasks, outputs)
    report = build_report(tasks, scores, pass_at=[1, 3], bootstrap=50)
    check_report(report)
    assert report["schema_version"] == 3
    rows = {r["task_id"]: r for r in report["rows"]}
    assert (rows["t1"]["n"], rows["t1"]["correct"]) == (5, 2)
    assert rows["t1"]["pass_at"] == {"pass@1": pass_at_k(5, 2, 1), "pass@3": pass_at_k(5, 2, 3)}
    assert rows["t4"]["missing"] and "samples" not in rows["t4"]
    assert rows["t4"]["pass_at"] == {"pass@1": 0.0, "pass@3": 0.0}
    section = report["pass_at_k"]
    assert section["k"] == [1, 3]
    expect3 = (pass_at_k(5, 2, 3) + 0.0 + 1.0 + 0.0) / 4
    assert section["pass@3"]["all"]["mean"] == pytest.approx(expect3)
    assert section["pass@3"]["all"]["count"] == 4
    assert section["pass@1"]["all"]["mean"] == pytest.approx((0.4 + 0 + 1 + 0) / 4)
    # pass@1 is the mean score over samples, as the ordinary aggregate has it.
    mean = report["aggregates"]["by_metric"]["exact_match"]["mean"]
    assert section["pass@1"]["by_metric"]["exact_match"]["mean"] == pytest.approx(mean)
    hard = section["pass@3"]["by_label"]["difficulty"]["hard"]
    assert (hard["count"], hard["mean"]) == (2, pytest.approx(0.5))
    assert section["pass@3"]["by_category"]["mcq"]["ci95"] is not None
    assert report["counts"]["samples"] == 15
    assert report["unparsed"] == {"mcq": {"extract_letter": 0}}


def test_k_above_a_tasks_samples_is_refused() -> None:
    tasks = [mcq("t1"), mcq("t2")]
    scores = score_tasks(tasks, {"t1": ["B"] * 5, "t2": ["B", "A"]})
    with pytest.raises(PassAtKError, match=r"pass@3 needs at least 3 samples.*'t2' has 2"):
        build_report(tasks, scores, pass_at=[3])


def test_non_binary_metrics_report_the_mean_over_samples_and_no_pass_at_k() -> None:
    tasks = [summary("s1"), mcq("t1")]
    scores = score_tasks(tasks, {"s1": ["the cat sat", "a dog"], "t1": ["B", "A"]})
    report = build_report(tasks, scores, bootstrap=0)
    check_report(report)
    rows = {r["task_id"]: r for r in report["rows"]}
    one = scores[0].samples[0].score if scores[0].samples else -1.0
    assert one == 1.0
    assert rows["s1"]["score"] == pytest.approx((1.0 + scores[0].samples[1].score) / 2)  # type: ignore[index]
    assert "pass_at" not in rows["s1"] and "correct" not in rows["s1"]
    assert report["pass_at_k"]["k"] == [1]  # the default when samples are there
    assert set(report["pass_at_k"]["pass@1"]["by_metric"]) == {"exact_match"}


def test_single_output_reports_keep_their_shape() -> None:
    tasks = [mcq("t1"), mcq("t2")]
    scores = score_tasks(tasks, {"t1": "B"})
    report = build_report(tasks, scores, bootstrap=10)
    check_report(report)
    assert "pass_at_k" not in report and "samples" not in report["counts"]
    assert all(set(r) == ROW for r in report["rows"])
    # Asked for explicitly, pass@1 of single outputs is the accuracy.
    asked = build_report(tasks, scores, bootstrap=10, pass_at=[1])
    assert asked["pass_at_k"]["pass@1"]["all"]["mean"] == 0.5


def test_a_binary_metric_that_returns_a_partial_score_is_an_error() -> None:
    from evalspec.scoring.scorer import _apply

    half = Metric("half", "always 0.5", lambda p, t: 0.5, binary=True)
    with pytest.raises(ScoringError, match=r"declared binary but returned 0\.5"):
        _apply(half, "anything", ("t",), None)
    assert _apply(attrs.evolve(half, binary=False), "anything", ("t",), None) == 0.5


def test_builtin_binary_flags() -> None:
    reg = default_registry()
    assert {name for name, m in reg.metrics.items() if m.binary} == {
        "exact_match",
        "accuracy",
        "code_exec",
        "numeric_match",
    }


# -- the CLI ---------------------------------------------------------------------------


@pytest.fixture
def sampled_files(tmp_path: Path) -> tuple[Path, Path]:
    tasks = write_jsonl(tmp_path / "main.jsonl", [mcq(f"t{i}").to_dict() for i in range(1, 5)])
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {"task_id": "t1", "outputs": ["B", "A", "B"]},
            {"task_id": "t2", "outputs": ["A", "A", "C"]},
            {"task_id": "t3", "outputs": ["B", "B", "B"]},
            {"task_id": "t4", "outputs": ["C", "B", "C"]},
        ],
    )
    return tasks, preds


def test_cli_pass_at_is_deterministic_and_refuses_k_above_n(
    sampled_files: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks, preds = sampled_files
    first = evalspec("score", tasks, preds, "--pass-at", "1", "--pass-at", "3", "--format", "json")
    again = evalspec("score", tasks, preds, "--pass-at", "3", "--pass-at", "1", "--format", "json")
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout  # byte-identical, whatever the order asked
    report = json.loads(first.stdout)
    check_report(report)
    figure = report["pass_at_k"]["pass@3"]["all"]["mean"]
    assert figure == pytest.approx(3 / 4)  # t2 never right; the others right at least once
    text = evalspec("score", tasks, preds, "--pass-at", "3")
    assert "pass@3 all" in text.stdout and "12 samples scored" in text.stdout
    refused = evalspec("score", tasks, preds, "--pass-at", "4")
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert "pass@4 needs at least 4 samples per task, but task 't1' has 3" in refused.stderr
    assert "Traceback" not in refused.stderr
    zero = evalspec("score", tasks, preds, "--pass-at", "0")
    assert zero.returncode == 2 and "must be at least 1" in zero.stderr


def test_gate_on_pass_at_k(sampled_files: tuple[Path, Path], tmp_path: Path) -> None:
    tasks, preds = sampled_files
    out = tmp_path / "report.json"
    proc = evalspec("score", tasks, preds, "--pass-at", "3", "--format", "json", "--output", out)
    assert proc.returncode == 0, proc.stderr
    config = tmp_path / "gates.yaml"
    config.write_text(
        "gates:\n  main:\n    pass@3: {min: 0.7}\n  main[category=mcq]:\n    pass@3: 0.8\n"
    )
    gate = evalspec("gate", out, "--config", config)
    assert gate.returncode == 1, gate.stderr
    assert "pass  main pass@3: min: mean 0.7500 >= min 0.7000 (n=4" in gate.stdout
    assert "FAIL  main[category=mcq] pass@3: min: mean 0.7500 < min 0.8000" in gate.stdout
    config.write_text("gates:\n  main:\n    pass@10: {min: 0.1}\n")
    missing = evalspec("gate", out, "--config", config)
    assert missing.returncode == 1 and "has no main pass@10 score" in missing.stdout
    config.write_text("gates:\n  main:\n    pass@0: {min: 0.1}\n")
    bad = evalspec("gate", out, "--config", config)
    assert bad.returncode == 2 and "unknown metric 'pass@0'" in bad.stderr


def test_code_exec_samples_each_run_in_the_sandbox() -> None:
    from evalspec.sandbox import Limits, Sandbox

    box = Sandbox(Limits(cpu_seconds=2, wall_seconds=5.0))
    good = "```python\ndef add(a, b):\n    return a + b\n```"
    wrong = "```python\ndef add(a, b):\n    return a - b\n```"
    task = TaskSpec(
        "c1",
        "code_exec",
        "Write add.",
        ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"],
        "code_exec",
        "extract_code_block",
    )
    seen: list[tuple[int, int]] = []
    scores = score_tasks(
        [task],
        {"c1": [good, wrong, good]},
        allow_code_exec=True,
        sandbox=box,
        jobs=2,
        progress=lambda d, n: seen.append((d, n)),
    )
    row = scores[0]
    assert (row.n, row.correct) == (3, 2)
    assert [s.detail["statuses"] for s in row.samples or () if s.detail] == [
        ["pass", "pass"],
        ["fail"],
        ["pass", "pass"],
    ]
    assert row.detail is not None
    assert row.detail["isolation_tier"] == box.tier and row.detail["sandbox_errors"] == 0
    assert row.detail["failure"].startswith("1 of 3 samples did not pass; first, sample 2: fail: ")
    assert seen[-1] == (3, 3)
    report = build_report([task], scores, pass_at=[2], bootstrap=0)
    check_report(report)
    assert report["pass_at_k"]["pass@2"]["all"]["mean"] == 1.0


@pytest.mark.parametrize("command", ["score", "validate"])
def test_ray_address_needs_the_ray_executor(sampled_files: tuple[Path, Path], command: str) -> None:
    files = sampled_files if command == "score" else sampled_files[:1]
    proc = evalspec(command, *files, "--ray-address", "127.0.0.1:6379")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--ray-address needs --executor ray" in proc.stderr
