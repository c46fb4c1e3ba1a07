"""The property suites again, with more examples than the quick default.

The quick suite runs every hypothesis test with the ``quick`` profile (20
examples); under ``-m slow`` this reruns them all with the ``ci`` profile (60), or
with whatever ``HYPOTHESIS_PROFILE`` names (``thorough``: 2000).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def property_modules() -> list[Path]:
    """The test modules that hold hypothesis tests (``@given``)."""
    here = Path(__file__).resolve()
    return sorted(
        p for p in TESTS.rglob("test_*.py") if p != here and "@given" in p.read_text("utf-8")
    )


def test_the_property_modules_are_found() -> None:
    names = {p.name for p in property_modules()}
    assert {"test_validator_properties.py", "test_metric_properties.py"} <= names


@pytest.mark.slow
def test_property_suites_with_more_examples() -> None:
    env = dict(os.environ)
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow"]
        + [str(p) for p in property_modules()],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]
