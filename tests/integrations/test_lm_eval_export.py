"""``evalspec export lm-eval``: the task directory, and lm-eval's own loader and evaluator on it.

The tests that import lm_eval are slow and ``harness``: lm-eval is installed in
.ci/run's harness environment (.ci/harness-requirements.txt), run with ``-m harness``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness_runs import (
    COMMAND,
    ROOT,
    SLICE_VERSIONS,
    TASKS,
    evalspec_report,
    fixture_outputs,
    imported_slice,
)

LM_EVAL_JSON = ("--predictions-format", "lm-eval", "--allow-code-exec", "--format", "json")


def _export(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "export", "lm-eval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_export_is_the_task_file_a_config_and_a_module(tmp_path: Path) -> None:
    out = tmp_path / "lm"
    run = _export(TASKS, "--output", out, "--allow-code-exec", "--name", "fixture")
    assert run.returncode == 0, run.stderr
    assert f"--include_path {out} --tasks fixture" in run.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "evalspec_fixture.py",
        "fixture.jsonl",
        "fixture.yaml",
    ]
    assert (out / "fixture.jsonl").read_bytes() == TASKS.read_bytes()
    config = (out / "fixture.yaml").read_text()
    digest = hashlib.sha256(TASKS.read_bytes()).hexdigest()
    for line in (
        'task: "fixture"',
        "custom_dataset: !function evalspec_fixture.load",
        "output_type: generate_until",
        "num_fewshot: 0",
        "doc_to_text: !function evalspec_fixture.doc_to_text",
        "process_results: !function evalspec_fixture.process_results",
        "  until: []",
        f'  tasks_sha256: "{digest}"',
    ):
        assert line in config.splitlines(), line
    metrics = sorted({json.loads(t)["metric_name"] for t in TASKS.read_text().splitlines()})
    assert [
        json.loads(line.split(": ", 1)[1]) for line in config.splitlines() if "- metric:" in line
    ] == metrics
    module = (out / "evalspec_fixture.py").read_text()
    assert f'TASKS_SHA256 = "{digest}"' in module and "ALLOW_CODE_EXEC = True" in module
    compile(module, "evalspec_fixture.py", "exec")


def test_the_export_refuses_what_it_cannot_keep_faithful(tmp_path: Path) -> None:
    code = _export(TASKS, "--output", tmp_path / "a")
    assert code.returncode == 2 and "--allow-code-exec" in code.stderr
    assert not (tmp_path / "a").exists()
    bad = _export(ROOT / "fixtures" / "tasks_bad.jsonl", "--output", tmp_path / "b")
    assert bad.returncode == 1
    assert bad.stderr.splitlines()[-1].endswith("refusing to export invalid tasks")
    assert "tasks_bad.jsonl:24: duplicate_task_id" in bad.stderr
    assert not (tmp_path / "b").exists()
    name = _export(TASKS, "--output", tmp_path / "c", "--allow-code-exec", "--name", "a-b")
    assert name.returncode == 2 and "--name" in name.stderr
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    busy = _export(TASKS, "--output", tmp_path / "d", "--allow-code-exec")
    assert busy.returncode == 2 and "--force" in busy.stderr
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["keep.txt"]
    missing = _export(tmp_path / "nope.jsonl", "--output", tmp_path / "e")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def _fixed_model(outputs: dict[str, str], tasks: Path = TASKS) -> Any:
    from lm_eval.api.model import LM

    from evalspec.scoring.render import render

    rows = [json.loads(line) for line in tasks.read_text().splitlines() if line.strip()]
    by_prompt = {render(t): outputs[t["task_id"]] for t in rows}

    class Fixed(LM):  # type: ignore[misc]
        """A model that answers each rendered prompt with its fixed output."""

        def loglikelihood(self, requests: Any) -> Any:
            raise NotImplementedError

        def loglikelihood_rolling(self, requests: Any) -> Any:
            raise NotImplementedError

        def generate_until(self, requests: Any) -> list[str]:
            return [by_prompt[r.args[0]] for r in requests]

    return Fixed()


@pytest.mark.slow
@pytest.mark.harness
def test_lm_eval_runs_the_export_with_evalspec_s_scores(tmp_path: Path) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    out = tmp_path / "lm"
    assert _export(TASKS, "--output", out, "--allow-code-exec", "--name", "fixture").returncode == 0
    outputs = fixture_outputs()
    results = simple_evaluate(
        model=_fixed_model(outputs),
        tasks=["fixture"],
        task_manager=TaskManager(include_path=str(out)),
        log_samples=True,
    )
    assert results is not None
    report = evalspec_report(tmp_path, outputs)
    got = results["results"]["fixture"]
    for metric, stat in report["aggregates"]["overall"].items():
        assert got[f"{metric},none"] == pytest.approx(stat["mean"], abs=1e-12), metric
    # The prompt lm-eval sent is evalspec's rendered prompt.
    from evalspec.scoring.render import render

    for sample in results["samples"]["fixture"]:
        task = json.loads(sample["doc"]["task"])
        assert sample["arguments"][0][0] == render(task)

    # lm-eval writes its --log_samples file; evalspec rescores it to the same report.
    # As lm_eval's command line does: the aggregated results first (they date the run).
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name="fixture", samples=samples["fixture"])
    [samples_file] = (tmp_path / "run").rglob("samples_fixture_*.jsonl")
    rescored = subprocess.run(
        [*COMMAND, "score", str(TASKS), str(samples_file), *LM_EVAL_JSON],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rescored.returncode == 0, rescored.stderr
    again = json.loads(rescored.stdout)
    assert again["rows"] == report["rows"]
    assert again["aggregates"] == report["aggregates"]


@pytest.mark.slow
@pytest.mark.harness
@pytest.mark.parametrize(("name", "version"), SLICE_VERSIONS)
def test_a_public_benchmark_slice_scores_the_same_on_lm_eval(
    tmp_path: Path, name: str, version: int
) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    tasks, outputs = imported_slice(name, tmp_path, version)
    out = tmp_path / "lm"
    assert _export(tasks, "--output", out, "--allow-code-exec").returncode == 0
    results = simple_evaluate(
        model=_fixed_model(outputs, tasks),
        tasks=[name],
        task_manager=TaskManager(include_path=str(out)),
    )
    assert results is not None
    report = evalspec_report(tmp_path, outputs, tasks)
    for metric, stat in report["aggregates"]["overall"].items():
        got = results["results"][name][f"{metric},none"]
        assert got == pytest.approx(stat["mean"], abs=1e-12), metric


@pytest.mark.slow
@pytest.mark.harness
def test_an_edited_export_refuses_to_run(tmp_path: Path) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    out = tmp_path / "lm"
    assert _export(TASKS, "--output", out, "--allow-code-exec", "--name", "fixture").returncode == 0
    path = out / "fixture.jsonl"
    path.write_text(path.read_text().replace('"targets": ["41"]', '"targets": ["40"]'))
    with pytest.raises(RuntimeError, match="changed since it was exported"):
        simple_evaluate(
            model=_fixed_model(fixture_outputs()),
            tasks=["fixture"],
            task_manager=TaskManager(include_path=str(out)),
        )
