"""Every code block of README.md and docs/**/*.md runs as written (docs/contributing.md,
"Writing docs that run", says how blocks are run and how one is marked as not runnable)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_blocks import ROOT, run_document, scratch_copy

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_runs_as_written(path: Path, tmp_path: Path) -> None:
    failures = run_document(path, scratch_copy(tmp_path / "repo"))
    assert not failures, "\n\n".join(failures)
