"""evalspec tasks on inspect_ai, run for real with inspect's offline mockllm provider.

Slow and ``harness``: inspect_ai is the ``inspect`` extra, which .ci/run installs in
its own environment (.ci/harness-requirements.txt) and runs with ``-m harness``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
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
    fixture_tasks,
    imported_slice,
)

pytestmark = [pytest.mark.slow, pytest.mark.harness]

JSON_CODE = ("--allow-code-exec", "--format", "json")
PASS_AT_2 = ("--predictions-format", "inspect", "--format", "json", "--pass-at", "2")


def _model(outputs: dict[str, str], tasks: Path = TASKS) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from evalspec.scoring.render import render

    rows = [json.loads(line) for line in tasks.read_text().splitlines() if line.strip()]
    by_prompt = {render(t): outputs[t["task_id"]] for t in rows}

    def reply(messages: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        content = by_prompt[messages[-1].text]
        output = ModelOutput.from_content(model="mockllm/model", content=content)
        # With usage given, mockllm counts no tokens (which would fetch an encoding).
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def _run(task: Any, outputs: dict[str, str], log_dir: Path, tasks: Path = TASKS) -> Any:
    from inspect_ai import eval as inspect_eval

    model = _model(outputs, tasks)
    [log] = inspect_eval(task, model=model, display="none", log_dir=str(log_dir))
    assert log.status == "success", log.error
    return log


def test_inspect_scores_equal_evalspec_score_per_task_and_per_metric(tmp_path: Path) -> None:
    from evalspec.integrations.inspect_adapter import task

    outputs = fixture_outputs()
    log = _run(task(TASKS, allow_code_exec=True), outputs, tmp_path / "logs")
    report = evalspec_report(tmp_path, outputs)
    rows = {r["task_id"]: r for r in report["rows"]}
    assert {str(s.id) for s in log.samples} == set(rows)
    for sample in log.samples:
        [score] = sample.scores.values()
        row = rows[str(sample.id)]
        assert score.value == row["score"], sample.id
        assert score.answer == row["prediction"], sample.id
        assert score.metadata["unparsed"] == row["unparsed"]
        assert sample.metadata["spec_version"] == report["provenance"]["spec_version"]
        assert sample.metadata["tasks_sha256"] == report["provenance"]["tasks_sha256"]
    metrics = log.results.scores[0].metrics
    for name, stat in report["aggregates"]["overall"].items():
        assert metrics[name].value == pytest.approx(stat["mean"], abs=1e-12), name
    for name, stat in report["aggregates"]["by_category"].items():
        assert metrics[f"category:{name}"].value == pytest.approx(stat["mean"], abs=1e-12)
    assert metrics["unparsed"].value == sum(r["unparsed"] for r in report["rows"])
    # The code tasks ran in evalspec's sandbox: one passing program, one failing.
    assert {rows["code_001"]["score"], rows["code_002"]["score"]} == {1.0, 0.0}


@pytest.mark.parametrize(("name", "version"), SLICE_VERSIONS)
def test_a_public_benchmark_slice_scores_the_same_on_inspect(
    tmp_path: Path, name: str, version: int
) -> None:
    # Imported from the rows as published, with the slice's realistic outputs.
    from evalspec.integrations.inspect_adapter import task

    tasks, outputs = imported_slice(name, tmp_path, version)
    log = _run(task(tasks, allow_code_exec=True), outputs, tmp_path / "logs", tasks)
    report = evalspec_report(tmp_path, outputs, tasks)
    rows = {r["task_id"]: r for r in report["rows"]}
    assert len(log.samples) == len(rows) >= 10
    for sample in log.samples:
        [score] = sample.scores.values()
        assert score.value == rows[str(sample.id)]["score"], sample.id
    metrics = log.results.scores[0].metrics
    for metric, stat in report["aggregates"]["overall"].items():
        assert metrics[metric].value == pytest.approx(stat["mean"], abs=1e-12), metric


def test_the_samples_carry_evalspec_s_rendered_prompt(tmp_path: Path) -> None:
    from evalspec.integrations.inspect_adapter import task
    from evalspec.scoring.render import render

    built = task(TASKS, allow_code_exec=True)
    prompts = {str(s.id): s.input for s in built.dataset}
    assert prompts == {t["task_id"]: render(t) for t in fixture_tasks()}
    assert {str(s.id): s.target for s in built.dataset} == {
        t["task_id"]: t["targets"] for t in fixture_tasks()
    }


def test_an_inspect_log_rescored_by_evalspec_gives_the_same_report(tmp_path: Path) -> None:
    from evalspec.integrations.inspect_adapter import task

    outputs = fixture_outputs()
    log = _run(task(TASKS, allow_code_exec=True), outputs, tmp_path / "logs")
    location = log.location.removeprefix("file://")
    run = subprocess.run(
        [*COMMAND, "score", str(TASKS), location, "--predictions-format", "inspect", *JSON_CODE],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    rescored = json.loads(run.stdout)
    direct = evalspec_report(tmp_path, outputs)
    assert rescored["provenance"]["predictions_format"] == "inspect"
    assert rescored["rows"] == direct["rows"]
    assert rescored["aggregates"] == direct["aggregates"]


def test_epochs_of_an_inspect_run_are_the_samples_of_pass_at_k(tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from evalspec.integrations.inspect_adapter import task

    one = tmp_path / "one.jsonl"
    one.write_text(TASKS.read_text().splitlines()[0] + "\n")  # arith_001, target 41
    answers = iter(["41", "40", "41"])

    def reply(messages: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        output = ModelOutput.from_content(model="mockllm/model", content=next(answers))
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    [log] = inspect_eval(
        task(one),
        model=get_model("mockllm/model", custom_outputs=reply),
        epochs=3,
        display="none",
        log_dir=str(tmp_path / "logs"),
        max_samples=1,
    )
    assert log.status == "success", log.error
    run = subprocess.run(
        [*COMMAND, "score", str(one), log.location.removeprefix("file://"), *PASS_AT_2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    row = json.loads(run.stdout)["rows"][0]
    assert row["n"] == 3 and row["correct"] == 2
    assert row["pass_at"]["pass@2"] == pytest.approx(1.0)


def test_an_invalid_file_or_an_unallowed_code_task_is_refused(tmp_path: Path) -> None:
    from evalspec.integrations.inspect_adapter import CodeExecRefused, InvalidTaskFile, task

    with pytest.raises(CodeExecRefused, match="allow_code_exec"):
        task(TASKS)
    bad = ROOT / "fixtures" / "tasks_bad.jsonl"
    with pytest.raises(InvalidTaskFile) as caught:
        task(bad)
    assert caught.value.lines[0].startswith(f"{bad}:")
    assert len(caught.value.lines) > 1


_BY_NAME = """
import json, site, sys
from pathlib import Path
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model
import evalspec.integrations.inspect_registry as registry

