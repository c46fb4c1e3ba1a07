"""``evalspec lint`` paths, formats and exit codes, through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec.cli.dispatch import main
from evalspec.evals.scaffold import scaffold


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "evals"
    scaffold(root)
    (root / "datasets" / "other.jsonl").write_text('{"task_id": 1}\n')
    monkeypatch.chdir(root)
    return root


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["lint", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_default_is_the_layout_here_and_below(
    layout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _json(capsys)
    assert code == 1
    assert [d["dataset"] for d in out["datasets"]] == ["example", "other"]
    monkeypatch.chdir(layout / "datasets")
    code, again = _json(capsys)
    assert [d["dataset"] for d in again["datasets"]] == ["example", "other"]
    assert again["datasets"][0]["path"] == "example.jsonl"  # paths are relative to the cwd


def test_a_file_argument_lints_only_that_file(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _json(capsys, "datasets/example.jsonl")
    assert code == 0 and out["ok"] is True
    assert [d["dataset"] for d in out["datasets"]] == ["example"]


def test_problems_carry_file_line_rule_field(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _json(capsys, "datasets/other.jsonl")
    assert code == 1
    problems = out["problems"]
    assert isinstance(problems, list)
    keys = {"file", "line", "rule", "field", "message", "task_id", "text"}
    assert all(set(p) == keys for p in problems)
    rules = {(p["file"], p["line"], p["rule"]) for p in problems}
    assert ("datasets/other.jsonl", 1, "card_missing") in rules
    assert ("datasets/other.jsonl", 1, "missing_field") in rules


def test_text_output(layout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "datasets/other.jsonl"]) == 1
    out = capsys.readouterr().out
    assert "datasets/other.jsonl:1: card_missing — no data card" in out
    assert out.rstrip().endswith("in 1 dataset")


def test_missing_yaml_config_is_reported_with_a_line(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (layout / "config" / "labels.yaml").write_text("labels:\n  difficulty: [easy\n")
    code, out = _json(capsys, "datasets/example.jsonl")
    assert code == 1
    [problem] = out["problems"]
    assert problem["rule"] == "config_invalid" and problem["file"] == "config/labels.yaml"


def test_ci_formats_carry_every_lint_problem(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import xml.etree.ElementTree as ET

    import jsonschema

    _, out = _json(capsys, "--no-git")
    expected = [(p["file"], p["line"], p["rule"]) for p in out["problems"]]
    assert expected  # other.jsonl has no card and a bad task

    assert main(["lint", "--no-git", "--format", "github"]) == 1
    github = capsys.readouterr().out.splitlines()
    assert [
        (line.split("file=")[1].split(",")[0], int(line.split("line=")[1].split(",")[0]),
         line.split("title=")[1].split("::")[0])
        for line in github
    ] == expected  # fmt: skip

    assert main(["lint", "--no-git", "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    schema_path = Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json"
    jsonschema.Draft4Validator(json.loads(schema_path.read_text("utf-8"))).validate(log)
    (run,) = log["runs"]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {"card_missing", "missing_field"} <= rule_ids
    assert [r["ruleId"] for r in run["results"]] == [rule for _, _, rule in expected]

    assert main(["lint", "--no-git", "--format", "junit"]) == 1
    suite = ET.fromstring(capsys.readouterr().out)
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert {"datasets/example.jsonl", "datasets/other.jsonl"} <= set(cases)
    assert cases["datasets/example.jsonl"].find("failure") is None
    failure = cases["datasets/other.jsonl"].find("failure")
    assert failure is not None and "card_missing" in (failure.text or "")


def test_a_dataset_a_symlink_sends_out_of_the_repository_is_not_read(
    tmp_path: Path,
) -> None:
    # Each line of datasets/env.jsonl -> /proc/self/environ is an invalid task, and
    # --format json printed each line's text: the CI job's environment, in its log.
    import os
    import subprocess
    import sys

    repo = tmp_path / "repo"
    scaffold(repo)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "datasets" / "env.jsonl").symlink_to("/proc/self/environ")
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "lint", "--no-git", "--format", "json"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "EVALSPEC_AUDIT_SECRET": "hunter2-audit"},
    )
    assert done.returncode == 2, done.stderr
    assert "hunter2-audit" not in done.stdout + done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("evalspec: error: refusing to read datasets/env.jsonl: it is a symlink")
    assert line.endswith(f"/environ, outside {repo}")


@pytest.mark.parametrize("kind", ["dangling", "fifo", "device"])
def test_a_dataset_that_is_no_regular_file_is_reported_not_skipped(
    layout: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    # These were silently left out: "0 problems", exit 0, one dataset never checked.
    import os

    odd = layout / "datasets" / "odd.jsonl"
    if kind == "dangling":
        odd.symlink_to(layout / "datasets" / "deleted.jsonl")
    elif kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to("/dev/zero")
    (layout / "datasets" / "other.jsonl").unlink()
    assert main(["lint", "--no-git"]) == 2
    err = capsys.readouterr().err
    if kind == "dangling":
        assert err == "evalspec: error: cannot read datasets/odd.jsonl: No such file or directory\n"
    elif kind == "fifo":
        assert err == "evalspec: error: datasets/odd.jsonl: not a regular file, not read\n"
    else:  # the device is outside the layout, too
        assert err.startswith("evalspec: error: refusing to read datasets/odd.jsonl: it is a ")
        assert err.endswith(f"symlink to /dev/zero, outside {layout}\n")


def _several_problems(layout: Path) -> None:
    lines = [json.dumps({"task_id": f"t{i}"}) for i in range(3)]
    (layout / "datasets" / "other.jsonl").write_text("\n".join(lines) + "\n")


def test_statistics_counts_problems_per_rule_most_frequent_first(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _several_problems(layout)
    code = main(["lint", "--no-git", "--statistics"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == "15  missing_field"  # five required fields missing on each of 3 lines
    assert out[1:] == [" 1  card_missing", "16 problems in 2 datasets"]
    assert not any("other.jsonl:" in line for line in out)  # counts, not the problems


def test_select_and_ignore_take_codes_and_word_prefixes(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _several_problems(layout)
    code, out = _json(capsys, "--no-git", "--select", "card")
    assert code == 1
    assert {p["rule"] for p in out["problems"]} == {"card_missing"}
    code, out = _json(capsys, "--no-git", "--ignore", "card,missing_field")
    assert code == 0 and out["problems"] == []
    code, out = _json(capsys, "--no-git", "--select", "missing", "--ignore", "missing_field")
    assert code == 0 and out["ok"] is True  # ignore wins over select


def test_an_unknown_rule_code_is_a_usage_error(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["lint", "--select", "crad_missing"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.splitlines() == [
        "evalspec: error: unknown rule code 'crad_missing' (docs/codes.md lists the rules: "
        "the lint rules and `evalspec validate`'s rule codes)"
    ]
