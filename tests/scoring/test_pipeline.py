"""The score pipeline called as a library: outcomes and diagnostics, not printed text."""

from __future__ import annotations

from pathlib import Path

from evalspec.io.exitcodes import EXIT_PROBLEMS, EXIT_USAGE
from evalspec.registry.build import default_registry
from evalspec.scoring.pipeline import ScoreOptions, ScoreOutcome, score_inputs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _score(
    tasks: bytes, predictions: bytes, options: ScoreOptions
) -> tuple[ScoreOutcome, list[str]]:
    said: list[str] = []
    outcome = score_inputs(
        tasks,
        predictions,
        tasks_path="tasks.jsonl",
        tasks_name="tasks.jsonl",
        predictions_name="predictions.jsonl",
        registry=default_registry(None),
        options=options,
        say=said.append,
    )
    return outcome, said


def test_code_exec_tasks_are_refused_without_the_flag() -> None:
    tasks = (FIXTURES / "tasks.jsonl").read_bytes()
    predictions = (FIXTURES / "predictions.jsonl").read_bytes()
    outcome, said = _score(tasks, predictions, ScoreOptions())
    assert outcome == ScoreOutcome(EXIT_USAGE, None)
    assert any("--allow-code-exec" in line for line in said)


def test_bad_tasks_are_refused_then_scored_when_allowed() -> None:
    tasks = (FIXTURES / "tasks_bad.jsonl").read_bytes()
    outcome, said = _score(tasks, b"", ScoreOptions())
    assert outcome.exit_code == EXIT_PROBLEMS and outcome.report is None
    assert said[-1].startswith("evalspec: refusing to score:")
    allowed, _ = _score(tasks, b"", ScoreOptions(allow_bad_tasks=True, bootstrap=0))
    assert allowed.report is not None
    assert allowed.report["counts"]["invalid_tasks"] > 0