outputs = json.loads(Path("outputs.json").read_text())
def reply(messages, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm/model", content=outputs[messages[-1].text])
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output

# inspect names a package's tasks from a regular install (as CI installs); an
# editable checkout runs the same @task by its file (docs/harnesses.md).
installed = Path(registry.__file__).resolve()
regular = any(installed.is_relative_to(Path(p).resolve()) for p in site.getsitepackages())
name = "evalspec/tasks" if regular else f"{installed}@tasks"
[log] = inspect_eval(
    name,
    task_args={"path": sys.argv[1], "allow_code_exec": "true"},
    model=get_model("mockllm/model", custom_outputs=reply),
    display="none",
    log_dir="logs",
)
assert log.status == "success", log.error
metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
print(json.dumps({"name": name, "metrics": metrics}))
"""


def test_inspect_runs_the_task_by_name(tmp_path: Path) -> None:
    from evalspec.scoring.render import render

    outputs = fixture_outputs()
    by_prompt = {render(t): outputs[t["task_id"]] for t in fixture_tasks()}
    (tmp_path / "outputs.json").write_text(json.dumps(by_prompt))
    (tmp_path / "by_name.py").write_text(_BY_NAME)
    # Run outside the checkout, so evalspec is imported as installed.
    run = subprocess.run(
        [sys.executable, "by_name.py", str(TASKS)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.splitlines()[-1])
    report = evalspec_report(tmp_path, outputs)
    for name, stat in report["aggregates"]["overall"].items():
        assert got["metrics"][name] == pytest.approx(stat["mean"], abs=1e-12), name


def test_the_docs_example_runs_as_written(tmp_path: Path) -> None:
    # docs/harnesses.md marks it skip for the quick suite (no inspect there).
    text = (ROOT / "docs" / "harnesses.md").read_text()
    marker = "<!-- docs: skip (needs the inspect extra; tests/integrations/test_inspect.py"
    block = re.search(re.escape(marker) + r"[^\n]*\n```python\n(.*?)```", text, re.DOTALL)
    assert block is not None, "the inspect example is gone from docs/harnesses.md"
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    script = tmp_path / "example.py"
    script.write_text(block.group(1))
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "INSPECT_LOG_DIR": str(tmp_path / "logs")},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["1.0"]
