"""CI-native output of ``evalspec validate``: GitHub annotations, SARIF 2.1.0, JUnit XML."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from evalspec import ErrorRecord
from evalspec.cli.formats import FileReport, github_annotations, junit_xml, sarif_log
from evalspec.rules import RULES
from evalspec.validation.fixtures import fixture_dir

SARIF_SCHEMA = Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json"
ANNOTATION = re.compile(
    r"^::error file=(?P<file>[^,:]*),line=(?P<line>\d+),title=(?P<title>[^,:]*)::(?P<msg>.*)$"
)


def _unescape(text: str) -> str:
    for code, ch in (("%0A", "\n"), ("%0D", "\r"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, ch)
    return text


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Good and bad fixture files, the bad one under a name that needs escaping."""
    src = fixture_dir()
    (tmp_path / "good.jsonl").write_bytes(src.joinpath("tasks.jsonl").read_bytes())
    bad = src.joinpath("tasks_bad.jsonl").read_bytes()
    (tmp_path / "bad, 100%: tasks.jsonl").write_bytes(bad)
    return tmp_path


BAD = "bad, 100%: tasks.jsonl"


def _json_errors(project: Path, *paths: str) -> list[tuple[str, int, str]]:
    out = _run(*paths, "--format", "json", cwd=project)
    files = json.loads(out.stdout)["files"]
    return [(f["path"], e["line"], e["rule"]) for f in files for e in f.get("errors", [])]


def test_github_annotations_carry_every_error_on_its_file_and_line(project: Path) -> None:
    out = _run("good.jsonl", BAD, "--format", "github", cwd=project)
    assert out.returncode == 1
    found = []
    for line in out.stdout.splitlines():
        m = ANNOTATION.match(line)
        assert m, line
        found.append((_unescape(m["file"]), int(m["line"]), _unescape(m["title"])))
    assert found == _json_errors(project, "good.jsonl", BAD)
    assert {rule for _, _, rule in found} == set(RULES)


def test_github_escaping_follows_the_runner_rules() -> None:
    e = ErrorRecord(3, "wrong_type", "prompt", "50% off\r\nnext: a, b")
    [line] = github_annotations([FileReport("dir/a,b:c%.jsonl", (e,))])
    assert line == (
        "::error file=dir/a%2Cb%3Ac%25.jsonl,line=3,title=wrong_type::"
        "prompt: 50%25 off%0D%0Anext: a, b"
    )


def test_sarif_output_validates_against_the_sarif_2_1_0_schema(project: Path) -> None:
    out = _run("good.jsonl", BAD, "--format", "sarif", cwd=project)
    assert out.returncode == 1
    log = json.loads(out.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    [run] = log["runs"]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(RULES)
    found = [
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["ruleId"],
        )
        for r in run["results"]
    ]
    expected = [
        ("bad%2C%20100%25%3A%20tasks.jsonl", line, rule)
        for _, line, rule in _json_errors(project, BAD)
    ]
    assert found == expected
    for r in run["results"]:
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]


def test_junit_has_one_testcase_per_file_listing_every_error(project: Path) -> None:
    out = _run("good.jsonl", BAD, "--format", "junit", cwd=project)
    assert out.returncode == 1
    root = ET.fromstring(out.stdout.encode("utf-8"))
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["good.jsonl", BAD]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None and failure.text is not None
    lines = failure.text.splitlines()
    expected = _json_errors(project, BAD)
    assert len(lines) == len(expected)
    for text, (path, line, rule) in zip(lines, expected, strict=True):
        assert text.startswith(f"{path}:{line}: {rule} ")
    assert root.get("tests") == "2" and root.get("failures") == "1"


@pytest.mark.parametrize("fmt", ["github", "sarif", "junit"])
def test_exit_codes_are_unchanged_by_the_format(project: Path, fmt: str) -> None:
    assert _run("good.jsonl", "--format", fmt, cwd=project).returncode == 0
    assert _run(BAD, "--format", fmt, cwd=project).returncode == 1
    missing = _run("good.jsonl", "missing.jsonl", "--format", fmt, cwd=project)
    assert missing.returncode == 2
    assert "missing.jsonl" in missing.stdout  # the unreadable file is reported in-format too


def test_formats_survive_text_no_encoder_takes() -> None:
    nasty = "\ud800 \x00 \x1b ]]> <&>"
    e = ErrorRecord(1, "unknown_field", nasty, nasty, nasty, nasty)
    reports = [FileReport("a\udcff.jsonl", (e,)), FileReport("b.jsonl", (), "No such file")]
    root = ET.fromstring(junit_xml(reports).encode("utf-8"))
    assert len(root.findall("./testsuite/testcase")) == 2
    json.dumps(sarif_log(reports), ensure_ascii=False).encode("utf-8")
    "\n".join(github_annotations(reports)).encode("utf-8")


def test_sarif_uses_file_uris_for_absolute_paths(tmp_path: Path) -> None:
    target = tmp_path / "x y.jsonl"
    shutil.copy(Path(str(fixture_dir().joinpath("tasks_bad.jsonl"))), target)
    out = _run(str(target), "--format", "sarif", cwd=tmp_path)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(out.stdout)["runs"][0]["results"]
    }
    assert uris == {target.as_uri()}
