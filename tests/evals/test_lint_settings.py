"""The layout's lint settings, config/lint.yaml (evalspec.evals.lint.settings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalspec.evals.layout import Layout
from evalspec.evals.lint.report import RuleSelection
from evalspec.evals.lint.settings import (
    LintSettings,
    SettingsError,
    glob_matches,
    read_settings,
)
from evalspec.io.safeload import MAX_YAML_BYTES


def _layout(tmp_path: Path, text: str) -> Layout:
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "lint.yaml").write_text(text)
    return Layout(tmp_path)


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(SettingsError) as caught:
        read_settings(_layout(tmp_path, text))
    return [p.split(":", 1)[1] for p in caught.value.problems]  # without the file name


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("datasets/legacy_*.jsonl", "datasets/legacy_v1.jsonl", True),
        ("datasets/legacy_*.jsonl", "datasets/sub/legacy_v1.jsonl", False),  # * stays in a dir
        ("datasets/**/legacy_*.jsonl", "datasets/sub/deeper/legacy_v1.jsonl", True),
        ("datasets/**/legacy_*.jsonl", "datasets/legacy_v1.jsonl", True),  # ** may be none
        ("*.card.md", "datasets/sub/x.card.md", True),  # no / : the file name
        ("*.card.md", "datasets/x.jsonl", False),
        ("datasets/x?.jsonl", "datasets/x1.jsonl", True),
        ("datasets/X1.jsonl", "datasets/x1.jsonl", False),  # case-sensitive, as git is
        ("**", "config/labels.yaml", True),
    ],
)
def test_glob_matches(pattern: str, path: str, matches: bool) -> None:
    assert glob_matches(pattern, path) is matches


def test_a_pathological_glob_does_not_backtrack_forever() -> None:
    # One regular expression for the whole pattern would take ages here.
    assert not glob_matches(
        "/".join(["**"] * 40) + "/" + "*a" * 40 + "b", "/".join(["a" * 60] * 40)
    )


def test_no_file_is_every_rule_everywhere(tmp_path: Path) -> None:
    assert read_settings(Layout(tmp_path)) == LintSettings()


def test_select_ignore_and_per_file_ignores_are_read_in_order(tmp_path: Path) -> None:
    settings = read_settings(
        _layout(
            tmp_path,
            "select: [card, missing_label]\nignore: card_field\nper-file-ignores:\n"
            "  'datasets/a*': [missing_label]\n  '*.card.md': [card]\n",
        )
    )
    assert settings.select == ("card", "missing_label") and settings.ignore == ("card_field",)
    assert settings.ignored_in("datasets/a1.jsonl") == ("missing_label",)
    assert settings.ignored_in("datasets/a1.card.md") == ("missing_label", "card")
    assert settings.ignored_in("datasets/b.jsonl") == ()


def test_the_command_line_select_replaces_and_its_ignore_adds(tmp_path: Path) -> None:
    settings = LintSettings(select=("card",), ignore=("card_field",))
    assert settings.selection(RuleSelection()) == RuleSelection(("card",), ("card_field",))
    merged = settings.selection(RuleSelection(("missing",), ("missing_label",)))
    assert merged == RuleSelection(("missing",), ("card_field", "missing_label"))


def test_unknown_keys_and_codes_are_errors_naming_line_and_key(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        "select: [crad]\nselct: [card]\nper-file-ignores:\n  'datasets/*.jsonl': [dup_prompt]\n",
    )
    assert problems == [
        "1: select: unknown rule code 'crad' (the rules are listed in the README's lint table "
        "and `evalspec validate`'s rule codes)",
        "2: selct: unknown key: the lint settings have select, ignore, per-file-ignores",
        "4: per-file-ignores.datasets/*.jsonl: unknown rule code 'dup_prompt' (the rules are "
        "listed in the README's lint table and `evalspec validate`'s rule codes)",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ignore: {a: 1}\n", "1: ignore: must be a list of rule codes"),
        ("per-file-ignores: [card]\n", "1: per-file-ignores: must map a glob"),
        ("per-file-ignores:\n  /etc/x: [card]\n", "2: per-file-ignores./etc/x: a pattern is"),
        ("ignore: [card\n", "2: the lint settings file is not valid YAML"),
        ("- card\n", "1: the lint settings file must be a mapping"),
    ],
)
def test_malformed_settings_are_errors(tmp_path: Path, text: str, problem: str) -> None:
    [found] = _problems(tmp_path, text)
    assert found.startswith(problem), found


def test_a_hostile_settings_file_runs_no_code_and_is_bounded(tmp_path: Path) -> None:
    witness = tmp_path / "ran"
    [found] = _problems(tmp_path, f"ignore: !!python/object/apply:os.system ['touch {witness}']\n")
    assert "could not determine a constructor" in found and not witness.exists()
    with pytest.raises(SettingsError, match="cannot read"):
        read_settings(_layout(tmp_path, "ignore: [card]\n" + "#" * MAX_YAML_BYTES))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(12)
    )
    [found] = _problems(tmp_path, bomb + "ignore: *m\n")
    assert "nodes once aliases are expanded" in found


def test_a_settings_path_that_is_no_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config" / "lint.yaml").mkdir(parents=True)
    with pytest.raises(SettingsError, match="not a regular file"):
        read_settings(Layout(tmp_path))


def test_a_settings_symlink_out_of_the_repository_is_refused_unread(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # the repository's root
    secret = tmp_path / "secret.yaml"
    secret.write_text("token_abc123: [card]\n")
    (repo / "config").mkdir()
    (repo / "config" / "lint.yaml").symlink_to(secret)
    with pytest.raises(SettingsError) as caught:
        read_settings(Layout(repo))
    [problem] = caught.value.problems
    assert "refusing to read" in problem and "outside the repository" in problem
    assert "token_abc123" not in problem
    (repo / "config" / "lint.yaml").unlink()
    (repo / "config" / "lint.yaml").symlink_to(tmp_path / "missing")
    with pytest.raises(SettingsError, match="cannot read"):
        read_settings(Layout(repo))  # a dangling symlink is an error, not "no settings"


def test_the_documented_settings_are_valid_settings(tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "lint.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, re.DOTALL)
    assert blocks
    for block in blocks:
        settings = read_settings(_layout(tmp_path, block))
        assert settings.select or settings.ignore or settings.per_file_ignores
