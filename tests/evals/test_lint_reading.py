"""lint reads each dataset in one streaming pass: the same findings and content hash
as validating the file and hashing its records."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_lines import _VALID, NASTY

from evalspec.evals.contenthash import file_content_hash
from evalspec.evals.layout import Layout
from evalspec.evals.lint import lint_layout
from evalspec.evals.scaffold import scaffold
from evalspec.validation.validator import validate_file


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "evals"
    scaffold(root)
    return root


def _dataset(layout: Path) -> Path:
    return layout / "datasets" / "example.jsonl"


def _lint(layout: Path) -> tuple[list[tuple[int, str]], str | None, int]:
    data = lint_layout(Layout(layout), check_git=False).datasets[0]
    found = [(p.error.line, p.error.rule) for p in data.problems if p.file == data.path]
    return found, data.content_hash, data.tasks


@pytest.mark.parametrize("line", NASTY)
def test_lint_finds_what_the_validator_finds_and_hashes_what_it_parses(
    layout: Path, line: bytes
) -> None:
    path = _dataset(layout)
    own = path.read_bytes()
    data = own + line.rstrip(b"\n") + b"\n" + _VALID.replace(b'"t1"', b'"t9"') + b"\n"
    path.write_bytes(data)
    found, hashed, tasks = _lint(layout)
    result = validate_file(path)
    validator = sorted((e.line, e.rule) for e in result.errors)
    assert sorted(f for f in found if f[1] in {e.rule for e in result.errors}) == validator
    assert hashed == file_content_hash(path)
    assert tasks == result.total


def test_a_semantic_finding_carries_its_line(layout: Path) -> None:
    path = _dataset(layout)
    first = path.read_bytes().split(b"\n")[0]
    path.write_bytes(path.read_bytes() + first.replace(b'"task_id": "', b'"task_id": "x') + b"\n")
    data = lint_layout(Layout(layout), check_git=False).datasets[0]
    dup = [p.error for p in data.problems if p.error.rule == "duplicate_prompt"]
    assert dup and dup[0].text.startswith("{") and '"task_id": "x' in dup[0].text


def test_an_unchanged_dataset_is_told_by_its_bytes(tmp_path: Path) -> None:
    from evalspec.evals.lint.linter import _same_bytes

    path = tmp_path / "d.jsonl"
    data = b"x" * ((1 << 20) + 7)
    path.write_bytes(data)
    assert _same_bytes(path, data)
    assert not _same_bytes(path, data[:-1] + b"y")
    assert not _same_bytes(path, data + b"\n")
    assert not _same_bytes(tmp_path / "missing.jsonl", data)
