"""``evalspec lint`` honours the layout's config/lint.yaml, from any directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec.cli.dispatch import main
from evalspec.evals.scaffold import scaffold


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root holding ``evals/``: two rough datasets without cards."""
    scaffold(tmp_path / "evals")
    for name in ("legacy_v1", "fresh"):
        rows = [json.dumps({"task_id": f"{name}{i}"}) for i in range(2)]
        (tmp_path / "evals" / "datasets" / f"{name}.jsonl").write_text("\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _settings(repo: Path, text: str) -> None:
    (repo / "evals" / "config" / "lint.yaml").write_text(text)


def _rules(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, set[tuple[str, str]]]:
    code = main(["lint", "--no-git", "--format", "json", *args])
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, {(Path(p["file"]).name, p["rule"]) for p in out["problems"]}


def test_per_file_ignores_apply_to_the_files_their_glob_matches(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _settings(repo, "per-file-ignores:\n  'datasets/legacy_*.jsonl': [missing_field, card]\n")
    code, rules = _rules(capsys)
    assert code == 1
    assert rules == {("fresh.jsonl", "missing_field"), ("fresh.jsonl", "card_missing")}


def test_layout_wide_select_and_ignore_and_the_command_line_over_them(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _settings(repo, "select: [card]\n")
    assert _rules(capsys)[1] == {
        ("legacy_v1.jsonl", "card_missing"),
        ("fresh.jsonl", "card_missing"),
    }
    _settings(repo, "ignore: [card]\n")
    code, rules = _rules(capsys)
    assert code == 1 and {rule for _, rule in rules} == {"missing_field"}
    code, rules = _rules(capsys, "--ignore", "missing_field")  # --ignore adds to ignore
    assert code == 0 and rules == set()
    _settings(repo, "select: [missing_field]\n")
    code, rules = _rules(capsys, "--select", "card")  # --select replaces select
    assert {rule for _, rule in rules} == {"card_missing"}


def test_the_same_verdict_from_the_root_the_layout_and_a_subdirectory(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _settings(repo, "per-file-ignores:\n  'legacy_*.jsonl': [missing_field, card]\n")
    outputs = []
    for where, args in ((repo, ["evals"]), (repo / "evals", []), (repo / "evals" / "datasets", [])):
        monkeypatch.chdir(where)
        code = main(["lint", "--no-git", "--statistics", *args])
        outputs.append((code, capsys.readouterr().out))
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0] == (1, "10  missing_field\n 1  card_missing\n11 problems in 3 datasets\n")


def test_an_unknown_rule_code_in_the_settings_is_a_usage_error_naming_file_and_key(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _settings(repo, "ignore: [card]\nper-file-ignores:\n  'datasets/*.jsonl': [duplicate_promt]\n")
    code = main(["lint", "--no-git"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""  # nothing linted, no verdict printed
    assert captured.err.splitlines() == [
        "evalspec: error: evals/config/lint.yaml:3: per-file-ignores.datasets/*.jsonl: unknown "
        "rule code 'duplicate_promt' (the rules are listed in the README's lint table and "
        "`evalspec validate`'s rule codes)"
    ]
