"""Scoring another harness's run: lm-evaluation-harness ``--log_samples`` files.

The records are written in the shape lm-eval 0.4 writes them: the ``example``
dict of ``lm_eval/evaluator.py`` (doc_id, doc, target, arguments, resps,
filtered_resps, filter, metrics, hashes), serialised by
``lm_eval/loggers/evaluation_tracker.py`` ``save_results_samples``, where
``sanitize_list`` turns every response into a string (tuples into lists of
strings) and ``arguments`` into ``{"gen_args_0": {"arg_0": ..., "arg_1": ...}}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec.scoring.runlogs import RUN_LOG_RULES, RunLogError, read_run_predictions

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "fixtures" / "tasks.jsonl"
PREDICTIONS = ROOT / "fixtures" / "predictions.jsonl"
COMMAND = [sys.executable, "-m", "evalspec"]
INSPECT = ("--predictions-format", "inspect")


def _lm_eval_record(
    doc_id: int,
    doc: dict[str, Any],
    texts: list[str],
    *,
    filter_key: str = "none",
    filtered: list[str] | None = None,
) -> dict[str, Any]:
    """One line of samples_<task>_<date>.jsonl for a generate_until task."""
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": str(doc.get("answer", "")),
        "arguments": {"gen_args_0": {"arg_0": "prompt", "arg_1": {"until": ["\n\n"]}}},
        "resps": [texts],
        "filtered_resps": filtered if filtered is not None else [texts[0]],
        "filter": filter_key,
        "metrics": ["exact_match"],
        "doc_hash": "0" * 64,
        "prompt_hash": "1" * 64,
        "target_hash": "2" * 64,
        "exact_match": 0.0,
    }


def _fixture_rows() -> tuple[list[dict[str, Any]], dict[str, str]]:
    tasks = [json.loads(line) for line in TASKS.read_text().splitlines() if line.strip()]
    outputs = {
        (p := json.loads(line))["task_id"]: p["output"]
        for line in PREDICTIONS.read_text().splitlines()
        if line.strip()
    }
    return tasks, outputs


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def _score(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "score", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what names the predictions file itself."""
    report = json.loads(json.dumps(report))
    for key in ("predictions_sha256", "predictions_format"):
        report["provenance"].pop(key)
    return report


def test_an_lm_eval_run_of_an_evalspec_file_scores_as_its_predictions_file(
    tmp_path: Path,
) -> None:
    # The lm-eval task was made from the evalspec file, so each doc is a task line.
    tasks, outputs = _fixture_rows()
    records = []
    for doc_id, task in enumerate(tasks):
        if task["task_id"] not in outputs:
            continue
        raw = outputs[task["task_id"]]
        # lm-eval logs one record per filter; both carry the same raw response.
        records.append(_lm_eval_record(doc_id, task, [raw], filter_key="strict-match"))
        records.append(
            _lm_eval_record(doc_id, task, [raw], filter_key="flexible", filtered=["[invalid]"])
        )
    samples = _write(tmp_path / "samples_mytask_2026-12-02T00-00-00.jsonl", records)
    common = ("--allow-code-exec", "--format", "json")
    from_lm_eval = _score(TASKS, samples, "--predictions-format", "lm-eval", *common)
    from_file = _score(TASKS, PREDICTIONS, *common)
    assert from_lm_eval.returncode == from_file.returncode == 0, from_lm_eval.stderr
    left, right = json.loads(from_lm_eval.stdout), json.loads(from_file.stdout)
    assert left["provenance"]["predictions_format"] == "lm-eval"
    assert right["provenance"]["predictions_format"] == "evalspec"
    assert _comparable(left) == _comparable(right)
    # The raw response is scored, never lm-eval's filtered one.
    assert all(row["prediction"] != "[invalid]" for row in left["rows"])


def test_repeats_become_samples_and_give_pass_at_k(tmp_path: Path) -> None:
    tasks, _ = _fixture_rows()
    task = next(t for t in tasks if t["task_id"] == "arith_001")
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(task) + "\n")
    samples = _write(tmp_path / "s.jsonl", [_lm_eval_record(0, task, ["41", "40", " 41 "])])
    run = _score(one, samples, "--predictions-format", "lm-eval", "--format", "json")
    assert run.returncode == 0, run.stderr
    row = json.loads(run.stdout)["rows"][0]
    assert row["n"] == 3 and row["correct"] == 2
    assert [s["prediction"] for s in row["samples"]] == ["41", "40", "41"]


def test_an_id_template_maps_a_benchmark_run_by_doc_id(tmp_path: Path) -> None:
    tasks, _ = _fixture_rows()
    task = {**next(t for t in tasks if t["task_id"] == "arith_001"), "task_id": "gsm_7"}
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(task) + "\n")
    doc = {"question": "17 + 24?", "answer": "41"}  # a published row: no task id
    samples = _write(tmp_path / "s.jsonl", [_lm_eval_record(7, doc, ["41"])])
    unmapped = _score(one, samples, "--predictions-format", "lm-eval")
    assert unmapped.returncode == 1
    assert f"{samples}:1: unmappable_sample — " in unmapped.stderr
    assert "--id-template" in unmapped.stderr
    mapped = _score(
        one, samples, "--predictions-format", "lm-eval", "--id-template", "gsm_{doc_id}"
    )
    assert mapped.returncode == 0, mapped.stderr
    assert "gsm_7" in mapped.stdout and "1.0000" in mapped.stdout


