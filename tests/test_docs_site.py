"""The docs site builds strict (mkdocs.yml): every page in the nav, every link and
anchor resolved, and the API reference holds the whole public surface."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = (
    "evalspec",
    "evalspec.command",
    "evalspec.versions",
    "evalspec.sandbox",
    "evalspec.testing",
)
"""The public packages whose ``__all__`` the API page documents name by name."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("the docs site test needs the docs extra: pip install '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return out


@pytest.mark.slow
def test_every_page_of_docs_is_built(site: Path) -> None:
    pages = {p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md")}
    for page in pages:
        built = "index.html" if page.name == "index.md" else f"{page.with_suffix('')}/index.html"
        assert (site / built).is_file(), page


@pytest.mark.slow
def test_the_api_page_documents_every_public_name(site: Path) -> None:
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    missing = [
        f"{package}.{name}"
        for package in PUBLIC
        for name in importlib.import_module(package).__all__
        if not name.startswith("_") and f'id="{package}.{name}"' not in html
    ]
    assert not missing, f"not on docs/api.md: {missing}"


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    # The strict build is only worth something if it fails: a copy of the docs with
    # one dead anchor must not build.
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("the docs site test needs the docs extra: pip install '.[docs]'")
    copy = tmp_path / "repo"
    copy.mkdir()
    (copy / "mkdocs.yml").write_text(
        (ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("paths: [.]", f"paths: [{ROOT}]"),
        encoding="utf-8",
    )
    docs = copy / "docs"
    shutil.copytree(ROOT / "docs", docs)
    with (docs / "index.md").open("a", encoding="utf-8") as f:
        f.write("\nSee [the spec](spec.md#no-such-section).\n")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode != 0
    assert "no-such-section" in r.stdout + r.stderr
