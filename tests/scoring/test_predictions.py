"""Reading predictions files: every problem reported by line (evalspec/scoring/predictions.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from evalspec import read_predictions
from evalspec.scoring.predictions import MAX_SUGGESTIONS, PREDICTION_RULES

IDS = ["t1", "t2", "t3"]


def read(text: bytes, ids: list[str] = IDS, **kwargs: list[str]):  # type: ignore[no-untyped-def]
    return read_predictions(io.BytesIO(text), ids, **kwargs)


def test_good_lines_give_outputs() -> None:
    result = read(b'{"task_id": "t1", "output": "x"}\n\n{"task_id": "t2", "output": ""}\n')
    assert dict(result.outputs) == {"t1": "x", "t2": ""}
    assert result.problems == ()
    assert result.total == 2


def test_each_problem_is_reported_with_its_line() -> None:
    lines = [
        b'{"task_id": "t1", "output": "first"}',  # 1 ok
        b"{not json",  # 2
        b"[1, 2]",  # 3
        b'{"task_id": "t2"}',  # 4
        b'{"task_id": 5, "output": "x"}',  # 5
        b'{"task_id": "t2", "output": null}',  # 6
        b'{"task_id": "t9", "output": "x"}',  # 7
        b'{"task_id": "t1", "output": "second"}',  # 8
        b'{"task_id": "t3", "output": "a", "output": "b"}',  # 9
        b'{"task_id": "t3", "output": NaN}',  # 10
        b'\xff{"task_id": "t3", "output": "x"}',  # 11
        b"",  # 12 blank
        b'{"task_id": "t3", "output": "ok", "model": "m", "latency_ms": 12}',  # 13 ok
        b'{"task_id": "t4", "output": "a", "outputs": ["b"]}',  # 14
        b'{"task_id": "t4", "outputs": []}',  # 15
    ]
    result = read(b"\n".join(lines) + b"\n")
    found = [(p.line, p.rule) for p in result.problems]
    assert found == [
        (2, "invalid_json"),
        (3, "not_object"),
        (4, "missing_field"),
        (5, "wrong_type"),
        (6, "wrong_type"),
        (7, "unknown_task"),
        (8, "duplicate_task_id"),
        (9, "duplicate_key"),
        (10, "invalid_json"),
        (11, "invalid_json"),
        (14, "conflicting_fields"),
        (15, "no_samples"),
    ]
    assert {rule for _, rule in found} == set(PREDICTION_RULES)
    assert dict(result.outputs) == {"t1": "first", "t3": "ok"}
    assert result.total == 14
    by_line = {p.line: p for p in result.problems}
    assert by_line[8].task_id == "t1"
    assert "line 1" in by_line[8].message
    assert by_line[6].task_id == "t2"


def test_a_missing_output_names_the_keys_the_line_has() -> None:
    result = read(b'{"task_id": "t1", "answer": "x"}\n')
    (problem,) = result.problems
    assert problem.rule == "missing_field"
    assert "'answer'" in problem.message and "rename" in problem.message
    bare = read(b'{"task_id": "t1"}\n').problems[0].message
    assert "the line has" not in bare


def test_the_keys_named_stay_one_short_line_for_a_hostile_line() -> None:
    keys = {f"k{i}\n" + "x" * 5000: 1 for i in range(300)}
    line = json.dumps({"task_id": "t1", **keys}).encode() + b"\n"
    (problem,) = read(line).problems
    assert "\n" not in problem.message
    assert len(problem.message) < 600
    assert problem.message.count("…") == 5 and "and 295 more" in problem.message


def test_unknown_task_suggests_a_close_id() -> None:
    result = read(b'{"task_id": "t_1", "output": "x"}\n', ids=["t_2", "zzz"])
    assert "did you mean 't_2'?" in result.problems[0].message


def test_suggestions_stop_after_a_few_unknown_ids() -> None:
    body = b"".join(b'{"task_id": "task_1%d", "output": "x"}\n' % i for i in range(30))
    problems = read(body, ids=["task_1"]).problems
    assert len(problems) == 30
    hinted = [p for p in problems if "did you mean" in p.message]
    assert len(hinted) == MAX_SUGGESTIONS


def test_predictions_for_rejected_tasks_are_skipped_not_flagged() -> None:
    result = read(b'{"task_id": "bad", "output": "x"}\n', invalid_task_ids=["bad"])
    assert result.problems == ()
    assert result.for_invalid_tasks == 1
    assert dict(result.outputs) == {}


def test_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"task_id": "t1", "output": "a\\r\\n"}\r\n')
    result = read_predictions(path, IDS)
    assert dict(result.outputs) == {"t1": "a\r\n"}
