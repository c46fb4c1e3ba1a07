"""The change report: matched by task_id, counted by layer, removals flagged."""

from __future__ import annotations

import json
from typing import Any

from evalspec.project.diff import diff_records, field_changes, to_markdown
from evalspec.project.records import read_records


def _task(tid: str, **kw: Any) -> dict[str, Any]:
    base = {
        "task_id": tid,
        "category": "arithmetic",
        "prompt": f"Q {tid}\nAnswer:",
        "targets": ["1"],
        "metric_name": "exact_match",
        "post_process": "none",
        "metadata": {"difficulty": "easy", "source": "shadow"},
    }
    base.update(kw)
    return base


def _data(*tasks: dict[str, Any]) -> bytes:
    return "".join(json.dumps(t) + "\n" for t in tasks).encode()


OLD = _data(_task("a"), _task("b"), _task("c", category="mcq"))
NEW = _data(
    _task("b", targets=["2"]),
    _task("a", metadata={"difficulty": "hard", "source": "shadow"}),
    _task("d", metadata={"difficulty": "hard", "source": "dispute"}),
)


def test_added_removed_changed_by_task_id() -> None:
    diff = diff_records(read_records(OLD), read_records(NEW), "old", "new")
    assert [r["task_id"] for r in diff.added] == ["d"]
    assert [r["task_id"] for r in diff.removed] == ["c"]
    changes = {c.task_id: [(f.field, f.old, f.new) for f in c.changes] for c in diff.changed}
    assert changes == {
        "b": [("targets", ["1"], ["2"])],
        "a": [("metadata.difficulty", "easy", "hard")],
    }


def test_reordering_is_not_a_change() -> None:
    diff = diff_records(
        read_records(_data(_task("a"), _task("b"))),
        read_records(_data(_task("b"), _task("a"))),
        "x",
        "y",
    )
    assert (diff.added, diff.removed, diff.changed) == ([], [], [])
    assert "No task changed." in to_markdown(diff, "t")


def test_counts_by_category_and_label() -> None:
    diff = diff_records(read_records(OLD), read_records(NEW), "old", "new")
    assert diff.by_category() == {
        "arithmetic": {"added": 1, "removed": 0, "changed": 2},
        "mcq": {"added": 0, "removed": 1, "changed": 0},
    }
    labels = diff.by_label()
    # the relabelled task moved out of "easy" and into "hard": both layers show it
    assert labels["difficulty"]["easy"] == {"added": 0, "removed": 1, "changed": 2}
    assert labels["difficulty"]["hard"] == {"added": 1, "removed": 0, "changed": 1}
    assert labels["source"]["dispute"] == {"added": 1, "removed": 0, "changed": 0}


def test_markdown_flags_removals_and_shows_target_changes() -> None:
    diff = diff_records(read_records(OLD), read_records(NEW), "main", "HEAD")
    diff.old_version, diff.new_version = "3", "4"
    md = to_markdown(diff, "datasets/main.jsonl")
    assert "**1 added, 1 removed, 2 changed** (3 → 3 tasks)" in md
    assert "task(s) removed" in md and "relabel" in md
    assert '- `b`: targets: ["1"] → ["2"]' in md
    assert '- `a`: metadata.difficulty: "easy" → "hard"' in md
    assert "| difficulty | hard | 1 | 0 | 1 |" in md
    assert "Data card version: 3 → 4" in md and "not bumped" not in md


def test_unparseable_lines_are_reported_not_compared() -> None:
    diff = diff_records(
        read_records(b'{"task_id": "a"}\nnot json\n[1]\n'),
        read_records(b'{"task_id": "a"}\n'),
        "x",
        "y",
    )
    assert diff.unmatched == {"old": [2, 3]}
    assert diff.to_dict()["counts"] == {"added": 0, "removed": 0, "changed": 0}


def test_field_added_or_removed_counts_as_changed() -> None:
    changes = field_changes(
        {"task_id": "a", "metadata": {"x": None}},
        {"task_id": "a", "metadata": {}, "few_shot_examples": []},
    )
    assert [(c.field, c.old, c.new) for c in changes] == [
        ("metadata.x", None, None),
        ("few_shot_examples", None, []),
    ]