def test_every_record_that_cannot_be_used_is_reported_by_line(tmp_path: Path) -> None:
    tasks, _ = _fixture_rows()
    task = next(t for t in tasks if t["task_id"] == "arith_001")
    other = next(t for t in tasks if t["task_id"] == "mcq_002")
    loglikelihood = _lm_eval_record(1, other, ["x"])
    # A multiple_choice task: one request per choice, [logprob, is_greedy] pairs.
    loglikelihood["resps"] = [[["-1.5", "False"]], [["-0.2", "True"]]]
    lines = [
        json.dumps(_lm_eval_record(0, task, ["41"])),
        json.dumps(loglikelihood),
        "{not json",
        json.dumps({"doc_id": 3}),
        json.dumps(_lm_eval_record(4, {**task, "task_id": "nope"}, ["1"])),
        json.dumps(_lm_eval_record(5, task, ["42"])),  # the same task, another answer
    ]
    samples = tmp_path / "s.jsonl"
    samples.write_text("\n".join(lines) + "\n")
    run = _score(TASKS, samples, "--predictions-format", "lm-eval", "--allow-code-exec")
    assert run.returncode == 1
    for line, rule in (
        (2, "not_generated_text"),
        (3, "invalid_json"),
        (4, "not_object"),
        (5, "unknown_task"),
        (6, "duplicate_task_id"),
    ):
        assert f"{samples}:{line}: {rule} — " in run.stderr, (rule, run.stderr)
    assert ":1:" not in run.stderr


def test_doc_id_plus_one_meets_the_row_numbers_of_evalspec_import(tmp_path: Path) -> None:
    # lm-eval counts docs from 0; evalspec import's {@row} counts rows from 1.
    tasks, _ = _fixture_rows()
    task = {**next(t for t in tasks if t["task_id"] == "arith_001"), "task_id": "gsm8k/test/1"}
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(task) + "\n")
    samples = _write(tmp_path / "s.jsonl", [_lm_eval_record(0, {"question": "?"}, ["41"])])
    run = _score(
        one,
        samples,
        "--predictions-format",
        "lm-eval",
        "--id-template",
        "gsm8k/test/{doc_id|plus:1}",
    )
    assert run.returncode == 0, run.stderr
    assert "gsm8k/test/1" in run.stdout and "1.0000" in run.stdout


@pytest.mark.parametrize(
    ("template", "wrong"),
    [
        ("{doc_id", None),
        ("{docid}", "docid"),
        ("{doc}", "doc"),
        ("{doc_id.x}", "doc_id.x"),
        ("{doc.q+1}", "doc.q+1"),
        ("{doc_id+1}", "doc_id+1"),
        ("{doc_id|plus:one}", "doc_id|plus:one"),
        ("{doc_id|shell:ls}", "doc_id|shell:ls"),
    ],
)
def test_a_malformed_id_template_is_a_usage_error(
    tmp_path: Path, template: str, wrong: str | None
) -> None:
    samples = _write(tmp_path / "s.jsonl", [_lm_eval_record(0, {"task_id": "a"}, ["x"])])
    run = _score(TASKS, samples, "--predictions-format", "lm-eval", "--id-template", template)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "--id-template" in run.stderr
    if wrong is not None:
        assert f"{{{wrong}}}" in run.stderr


def test_an_inspect_log_without_inspect_installed_says_how_to_get_it(tmp_path: Path) -> None:
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK\x03\x04 not really")
    blocked = (
        "import sys; sys.modules['inspect_ai'] = None; sys.modules['inspect_ai.log'] = None; "
        "sys.argv[0] = 'evalspec'; from evalspec.cli.main import run; run()"
    )
    run = subprocess.run(
        [sys.executable, "-c", blocked, "score", str(TASKS), str(log), *INSPECT],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "pip install 'evalspec-contract[inspect]'" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_run_log_rules_are_documented() -> None:
    docs = (ROOT / "docs" / "harnesses.md").read_text()
    for rule in RUN_LOG_RULES:
        assert f"`{rule}`" in docs, rule


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "zz"]),
            st.lists(st.text(max_size=5), min_size=1, max_size=3),
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_every_lm_eval_record_is_scored_or_reported(
    rows: list[tuple[str, list[str], bool]],
) -> None:
    # Nothing is dropped: each record becomes a prediction, merges with an identical
    # repeat of its doc (another filter's line), or is a problem with its line.
    lines = []
    for doc_id, (task_id, texts, loglik) in enumerate(rows):
        record = _lm_eval_record(doc_id, {"task_id": task_id}, texts)
        if loglik:
            record["resps"] = [[["-1.0", "False"]]]
        lines.append(json.dumps(record).encode() + b"\n")
    got = read_run_predictions("lm-eval", b"".join(lines), ["a", "b", "c"])
    reported = {p.line for p in got.problems}
    first: dict[str, tuple[str, ...]] = {}
    for number, (task_id, texts, loglik) in enumerate(rows, start=1):
        if loglik:
            assert number in reported
        elif task_id in first:
            # Another filter's line of the same doc merges with it (reported with it,
            # when that one was); another answer is a repeat, reported.
            assert (number in reported) == (first[task_id] != tuple(texts))
        else:
            first[task_id] = tuple(texts)
            assert (number in reported) == (task_id == "zz")  # zz: no such task
            if task_id != "zz":
                assert got.samples[task_id] == tuple(texts)
    assert set(got.samples) == set(first) - {"zz"}


def test_the_evalspec_format_takes_no_template() -> None:
    with pytest.raises(RunLogError):
        read_run_predictions("evalspec", b"", [], id_template="{id}")
