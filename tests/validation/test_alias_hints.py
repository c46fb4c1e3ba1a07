"""Hints for names other tools use: a registered category or metric declares its
``aliases`` (and an ``alias_hint``), and a task naming one is told what to use.
The core names none of them: the built-in plugins declare theirs, and a project's
plugin declares its own the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import example_plugin
import pytest

from evalspec import validate_task
from evalspec.model import Category, Metric
from evalspec.registry.build import default_registry

TASK: dict[str, Any] = {
    "task_id": "t1",
    "category": "arithmetic",
    "prompt": "Question: 2 + 2\nAnswer:",
    "targets": ["4"],
    "metric_name": "exact_match",
    "post_process": "strip_whitespace",
}


def messages(**changes: Any) -> list[str]:
    _, errors = validate_task({**TASK, **changes})
    return [e.message for e in errors]


def test_pass_at_k_points_to_code_exec_and_the_pass_at_option() -> None:
    for name in ("pass@1", "pass@10", "PASS@K", "pass_at_1"):
        (message,) = messages(
            category="code_exec", metric_name=name, post_process="extract_code_block"
        )
        assert "did you mean 'code_exec'? pass@k is code_exec scored on n samples" in message
        assert message.endswith("`evalspec score --pass-at K`")


def test_sentiment_points_to_classification() -> None:
    latest = default_registry().version
    for name in ("sentiment", "Sentiment_Analysis", "nli"):
        (message,) = messages(category=name)
        assert f'category "{name}" is not in spec version {latest}' in message
        assert "did you mean 'classification'? the label is the target" in message


def test_a_close_spelling_still_gets_the_close_name_and_a_stranger_none() -> None:
    (close,) = messages(metric_name="exact_matc")
    assert close.endswith("did you mean 'exact_match'?")
    (stranger,) = messages(metric_name="perplexity")
    assert "did you mean" not in stranger
    (huge,) = messages(metric_name="pass@" + "1" * 10_000)  # not looked up: no hint, no cost
    assert "did you mean" not in huge


def test_a_warm_run_gives_the_hint_without_loading_a_plugin(tmp_path: Path) -> None:
    """With the snapshot current, the hint of an invalid line needs no registry: the
    command imports neither the registry's builder nor pluggy (tens of milliseconds,
    in every --jobs process that reports such a line), and says the same."""
    (tmp_path / "t.jsonl").write_text(json.dumps({**TASK, "category": "sentiment"}) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "EVALSPEC_NO_PLUGIN_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    run = [sys.executable, "-X", "importtime", "-m", "evalspec", "validate", "t.jsonl"]
    cold, warm = (
        subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        for _ in range(2)
    )
    assert cold.returncode == warm.returncode == 1
    assert cold.stdout == warm.stdout
    assert "did you mean 'classification'? the label is the target" in warm.stdout
    assert "evalspec.registry.build" in cold.stderr  # the control: the cold run built it
    imported = {line.rsplit("|", 1)[-1].strip() for line in warm.stderr.splitlines()}
    assert not imported & {"evalspec.registry.build", "pluggy", "evalspec.registry.manager"}


def test_the_aliases_are_read_once_however_many_names_are_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file of distinct unknown names (each a new key of the hint's cache) must not
    read and verify the snapshot once a line: 20,000 such lines took 15 s so, 0.9 s
    with the registry of the process."""
    from evalspec.registry import snapshot
    from evalspec.validation import precise

    calls: list[int] = []
    read = snapshot.aliases_in_force

    def counted() -> dict[str, Any]:
        calls.append(1)
        return read()

    monkeypatch.setattr(snapshot, "aliases_in_force", counted)
    precise._declared_aliases.cache_clear()
    precise._alias_hint_in.cache_clear()
    for i in range(50):
        (message,) = messages(category=f"unknown_{i}")
        assert "is not in spec version" in message
    (hinted,) = messages(category="sentiment")
    assert "did you mean 'classification'?" in hinted
    assert len(calls) == 1


@pytest.mark.parametrize("bad", ["", "two words", 3])
def test_aliases_are_names_or_patterns(bad: Any) -> None:
    with pytest.raises(ValueError, match="aliases must be names or patterns"):
        Metric("m", aliases=(bad,))
    with pytest.raises(ValueError, match="aliases must be names or patterns"):
        Category("c", aliases=(bad,))


def test_a_project_plugin_declares_its_own_aliases(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "suite"\n\n[tool.evalspec]\nplugins = ["example_plugin"]\n',
        encoding="utf-8",
    )
    (root / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n### Added\n- Spec version 3: category `translation`.\n",
        encoding="utf-8",
    )
    plugin = root / "example_plugin"
    shutil.copytree(Path(example_plugin.__file__).parent, plugin)
    source = plugin / "__init__.py"
    text = source.read_text(encoding="utf-8")
    registered = 'Metric("chrf", "character n-gram F-score", chrf)'
    assert registered in text
    declared = 'Metric("chrf", "character n-gram F-score", chrf, aliases=("character_f*",))'
    source.write_text(text.replace(registered, declared), encoding="utf-8")
    run = [sys.executable, "-m", "evalspec"]
    locked = subprocess.run([*run, "spec", "lock"], cwd=root, capture_output=True, text=True)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    task = {**TASK, "metric_name": "character_fscore"}
    (root / "t.jsonl").write_text(json.dumps(task) + "\n", encoding="utf-8")
    done = subprocess.run(
        [*run, "validate", "t.jsonl"], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].endswith(
        'metric_name "character_fscore" is not in spec version 3 (known: exact_match, f1, '
        "bleu_4, rouge_l, accuracy, code_exec, numeric_match, chrf); did you mean 'chrf'?"
    )
