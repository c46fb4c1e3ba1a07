"""One verdict from any directory: the project and layout governing a path are found
by walking up from the path, as pytest and ruff find their configuration.

The repository is a real git repository made as a team would make it: ``evalspec
init evals`` at its root, then a ``[tool.evalspec]`` project in ``evals/`` that adds
spec version 3 (the worked example's ``translation`` category and ``chrf`` metric)
and locks it, and a data card at ``spec_version: 3``. validate, lint, score, gate
and the pytest plugin run from the repository root, from the layout and from its
``datasets/`` directory, each in a subprocess; with the paths normalised their
output and exit status are identical, and they are the verdicts at version 3 (from
the root, version 1 alone would refuse the ``translation`` task).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import example_plugin
import pytest

DIRECTORIES = (".", "evals", "evals/datasets")
CHANGELOG = (
    "# Changelog\n\n## [Unreleased]\n\n### Added\n- Spec version 3: category `translation`.\n"
)
TRANSLATION = {
    "task_id": "example_tr_001",
    "category": "translation",
    "prompt": "Translate into French: The cat sleeps.\nAnswer:",
    "targets": ["Le chat dort."],
    "metric_name": "chrf",
    "post_process": "collapse_whitespace",
    "metadata": {"difficulty": "easy", "source": "constructed"},
}


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALSPEC_NO_PLUGIN_CACHE": "1"}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        check=False,
        timeout=300,
    )


def git(repo: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *argv],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("one-verdict")
    git(root, "init", "-q", ".")
    made = run(root, "-m", "evalspec", "init", "evals", "--owner", "@team/evals")
    assert made.returncode == 0, made.stderr
    evals = root / "evals"
    (evals / "pyproject.toml").write_text(
        '[project]\nname = "suite"\n\n[tool.evalspec]\nplugins = ["example_plugin"]\n',
        encoding="utf-8",
    )
    (evals / "CHANGELOG.md").write_text(CHANGELOG, encoding="utf-8")
    shutil.copytree(Path(example_plugin.__file__).parent, evals / "example_plugin")
    locked = run(evals, "-m", "evalspec", "spec", "lock")
    assert locked.returncode == 0, locked.stdout + locked.stderr
    datasets = evals / "datasets"
    card = datasets / "example.card.md"
    text = card.read_text(encoding="utf-8")
    assert "spec_version: 1 " in text
    card.write_text(text.replace("spec_version: 1 ", "spec_version: 3 ", 1), encoding="utf-8")
    with (datasets / "example.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(TRANSLATION) + "\n")
    # A second dataset with one task invalid at every version: the verdicts carry problems.
    broken = [json.loads(line) for line in (datasets / "example.jsonl").read_text().splitlines()]
    broken[0]["post_process"] = "strip_whitespacee"
    (datasets / "broken.jsonl").write_text(
        "".join(json.dumps({**t, "task_id": f"broken_{i}"}) + "\n" for i, t in enumerate(broken)),
        encoding="utf-8",
    )
    (datasets / "broken.card.md").write_text(
        card.read_text(encoding="utf-8").replace("dataset: example", "dataset: broken"),
        encoding="utf-8",
    )
    gates = evals / "config" / "gates.yaml"
    # A gate on the project's own metric: known only at the layout's spec version 3.
    scaffolded = gates.read_text(encoding="utf-8")
    line = "    exact_match: {min: 0.5, max_drop: 0.05}\n"
    assert line in scaffolded
    gates.write_text(scaffolded.replace(line, line + "    chrf: {min: 0.9}\n"), encoding="utf-8")
    tasks = [json.loads(line) for line in (datasets / "example.jsonl").read_text().splitlines()]
    (evals / "predictions.jsonl").write_text(
        "".join(
            json.dumps({"task_id": t["task_id"], "output": t["targets"][0]}) + "\n" for t in tasks
        ),
        encoding="utf-8",
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a layout with its own spec version 3")
    return root


NAMES = (
    "datasets/example.jsonl",
    "datasets/broken.jsonl",
    "datasets/example.card.md",
    "datasets/broken.card.md",
    "config/gates.yaml",
    "predictions.jsonl",
    "datasets",
    "reports",
)


def shown(repo: Path, cwd: str, text: str) -> str:
    """``text`` with every spelling of a path below ``evals/`` (relative to ``cwd``,
    with or without ``./``, or absolute) written as ``<evals>/...``."""
    here = repo / cwd
    forms: dict[str, str] = {}
    for name in NAMES:
        target = repo / "evals" / name
        for form in (os.path.relpath(target, here), str(target)):
            if "/" in form or "." in form:  # a bare "datasets" is also a word of the prose
                forms[form] = forms[f"./{form}"] = name
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    # Not in the middle of a longer path: no word, dot or slash right before.
    pattern = re.compile(rf"(?<![\w./])({alternatives})")
    return pattern.sub(lambda m: f"<evals>/{forms[m.group(1)]}", text)


def path(repo: Path, cwd: str, name: str) -> str:
    return os.path.relpath(repo / "evals" / name, repo / cwd)


def verdicts(repo: Path, argv: list[str]) -> list[tuple[int, str, str]]:
    """``(exit status, stdout, stderr)`` of ``argv`` (``@x`` = the path of evals/x from
    there) from each directory, paths normalised."""
    out = []
    for cwd in DIRECTORIES:
        words = [path(repo, cwd, w[1:]) if w.startswith("@") else w for w in argv]
        done = run(repo / cwd, *words)
        out.append((done.returncode, shown(repo, cwd, done.stdout), shown(repo, cwd, done.stderr)))
    return out


def assert_identical(found: list[tuple[int, str, str]]) -> tuple[int, str, str]:
    for cwd, got in zip(DIRECTORIES[1:], found[1:], strict=True):
        assert got == found[0], f"from {cwd}:\n{got}\nfrom the root:\n{found[0]}"
    return found[0]


def test_validate_gives_the_layouts_verdict_from_any_directory(repo: Path) -> None:
    code, out, err = assert_identical(verdicts(repo, ["-m", "evalspec", "validate", "@datasets"]))
    assert code == 1, out + err
    assert "<evals>/datasets/example.jsonl: 5 tasks, 5 valid, 0 invalid" in out
    assert "<evals>/datasets/broken.jsonl: 5 tasks, 4 valid, 1 invalid" in out
    assert "translation" not in out  # version 3 is in force: the category is known


def test_lint_gives_the_layouts_verdict_from_any_directory(repo: Path) -> None:
    code, out, err = assert_identical(verdicts(repo, ["-m", "evalspec", "lint", "@."]))
    assert code == 1, out + err
    assert "unknown spec version" not in out
    assert "<evals>/datasets/example.jsonl: 5 tasks, version 1" in out and "— ok" in out
    assert "<evals>/datasets/broken.jsonl:1: unknown_post_process" in out


def test_lint_without_a_path_finds_the_layout_below_the_root(repo: Path) -> None:
    done = run(repo, "-m", "evalspec", "lint")
    inside = run(repo / "evals", "-m", "evalspec", "lint")
    assert done.returncode == inside.returncode == 1, done.stdout + done.stderr
    assert shown(repo, ".", done.stdout) == shown(repo, "evals", inside.stdout)


def test_score_and_gate_give_the_same_report_and_verdict_from_any_directory(
    repo: Path,
) -> None:
    found = verdicts(
        repo,
        [
            "-m",
            "evalspec",
            "score",
            "@datasets/example.jsonl",
            "@predictions.jsonl",
            "--format",
            "json",
        ],
    )
    reports = []
    for code, out, err in found:
        assert code == 0, err
        reports.append(json.loads(out))
    assert all(r == reports[0] for r in reports)
    assert reports[0]["provenance"]["spec_version"] == 3
    (repo / "evals" / "reports").mkdir(exist_ok=True)
    (repo / "evals" / "reports" / "example.json").write_text(found[0][1], encoding="utf-8")
    code, out, err = assert_identical(
        verdicts(repo, ["-m", "evalspec", "gate", "@reports/example.json"])
    )
    assert code == 0, out + err
    assert "pass  example chrf: min: mean 1.0000 >= min 0.9000 (n=1" in out


def test_the_pytest_plugin_gives_the_layouts_verdict_from_any_directory(repo: Path) -> None:
    found = verdicts(
        repo,
        [
            "-m",
            "pytest",
            "-q",
            "-rN",
            "-p",
            "no:cacheprovider",
            "--evalspec",
            "@datasets/example.jsonl",
            "@datasets/broken.jsonl",
        ],
    )
    lines = []
    for code, out, _ in found:
        assert code == 1, out
        # Named from pytest's rootdir, which the directory decides: compared from the rule on.
        problems = sorted(
            line[line.index(":1: unknown_") :]
            for line in out.splitlines()
            if ":1: unknown_" in line
        )
        lines.append((problems, out.strip().splitlines()[-1].split(" in ")[0]))
    assert all(got == lines[0] for got in lines), lines
    problems, tally = lines[0]
    assert tally == "1 failed, 1 passed"
    assert len(problems) == 1 and "strip_whitespacee" in problems[0]


def test_each_file_is_validated_by_its_own_project(repo: Path) -> None:
    # The same task outside the layout's project: no project there, so version 1 alone.
    outside = repo / "loose.jsonl"
    outside.write_text(json.dumps({**TRANSLATION, "task_id": "loose"}) + "\n", encoding="utf-8")
    done = run(repo, "-m", "evalspec", "validate", "evals/datasets/example.jsonl", "loose.jsonl")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "evals/datasets/example.jsonl: 5 tasks, 5 valid, 0 invalid" in done.stdout
    assert 'loose.jsonl:1: unknown_category category — category "translation"' in done.stdout
    assert "loose.jsonl: 1 task, 0 valid, 1 invalid" in done.stdout


def test_render_checks_each_file_against_its_own_project(repo: Path) -> None:
    outside = repo / "loose.jsonl"
    outside.write_text(json.dumps({**TRANSLATION, "task_id": "loose"}) + "\n", encoding="utf-8")
    inside = run(
        repo, "-m", "evalspec", "render", "--format", "json", "evals/datasets/example.jsonl"
    )
    assert inside.returncode == 0, inside.stderr
    assert len(json.loads(inside.stdout)["files"][0]["tasks"]) == 5
    both = run(repo, "-m", "evalspec", "render", "evals/datasets/example.jsonl", "loose.jsonl")
    assert both.returncode == 1 and both.stdout == ""
    assert both.stderr.splitlines()[0].startswith("loose.jsonl:1: unknown_category category")
    assert "refusing to render: 1 of 6 tasks is invalid" in both.stderr


def test_lint_names_the_cards_spec_version_as_the_fix_not_a_flag_it_lacks(
    repo: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "evals"
    shutil.copytree(repo / "evals", copy)
    card = copy / "datasets" / "example.card.md"
    card.write_text(card.read_text().replace("spec_version: 3 ", "spec_version: 1 "))
    done = run(copy, "-m", "evalspec", "lint", "--no-git")
    assert done.returncode == 1, done.stdout + done.stderr
    later = [line for line in done.stdout.splitlines() if "added in spec version 3" in line]
    assert len(later) == 3  # the category, the metric and the rule of the translation task
    assert all(line.endswith("(set spec_version: 3 in the data card)") for line in later)
    assert "--spec-version" not in done.stdout + done.stderr
    validated = run(copy, "-m", "evalspec", "validate", "--spec-version", "1", "datasets")
    assert "(validate with --spec-version 3)" in validated.stdout  # validate's own fix
