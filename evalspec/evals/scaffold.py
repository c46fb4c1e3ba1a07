"""``evalspec init``: the evals-as-code layout, with an example dataset that lints clean."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import attrs

from evalspec.evals import codeowners, gitrepo
from evalspec.evals.card import card_path, parse_card
from evalspec.evals.layout import DIRECTORIES
from evalspec.io.atomicfile import read_for_update, repository_lock, resolve_for_write, write_atomic
from evalspec.io.repository import OutsideRootError
from evalspec.io.safeload import MAX_TEXT_BYTES, DocumentError, read_in_repository

EXAMPLE = "example"
DEFAULT_OWNER = "@eval-owner"

EXAMPLE_TASKS = "example_tasks.jsonl"
"""The example dataset ``init`` writes, kept as data beside this module (package data)."""

_CARD = """\
---
dataset: {name}
version: 1            # the dataset version: bump it on every change to {name}.jsonl
spec_version: 1       # the task-spec version the tasks are validated at
seed: 20240601        # the random seed the tasks were sampled with
sources: [shadow, dispute, hard, constructed]
owner: "{owner}"
---

# {name}

An example regression set scaffolded by `evalspec init`. Replace it with your own.

## Sources and mix

- shadow: sampled from production traffic with the seed above.
- dispute: cases users disputed.
- hard: cases the model failed before.
- constructed: written by the eval team.

## Relabel log

Relabel invalid tasks (change targets or labels, bump `version`); do not delete them.
"""

_LABELS = """\
# Legal values of the stratification labels kept in task metadata.
# `evalspec lint` rejects a task whose label is missing or not listed here.
labels:
  difficulty: [easy, hard]
  source: [shadow, dispute, hard, constructed]
required: [difficulty, source]
"""

_GATES = """\
# Red lines: per dataset and metric, or per slice (NAME[label=value] or
# NAME[category=X]) on `score`, the slice's mean task score. `evalspec gate`
# fails when the mean is below `min`, or has dropped more than `max_drop` below
# the baseline report's.
# A threshold's history is this file's git history: change it in a pull request.
gates:
  {name}:
    exact_match: {{min: 0.5, max_drop: 0.05}}
  {name}[difficulty=hard]:
    score: {{min: 0.25}}
"""

_RUBRIC = """\
# Judge rubric template

Fill one copy per judged dataset (e.g. `judge_customer_service.md`).

1. Role: who the judge is and what it evaluates.
2. Criteria: each criterion with a one-line definition.
3. Scale: the score levels and what each level means, with a boundary example.
4. Examples: two or three graded answers, including a borderline one.
5. Output format: the exact JSON the judge returns, e.g. `{"score": 3, "reason": "..."}`.
6. Refusals and ties: what to do with an empty, off-topic or refused answer.
"""

_SCRIPTS = """\
# scripts/

Scoring and statistics entry points, run by CI and by people alike:

    evalspec lint                                   # dataset quality gate
    evalspec diff --rev origin/main..HEAD datasets/NAME.jsonl   # change report for the PR
    evalspec gate reports/NAME.json --baseline baseline/NAME.json

Scripts here read `datasets/` and `config/` and write only to `reports/`.
"""

_GITIGNORE_ENTRY = "reports/"


@attrs.frozen
class ScaffoldResult:
    """Paths created, skipped (already there) and appended to, relative to the target."""

    created: tuple[str, ...]
    skipped: tuple[str, ...]
    appended: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _dataset_text() -> str:
    return resources.files("evalspec.evals").joinpath(EXAMPLE_TASKS).read_text(encoding="utf-8")


def _card_owners(datasets: Path) -> list[str]:
    owners: list[str] = []
    if not datasets.is_dir():
        return owners
    for data in sorted(datasets.rglob("*.jsonl")):
        cpath = card_path(data)
        if not cpath.is_file():
            continue
        try:
            text = read_in_repository(cpath, MAX_TEXT_BYTES).decode("utf-8", errors="replace")
        except (OSError, DocumentError, OutsideRootError):
            continue  # lint reports the unreadable card
        card, _ = parse_card(text)
        if card is not None:
            owners.extend(o for o in card.owners if o not in owners)
    return owners


def codeowners_lines(prefix: str, owners: Sequence[str]) -> str:
    """CODEOWNERS entries giving ``datasets/`` and ``config/`` under ``prefix`` to ``owners``."""
    who = " ".join(owners)
    return (
        "# Eval owners approve every change to the datasets and the red lines.\n"
        f"/{prefix}datasets/ {who}\n"
        f"/{prefix}config/ {who}\n"
    )


def scaffold(target: Path, owner: str = DEFAULT_OWNER) -> ScaffoldResult:
    """Create the layout under ``target``; never overwrite an existing file.

    Every file is written atomically, under the repository's lock, and
    never through a symlink that leads out of the repository (or of
    ``target`` outside any repository).

    :raises UnsafePathError: a file or directory of the layout is such a symlink.
    """
    target.mkdir(parents=True, exist_ok=True)
    root = gitrepo.toplevel(target) or target
    with repository_lock(root):
        return _scaffold(target, root, owner)


def _scaffold(target: Path, root: Path, owner: str) -> ScaffoldResult:
    created: list[str] = []
    skipped: list[str] = []
    appended: list[str] = []
    notes: list[str] = []
    for d in DIRECTORIES:
        path = target / d
        resolve_for_write(path, root)
        if not path.is_dir():
            path.mkdir()
            created.append(d + "/")
    files = {
        f"datasets/{EXAMPLE}.jsonl": _dataset_text(),
        f"datasets/{EXAMPLE}.card.md": _CARD.format(name=EXAMPLE, owner=owner),
        "config/labels.yaml": _LABELS,
        "config/gates.yaml": _GATES.format(name=EXAMPLE),
        "rubrics/judge_template.md": _RUBRIC,
        "scripts/README.md": _SCRIPTS,
    }
    for rel, text in files.items():
        if write_atomic(target / rel, text, root=root, create_only=True):
            created.append(rel)
        else:
            skipped.append(rel)
    gitignore = target / ".gitignore"
    raw = read_for_update(gitignore, root)
    if raw is None:
        write_atomic(gitignore, _GITIGNORE_ENTRY + "\n", root=root)
        created.append(".gitignore")
    else:
        existing = raw.decode("utf-8", errors="surrogateescape").splitlines()
        if not {_GITIGNORE_ENTRY, "/" + _GITIGNORE_ENTRY, "reports"} & {
            line.strip() for line in existing
        }:
            sep = b"" if not raw or raw.endswith(b"\n") else b"\n"
            write_atomic(gitignore, raw + sep + _GITIGNORE_ENTRY.encode() + b"\n", root=root)
            appended.append(".gitignore")
        else:
            skipped.append(".gitignore")
    prefix = target.resolve().relative_to(root.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    owners = _card_owners(target / "datasets") or [owner]
    lines = codeowners_lines(prefix, owners)
    found = codeowners.find_codeowners(root)
    rel_root = _relative(root, target)
    if found is None:
        write_atomic(root / "CODEOWNERS", lines, root=root, create_only=True)
        created.append(rel_root + "CODEOWNERS")
    else:
        skipped.append(_relative(found.parent, target) + found.name)
        notes.append(f"{found} exists; make sure it holds these entries:\n{lines.rstrip()}")
    return ScaffoldResult(tuple(created), tuple(skipped), tuple(appended), tuple(notes))


def _relative(path: Path, start: Path) -> str:
    import os

    rel = Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()
    return "" if rel == "." else rel + "/"
