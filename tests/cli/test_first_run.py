"""No half-done commands: a missing dependency stops a command before it writes
anything, messages say what was done, defaults follow the layout, summaries count
every outcome and reports print no ``None``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import evalspec

# Makes `import yaml` fail in the child, as on a machine without the evals extra.
BLOCK_YAML = """\
import sys

class _NoYaml:
    def find_spec(self, name, path=None, target=None):
        if name == "yaml" or name.startswith("yaml."):
            raise ImportError("No module named 'yaml' (blocked by the test)")
        return None

sys.meta_path.insert(0, _NoYaml())
"""


def run(
    *args: str, cwd: Path, without_yaml: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if without_yaml is not None:
        without_yaml.mkdir(exist_ok=True)
        (without_yaml / "sitecustomize.py").write_text(BLOCK_YAML, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(without_yaml), env.get("PYTHONPATH")])
        )
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*"))


def test_init_without_pyyaml_writes_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    r = run("init", "evals", cwd=work, without_yaml=tmp_path / "site")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "evalspec: error: reading YAML needs PyYAML: pip install 'evalspec-contract[evals]' "
        "(nothing was written)"
    )
    assert _files(work) == []
    # The same command with PyYAML finishes, CODEOWNERS included.
    ok = run("init", "evals", cwd=work)
    assert ok.returncode == 0, ok.stderr
    assert (work / "evals" / "CODEOWNERS").is_file()


def test_init_next_step_matches_what_it_did(tmp_path: Path) -> None:
    placeholder = run("init", "evals", cwd=tmp_path)
    assert placeholder.returncode == 0, placeholder.stderr
    last = placeholder.stdout.splitlines()[-1]
    assert "placeholder owner @eval-owner" in last and "`evalspec lint evals`" in last
    owned = tmp_path / "owned"
    owned.mkdir()
    given = run("init", "--owner", "@org/evals", cwd=owned)
    assert given.returncode == 0, given.stderr
    last = given.stdout.splitlines()[-1]
    assert "owner" not in last and last.endswith("run `evalspec lint`")
    lint = run("lint", "--no-git", cwd=owned)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_manifest_default_is_beside_the_layouts_datasets(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert run("init", "evals", "--owner", "@org/evals", cwd=tmp_path).returncode == 0
    big = tmp_path / "evals" / "datasets" / "big.jsonl"
    big.write_bytes(evalspec.load_fixtures().path("tasks.jsonl").read_bytes())
    layout = tmp_path / "evals"
    added = run("manifest", "add", "datasets/big.jsonl", "--uri", "s3://b/big.jsonl", cwd=layout)
    assert added.returncode == 0, added.stderr
    manifest = layout / "datasets" / "manifest.json"
    assert manifest.is_file()
    assert not (tmp_path / "datasets").exists()
    assert [e["path"] for e in json.loads(manifest.read_text())["files"]] == [
        "evals/datasets/big.jsonl"
    ]
    # From the repository root, naming the file inside the layout: the same manifest.
    again = run("manifest", "add", "evals/datasets/big.jsonl", "--uri", "s3://b/2", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("evals/datasets/manifest.json: updated")
    verify = run("manifest", "verify", cwd=layout)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.strip().endswith("1 entry, 1 ok, 0 problems")


def _report(dataset: str, mean: float) -> dict[str, Any]:
    return {
        "schema": "evalspec/score-report",
        "schema_version": 1,
        "dataset": dataset,
        "aggregates": {
            "by_metric": {"exact_match": {"count": 5, "mean": mean, "ci95": None}},
            "by_category": {},
            "by_label": {"difficulty": {"hard": {"count": 2, "mean": mean, "ci95": None}}},
        },
    }


def test_gate_counts_skipped_checks_and_never_says_all_passed(tmp_path: Path) -> None:
    assert run("init", "evals", "--owner", "@org/evals", cwd=tmp_path).returncode == 0
    layout = tmp_path / "evals"
    (layout / "reports" / "example.json").write_text(json.dumps(_report("example", 0.9)))
    r = run("gate", "reports/example.json", "--markdown", "reports/gate.md", cwd=layout)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("skip  example exact_match: max_drop") for line in lines)
    assert lines[-1] == "2 passed, 1 skipped, 0 failed"
    assert "all" not in r.stdout.lower().split()
    assert "**Gate checks: 2 passed, 1 skipped, 0 failed**" in (
        layout / "reports" / "gate.md"
    ).read_text(encoding="utf-8")
    bad = json.dumps(_report("example", 0.1))
    failed = run("gate", "--quiet", "-", cwd=layout, stdin=bad)
    assert failed.returncode == 1
    assert failed.stdout.splitlines() == [
        "FAIL  example exact_match: min: mean 0.1000 < min 0.5000 (n=5)",
        "FAIL  example[difficulty=hard] score: min: mean 0.1000 < min 0.2500 (n=2)",
    ]
    twice = run("gate", "-", "--baseline", "-", cwd=layout, stdin=bad)
    assert twice.returncode == 2 and "can be given only once" in twice.stderr


def test_markdown_report_from_the_python_api_prints_no_none() -> None:
    tasks = [t for t in evalspec.load_fixtures().tasks if t.metric_name != "code_exec"]
    scores = evalspec.score_tasks(tasks, {"arith_001": " 41\n"})
    report = evalspec.build_report(tasks, scores, seed=0, bootstrap=10)
    for fmt in ("markdown", "text"):
        text = evalspec.format_report(report, fmt)
        assert "None" not in text
        assert "tasks sha256 not recorded (no file)" in text
