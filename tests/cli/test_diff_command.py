"""``evalspec diff OLD NEW``: two files, with their cards when present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalspec.cli.dispatch import main

CARD = '---\nversion: {v}\nspec_version: 1\nseed: 1\nsources: [x]\nowner: "@o"\n---\n'


def test_two_files_with_cards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    old, new = tmp_path / "a" / "main.jsonl", tmp_path / "b" / "main.jsonl"
    old.write_text('{"task_id": "t1", "category": "mcq", "targets": ["A"]}\n')
    new.write_text('{"task_id": "t1", "category": "mcq", "targets": ["B"]}\n')
    (tmp_path / "a" / "main.card.md").write_text(CARD.format(v=1))
    (tmp_path / "b" / "main.card.md").write_text(CARD.format(v=2))
    assert main(["diff", str(old), str(new)]) == 0
    md = capsys.readouterr().out
    assert '- `t1`: targets: ["A"] → ["B"]' in md
    assert "Data card version: 1 → 2\n" in md
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] == [
        {"task_id": "t1", "changes": [{"field": "targets", "old": ["A"], "new": ["B"]}]}
    ]


def test_lfs_pointer_side_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text('{"task_id": "t1"}\n')
    new.write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 1\n"
    )
    assert main(["diff", str(old), str(new)]) == 2
    assert "git lfs pull" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("side", "says"),
    [
        ("missing.jsonl", "no such file"),
        # These were "no such file" too: the user was told a device, a named pipe or
        # a directory did not exist.
        ("/dev/zero", "not a regular file (diff reads each side twice)"),
        ("fifo.jsonl", "not a regular file (diff reads each side twice)"),
        (".", "not a regular file (diff reads each side twice)"),
    ],
)
def test_a_side_that_is_no_regular_file_is_named_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], side: str, says: str
) -> None:
    import os

    old = tmp_path / "old.jsonl"
    old.write_text('{"task_id": "t1"}\n')
    os.mkfifo(tmp_path / "fifo.jsonl")
    new = side if side.startswith("/") else str(tmp_path / side)
    assert main(["diff", str(old), new]) == 2
    assert capsys.readouterr().err == f"evalspec: error: {new}: {says}\n"
