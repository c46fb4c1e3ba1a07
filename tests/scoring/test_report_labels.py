"""Labels are declared or few, and text output escapes what it prints (issue 23, item 5)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from report_schema import check_report

from evalspec import TaskSpec, build_report, format_report, score_tasks
from evalspec.cli.progress import MIN_BYTES, Progress
from evalspec.scoring.report import MAX_LABEL_VALUES, MAX_LABELS, label_keys


def _tasks(metadata: list[dict[str, Any]]) -> list[TaskSpec]:
    return [
        TaskSpec(f"t{i}", "classification", "Label it.", ["x"], "exact_match", "none", (), meta)
        for i, meta in enumerate(metadata)
    ]


def _report(tasks: list[TaskSpec], **kwargs: Any) -> dict[str, Any]:
    scores = score_tasks(tasks, {t.task_id: "x" if i % 2 else "y" for i, t in enumerate(tasks)})
    report = build_report(tasks, scores, bootstrap=0, **kwargs)
    check_report(report)
    return report


def test_an_entry_point_in_metadata_makes_no_group_per_task() -> None:
    tasks = _tasks(
        [
            {"entry_point": f"func_{i}", "difficulty": "hard" if i % 3 else "easy"}
            for i in range(164)
        ]
    )
    r = _report(tasks)
    assert list(r["aggregates"]["by_label"]) == ["difficulty"]
    assert sorted(r["aggregates"]["by_label"]["difficulty"]) == ["easy", "hard"]
    assert any("'entry_point'" in n and "config/labels.yaml" in n for n in r["notes"])


def test_a_value_on_every_task_is_an_id_not_a_label() -> None:
    tasks = _tasks([{"source_id": f"s{i}", "split": "a" if i < 5 else "b"} for i in range(10)])
    assert len({t.metadata["source_id"] for t in tasks}) <= MAX_LABEL_VALUES  # not the cap
    r = _report(tasks)
    assert list(r["aggregates"]["by_label"]) == ["split"]
    assert any("'source_id'" in n and "every task" in n for n in r["notes"])


def test_at_most_max_labels_undeclared_keys_the_fewest_values_first() -> None:
    n = MAX_LABELS + 3
    # key_00 has 2 values ... key_18 has 20: the three with the most values are dropped.
    tasks = _tasks([{f"key_{k:02}": str(i % (k + 2)) for k in range(n)} for i in range(40)])
    keys, notes = label_keys(tasks)
    assert keys == tuple(f"key_{k:02}" for k in range(MAX_LABELS))
    assert len(notes) == 3 and all(f"at most {MAX_LABELS}" in note for note in notes)
    assert list(_report(tasks)["aggregates"]["by_label"]) == list(keys)


def test_declared_labels_decide_whatever_the_values() -> None:
    tasks = _tasks([{"entry_point": f"f{i}", "split": "a", "lang": "en"} for i in range(30)])
    r = _report(tasks, labels=["entry_point", "split"])
    assert list(r["aggregates"]["by_label"]) == ["entry_point", "split"]  # declared: kept
    assert len(r["aggregates"]["by_label"]["entry_point"]) == 30
    assert "lang" not in r["aggregates"]["by_label"]  # undeclared: not grouped
    assert not [n for n in r["notes"] if "metadata key" in n]


HOSTILE = "hard\n\x1b[2J\x1b]0;pwned\x07\u202eevil"


def test_text_and_markdown_escape_control_characters_in_names_and_values() -> None:
    tasks = [
        TaskSpec(
            f"t{i}\x1b[31m",
            "classification",
            "Label it.",
            ["x"],
            "exact_match",
            "none",
            (),
            {"diff\x1bculty": HOSTILE if i % 2 else "easy"},
        )
        for i in range(4)
    ]
    r = _report(tasks, dataset="main\r\x1b[1A")
    assert HOSTILE in r["aggregates"]["by_label"]["diff\x1bculty"]  # the data is kept as is
    for fmt in ("text", "markdown"):
        out = format_report(r, fmt)
        assert all(line.isprintable() for line in out.splitlines()), fmt
        assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
        assert "\\u001b" in out  # shown, escaped, not dropped
        plain = format_report(_report(_plain(tasks), dataset="main"), fmt)
        assert len(out.splitlines()) == len(plain.splitlines()), fmt  # no line was split
    assert json.loads(format_report(r, "json"))["dataset"] == "main\r\x1b[1A"


def _plain(tasks: list[TaskSpec]) -> list[TaskSpec]:
    return [
        TaskSpec(
            f"t{i}",
            t.category,
            t.prompt,
            list(t.targets),
            t.metric_name,
            t.post_process,
            (),
            {"difficulty": "hard" if i % 2 else "easy"},
        )
        for i, t in enumerate(tasks)
    ]


class _Counts:
    total = 7
    bytes_done = MIN_BYTES // 2
    size = MIN_BYTES


def test_the_progress_line_escapes_the_file_name() -> None:
    stream = io.StringIO()
    progress = Progress(stream, "data/\x1b]0;title\x07x\n.jsonl")
    progress.update(_Counts())
    shown = stream.getvalue()
    assert shown.startswith("\r") and "50%" in shown
    assert "\x1b" not in shown and "\n" not in shown and "\x07" not in shown


FLAGS = ("--format", "json", "--bootstrap", "0")


def test_score_groups_by_the_labels_the_layout_declares(tmp_path: Path) -> None:
    (tmp_path / "datasets").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "labels.yaml").write_text("labels:\n  difficulty: [easy, hard]\n")
    lines, preds = [], []
    for i in range(6):
        task = {
            "task_id": f"t{i}",
            "category": "classification",
            "prompt": "Label it.",
            "targets": ["x"],
            "metric_name": "exact_match",
            "post_process": "none",
            "metadata": {"difficulty": "hard" if i % 2 else "easy", "split": "a" if i < 3 else "b"},
        }
        lines.append(json.dumps(task))
        preds.append(json.dumps({"task_id": f"t{i}", "output": "x"}))
    (tmp_path / "datasets" / "main.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "preds.jsonl").write_text("\n".join(preds) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "score", "datasets/main.jsonl", "preds.jsonl", *FLAGS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    by_label = json.loads(done.stdout)["aggregates"]["by_label"]
    assert list(by_label) == ["difficulty"]  # "split" is low-cardinality, but not declared
