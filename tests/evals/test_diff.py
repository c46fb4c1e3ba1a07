"""The change report: matched by task_id, counted by layer, removals flagged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalspec.evals.diff import diff_files, diff_records, field_changes, to_markdown
from evalspec.evals.records import read_records


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


def test_markdown_shows_long_targets_differing_late_as_different() -> None:
    opening = "A teenage substitute teacher is asked to coach the school team and "
    old = _data(_task("a", targets=[opening + "they lose the final."]))
    new = _data(_task("a", targets=[opening + "they win the final."]))
    md = to_markdown(diff_records(read_records(old), read_records(new), "main", "HEAD"), "t")
    (line,) = [row for row in md.splitlines() if row.startswith("- `a`: targets:")]
    before, after = line.removeprefix("- `a`: targets: ").split(" → ")
    assert before != after
    assert "lose" in before and "win" in after
    assert len(before) <= 80 and len(after) <= 80


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


# -- repeated task ids, and memory proportional to ids -------------------------------


def test_a_repeated_id_on_the_new_side_is_reported_not_hidden() -> None:
    old = _data(_task("A", targets=["1"]))
    new = _data(_task("A", targets=["1"]), _task("A", targets=["999"]))
    diff = diff_records(read_records(old), read_records(new), "old", "new")
    assert diff.repeated == {"new": {"A": [1, 2]}}
    assert diff.to_dict()["repeated_ids"] == {"new": {"A": [1, 2]}}
    md = to_markdown(diff, "t")
    assert "1 task id(s) repeated on the new side" in md and "`A` (lines 1, 2)" in md


def test_files_and_records_give_the_same_report(tmp_path: Path) -> None:
    old = _data(_task("a"), _task("b"), _task("c", category="mcq"), _task("b"))
    new = (
        b"\xef\xbb\xbf"
        + _data(_task("b", targets=["2"]), _task("a"))
        + b"\n  \nnot json\n"
        + json.dumps(_task("a"), indent=1).replace("\n", " ").encode()  # same task, respaced
        + b"\r\n"
    )
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    with (tmp_path / "old").open("rb") as a, (tmp_path / "new").open("rb") as b:
        streamed = diff_files(a, b, "old", "new")
    in_memory = diff_records(read_records(old), read_records(new), "old", "new")
    assert streamed.to_dict() == in_memory.to_dict()
    assert streamed.repeated == {"old": {"b": [2, 4]}, "new": {"a": [2, 6]}}
    assert streamed.unmatched == {"new": [5]}


def test_an_overlong_line_ends_a_side_as_unmatched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALSPEC_MAX_LINE_BYTES", "200")
    path = tmp_path / "new"
    path.write_bytes(
        _data(_task("a")) + b'{"task_id": "' + b"x" * 500 + b'"}\n' + _data(_task("b"))
    )
    with path.open("rb") as f:
        diff = diff_files(None, f, "old", "new")
    assert diff.unmatched == {"new": [2]}
    assert [r["task_id"] for r in diff.added] == ["a"]


def test_the_diff_command_fails_on_duplicates_when_asked(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_bytes(_data(_task("A")))
    new.write_bytes(_data(_task("A"), _task("A", targets=["9"])))
    args = [sys.executable, "-m", "evalspec", "diff", str(old), str(new)]
    plain = subprocess.run(args, capture_output=True, text=True, check=False)
    assert plain.returncode == 0 and "repeated on the new side" in plain.stdout
    failing = subprocess.run(
        [*args, "--fail-on-duplicate", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failing.returncode == 1
    assert json.loads(failing.stdout)["repeated_ids"] == {"new": {"A": [1, 2]}}


@pytest.mark.slow
def test_diff_memory_follows_the_ids_not_the_tasks(tmp_path: Path) -> None:
    # Tasks with 20 KB prompts: holding them would cost hundreds of MB; the ids cost little.
    measure = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    filler = "x" * 20_000
    with old.open("w") as a, new.open("w") as b:
        for i in range(10_000):
            task = _task(f"t{i}", prompt=f"{filler} {i}")
            a.write(json.dumps(task) + "\n")
            if i % 1000:
                b.write(json.dumps(task if i % 500 else {**task, "targets": ["2"]}) + "\n")
    size_mib = new.stat().st_size / 2**20
    cmd = [sys.executable, "-m", "evalspec", "diff", "--format", "json", str(old), str(new)]
    try:
        out = subprocess.run(
            [sys.executable, "-c", measure, *cmd], capture_output=True, text=True, check=True
        )
    finally:
        old.unlink()  # /tmp is shared: do not leave 400 MB behind
        new.unlink()
    peak_mib = int(out.stdout) / 1024
    assert size_mib > 150
    assert peak_mib < 100, f"diff peaked at {peak_mib:.0f} MiB on a {size_mib:.0f} MiB file"
