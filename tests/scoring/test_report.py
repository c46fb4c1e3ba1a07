"""The score report and its schema (evalspec/scoring/report.py, docs/score-report.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from evalspec_plugins.metrics import corpus_bleu_4
from report_schema import check_report

from evalspec import TaskSpec, build_report, format_report, load_fixtures, score_tasks
from evalspec.scoring.predictions import PredictionProblem

TASKS = [t for t in load_fixtures().tasks if t.metric_name != "code_exec"]
OUTPUTS = {
    "arith_001": " 41\n",
    "arith_002": "144\nwrong",
    "mcq_001": "the answer is b",
    "mcq_002": "D",
    "cls_001": "Positive",
    "sum_001": "The council voted to extend the bike lanes.\nMore.",
    "sum_002": "Bees can learn to recognise human faces.",
}


def report(**kwargs: Any) -> dict[str, Any]:
    scores = score_tasks(TASKS, OUTPUTS)
    return build_report(TASKS, scores, **kwargs)


def test_report_follows_the_schema() -> None:
    r = report(dataset="fixtures", tasks_sha256="0" * 64, predictions_sha256="f" * 64)
    check_report(json.loads(format_report(r, "json")))


def test_counts_rows_and_unparsed() -> None:
    r = report()
    assert r["counts"] == {
        "tasks": 8,
        "scored": 7,
        "missing": 1,
        "sandbox_errors": 0,
        "invalid_tasks": 0,
        "invalid_predictions": 0,
    }
    rows = {row["task_id"]: row for row in r["rows"]}
    assert rows["cls_002"]["missing"] and rows["cls_002"]["score"] == 0.0
    assert rows["arith_001"]["prediction"] == "41"
    assert rows["mcq_001"]["unparsed"]
    assert r["unparsed"] == {
        "arithmetic": {"extract_first_line": 0},
        "classification": {"extract_first_line": 0},
        "mcq": {"extract_letter": 1},
        "summary": {"extract_first_line": 0},
    }


def test_aggregates_group_by_category_metric_and_label() -> None:
    r = report()
    agg = r["aggregates"]
    assert agg["overall"] == agg["by_metric"]
    assert agg["by_metric"]["exact_match"]["count"] == 4
    assert agg["by_metric"]["exact_match"]["mean"] == 0.75
    assert agg["by_metric"]["accuracy"]["mean"] == 0.0
    assert agg["by_category"]["arithmetic"] == {
        "count": 2,
        "mean": 0.5,
        "ci95": agg["by_category"]["arithmetic"]["ci95"],
    }
    difficulty = agg["by_label"]["difficulty"]
    assert sorted(difficulty) == ["easy", "hard"]
    assert difficulty["easy"]["count"] + difficulty["hard"]["count"] == 8


def test_corpus_bleu_is_sacrebleu_corpus_over_the_bleu_items() -> None:
    r = report()
    bleu_tasks = [t for t in TASKS if t.metric_name == "bleu_4"]
    expected = corpus_bleu_4(
        [OUTPUTS[t.task_id].strip() for t in bleu_tasks], [t.targets for t in bleu_tasks]
    )
    assert r["corpus"] == {"bleu_4": expected}


def test_same_inputs_and_seed_give_identical_json_and_the_seed_matters() -> None:
    assert format_report(report(seed=3), "json") == format_report(report(seed=3), "json")
    assert report(seed=3)["provenance"]["seed"] == 3
    words = [f"w{i}" for i in range(40)]
    tasks = [
        TaskSpec(f"t{i}", "classification", "Label it.", [" ".join(words)], "f1", "none")
        for i in range(40)
    ]
    # Forty different F1 values, so the interval's bounds move with the draws.
    scores = score_tasks(tasks, {f"t{i}": " ".join(words[: i + 1]) for i in range(40)})
    ci = [
        build_report(tasks, scores, seed=seed)["aggregates"]["by_metric"]["f1"]["ci95"]
        for seed in (3, 3, 4)
    ]
    assert ci[0] == ci[1] != ci[2]


def test_provenance_names_versions_and_plugins() -> None:
    prov = report()["provenance"]
    assert prov["spec_version"] >= 1
    assert "builtin-metrics" in prov["plugins"]
    assert prov["reference_packages"] == {"rouge-score": "0.1.2", "sacrebleu": "2.6.0"}
    assert prov["code_exec"] is None


def test_an_empty_run_is_strict_json_with_null_figures_and_reasons() -> None:
    r = build_report([], [])
    text = format_report(r, "json")
    decoded = json.loads(text)
    check_report(decoded)
    assert decoded["corpus"] == {"bleu_4": None}
    assert any("bleu_4" in note for note in decoded["notes"])
    assert "NaN" not in text


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_a_corpus_metric_no_task_uses_is_not_printed_as_null(fmt: str) -> None:
    text = format_report(build_report([], []), fmt)
    assert "bleu_4" in text  # the note names it
    assert "corpus bleu_4: null" not in text and "| bleu_4 | null |" not in text


def test_a_measured_corpus_metric_is_still_printed() -> None:
    r = report()
    assert r["corpus"]["bleu_4"] is not None
    assert f"corpus bleu_4: {r['corpus']['bleu_4']:.4f}" in format_report(r, "text")


def test_no_bootstrap_gives_null_intervals_with_a_reason() -> None:
    r = report(bootstrap=0)
    check_report(r)
    stat = r["aggregates"]["by_metric"]["f1" if "f1" in r["aggregates"]["by_metric"] else "rouge_l"]
    assert stat["ci95"] is None and "reason" in stat


METADATA: list[dict[str, Any]] = [{"n": 1, "flag": True}, {"n": 1}, {"n": 2, "tags": ["a"]}]


def test_metadata_values_group_by_their_json_text_and_lists_are_noted() -> None:
    tasks = [
        TaskSpec(f"t{i}", "classification", "Label it.", ["x"], "exact_match", "none", (), meta)
        for i, meta in enumerate(METADATA)
    ]
    scores = score_tasks(tasks, {"t0": "x", "t1": "y", "t2": "x"})
    r = build_report(tasks, scores)
    check_report(r)
    assert sorted(r["aggregates"]["by_label"]["n"]) == ["1", "2"]
    assert r["aggregates"]["by_label"]["n"]["1"]["mean"] == 0.5
    assert list(r["aggregates"]["by_label"]["flag"]) == ["true"]
    assert "tags" not in r["aggregates"]["by_label"]
    assert any("'tags'" in note for note in r["notes"])


def test_prediction_problems_are_counted_by_line() -> None:
    problems = [
        PredictionProblem(3, "missing_field", "a"),
        PredictionProblem(3, "wrong_type", "b"),
        PredictionProblem(5, "unknown_task", "c", "zz"),
    ]
    r = report(prediction_problems=problems, invalid_tasks=2)
    assert r["counts"]["invalid_predictions"] == 2
    assert r["counts"]["invalid_tasks"] == 2
    assert r["prediction_problems"][2] == {
        "line": 5,
        "rule": "unknown_task",
        "message": "c",
        "task_id": "zz",
    }


def test_tasks_and_scores_must_match() -> None:
    scores = score_tasks(TASKS, OUTPUTS)
    with pytest.raises(ValueError, match="same tasks"):
        build_report(TASKS[1:], scores[:-1])


def test_text_and_markdown_show_groups_rows_and_unparsed() -> None:
    r = report(dataset="fixtures")
    text = format_report(r, "text")
    md = format_report(r, "markdown")
    for out in (text, md):
        assert "fixtures" in out
        assert "cls_002" in out and "(missing)" in out
        assert "extract_letter" in out
        assert "difficulty" in out
    assert md.startswith("# Score report: fixtures")
    assert "| task_id | category | metric | score | prediction |" in md
    with pytest.raises(ValueError, match="unknown report format"):
        format_report(r, "yaml")


def test_markdown_escapes_pipes_in_task_text() -> None:
    task = TaskSpec("a|b", "classification", "Label it.", ["x|y"], "exact_match", "none")
    r = build_report([task], score_tasks([task], {"a|b": "x|y"}))
    md = format_report(r, "markdown")
    assert "| a\\|b |" in md


def test_rouge_l_tasks_without_ascii_tokens_are_noted_never_a_silent_zero() -> None:
    tasks = [
        TaskSpec("zh", "summary", "Summarize.", ["我爱北京"], "rouge_l", "none"),
        TaskSpec("en", "summary", "Summarize.", ["I love Beijing"], "rouge_l", "none"),
    ]
    r = build_report(tasks, score_tasks(tasks, {"zh": "我爱北京", "en": "I love Beijing"}))
    assert [row["score"] for row in r["rows"]] == [0.0, 1.0]
    [note] = [n for n in r["notes"] if n.startswith("rouge_l:")]
    assert "1 task (zh)" in note
