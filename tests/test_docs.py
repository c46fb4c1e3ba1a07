"""Every code block of README.md and docs/**/*.md runs as written (docs/contributing.md,
"Writing docs that run", says how blocks are run and how one is marked as not runnable)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_blocks import ROOT, run_document, scratch_copy

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_runs_as_written(path: Path, tmp_path: Path) -> None:
    failures = run_document(path, scratch_copy(tmp_path / "repo"), tmp_path / "tmp")
    assert not failures, "\n\n".join(failures)


def test_every_relative_link_of_the_readme_resolves() -> None:
    # The README is read on the forge, outside the site: mkdocs does not check it.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into the docs"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_docs_page_is_in_the_site_nav() -> None:
    # mkdocs build --strict refuses a page left out of the nav; say so in the quick suite.
    import yaml

    def pages(node: object) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from pages(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from pages(value)

    nav = set(pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - nav == set(), "add these pages to the nav of mkdocs.yml"
    assert nav - on_disk == set(), "the nav of mkdocs.yml names pages that do not exist"
