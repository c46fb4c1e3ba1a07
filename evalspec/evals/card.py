"""Data cards: ``NAME.card.md`` beside ``NAME.jsonl``.

A card opens with a front-matter block, a YAML mapping between two ``---``
lines, and continues with free prose::

    ---
    dataset: example
    version: 3            # the dataset version: bump it on every content change
    spec_version: 1       # the task-spec version the tasks are validated at
    seed: 20240601        # the random seed the tasks were sampled with
    sources: [shadow, constructed]
    owner: "@eval-owner"  # a GitHub user, @org/team, or e-mail; or a list of them
    ---

Other keys are allowed (mix, relabel history, ...). Every problem is a
:class:`CardProblem` with the card's own 1-based line number.

A card may suppress lint findings on single tasks, each with its reason (tasks
are frozen-spec records, so the suppression cannot live on the task's line)::

    suppress:
      - id: arith_017
        rules: [duplicate_prompt]
        reason: "asked twice on purpose: the paraphrase check reads both"

Lint reports a suppression that matches no problem (``unused_suppression``), so
one left behind by a fixed task cannot hide a later problem.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from evalspec.evals.yamlfile import YamlSyntaxError, load_mapping

CARD_SUFFIX = ".card.md"
FENCE = "---"
OWNER_PATTERN = re.compile(
    r"^(@[A-Za-z0-9](?:[A-Za-z0-9-]*)(?:/[A-Za-z0-9._-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+)$"
)


@attrs.frozen
class CardProblem:
    """One thing wrong with a card: ``rule`` is a lint rule code."""

    line: int
    rule: str
    field: str | None
    message: str


@attrs.frozen
class Suppression:
    """One ``suppress:`` entry: lint does not report ``rules`` for the task ``task_id``."""

    task_id: str
    rules: tuple[str, ...]
    reason: str
    line: int
    """The card line of the entry."""
    field: str
    """The entry as a field path, ``suppress[2]``, for messages."""


SUPPRESSION_KEYS = ("id", "rules", "reason")


@attrs.frozen
class DataCard:
    """The declared facts of a data card's front matter."""

    version: str
    spec_version: int
    seed: int
    sources: tuple[str, ...]
    owners: tuple[str, ...]
    lines: dict[str, int] = attrs.field(eq=False, factory=dict)
    """Card line of each front-matter key, for error records."""
    extra: dict[str, Any] = attrs.field(eq=False, factory=dict)
    suppressions: tuple[Suppression, ...] = ()

    def line_of(self, key: str) -> int:
        return self.lines.get(key, 1)


def card_path(dataset: Path) -> Path:
    """``datasets/NAME.jsonl`` -> ``datasets/NAME.card.md``."""
    return dataset.with_name(dataset.name.removesuffix(".jsonl") + CARD_SUFFIX)


def _front_matter(text: str) -> tuple[str, list[CardProblem]]:
    lines = text.splitlines()
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    if not lines or lines[0].strip() != FENCE:
        return "", [
            CardProblem(
                1,
                "card_syntax",
                None,
                "a data card starts with a front-matter block: a '---' line, the "
                "declarations (version, spec_version, seed, sources, owner), a '---' line",
            )
        ]
    for i, line in enumerate(lines[1:], start=2):
        if line.strip() == FENCE:
            return "\n".join(lines[1 : i - 1]), []
    return "", [
        CardProblem(
            1,
            "card_syntax",
            None,
            "the front-matter block opened on line 1 is never closed with a '---' line",
        )
    ]


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _suppressions(raw: Any, line_at: Any, problems: list[CardProblem]) -> tuple[Suppression, ...]:
    """The well-formed entries of ``suppress:``; a problem for each malformed one."""

    def problem(field: str, line: int, message: str) -> None:
        problems.append(CardProblem(line, "card_field", field, message))

    if not isinstance(raw, list):
        problem(
            "suppress",
            line_at("suppress"),
            "suppress must be a list of entries: - {id: TASK_ID, rules: [RULE], reason: WHY}",
        )
        return ()
    out: list[Suppression] = []
    for i, entry in enumerate(raw):
        field, line = f"suppress[{i}]", line_at("suppress", f"[{i}]")
        if not isinstance(entry, dict):
            problem(field, line, "an entry is a mapping: {id: TASK_ID, rules: [RULE], reason: WHY}")
            continue
        bad = len(problems)
        for key in entry:
            if key not in SUPPRESSION_KEYS:
                problem(
                    f"{field}.{key}", line, f"unknown key {key!r}: an entry has id, rules, reason"
                )
        task_id, rules, reason = entry.get("id"), _str_list(entry.get("rules")), entry.get("reason")
        if not isinstance(task_id, str) or not task_id:
            problem(f"{field}.id", line, "id must be the task_id of the task to suppress on")
        if not rules or not all(r.strip() for r in rules):
            problem(f"{field}.rules", line, "rules must be a non-empty list of lint rule codes")
        if not isinstance(reason, str) or not reason.strip():
            quote = "" if reason is None or isinstance(reason, str) else "; quote it in YAML"
            problem(
                f"{field}.reason",
                line,
                f"a suppression needs a reason: why this task may break the rule{quote}",
            )
        if len(problems) == bad:
            assert isinstance(task_id, str) and rules and isinstance(reason, str)
            out.append(Suppression(task_id, tuple(rules), reason.strip(), line, field))
    return tuple(out)


def parse_card(text: str) -> tuple[DataCard | None, list[CardProblem]]:
    """Parse a card's text; ``(card, [])``, ``(None, problems)`` listing every problem,
    or ``(card, problems)`` when only ``suppress:`` entries are malformed (those are
    left out; the card's declarations still hold)."""
    block, problems = _front_matter(text)
    if problems:
        return None, problems
    try:
        mapping = load_mapping(block, what="the front matter")
    except YamlSyntaxError as exc:
        return None, [CardProblem(exc.line + 1, "card_syntax", None, exc.message)]
    data = mapping.data
    lines = {k: v + 1 for k, v in mapping.lines.items()}  # +1: the opening fence

    def line(key: str) -> int:
        return lines.get(key, 1)

    out: list[CardProblem] = []
    version = data.get("version")
    if version is None or (isinstance(version, str) and not version.strip()):
        out.append(
            CardProblem(
                line("version"),
                "version_missing",
                "version",
                "the card declares no dataset version (add 'version: 1' and "
                "bump it on every content change)",
            )
        )
    elif isinstance(version, bool) or not isinstance(version, (int, str)):
        hint = f"; quote it: version: '{version}'" if isinstance(version, float) else ""
        out.append(
            CardProblem(
                line("version"),
                "card_field",
                "version",
                f"version must be an integer or a string, found {type(version).__name__}{hint}",
            )
        )
    seed = data.get("seed")
    if seed is None:
        out.append(
            CardProblem(
                line("seed"),
                "seed_missing",
                "seed",
                "the card declares no random seed (add 'seed: N', the seed the "
                "tasks were sampled with, so the sample can be reproduced)",
            )
        )
    elif isinstance(seed, bool) or not isinstance(seed, int):
        out.append(
            CardProblem(
                line("seed"),
                "card_field",
                "seed",
                f"seed must be an integer, found {type(seed).__name__}",
            )
        )
    spec_version = data.get("spec_version")
    if spec_version is None:
        out.append(
            CardProblem(
                line("spec_version"),
                "card_field",
                "spec_version",
                "the card declares no spec_version (the task-spec version the "
                "tasks are validated at, e.g. 'spec_version: 1')",
            )
        )
    elif isinstance(spec_version, bool) or not isinstance(spec_version, int) or spec_version < 1:
        out.append(
            CardProblem(
                line("spec_version"),
                "card_field",
                "spec_version",
                f"spec_version must be a positive integer, found {spec_version!r}",
            )
        )
    sources = _str_list(data.get("sources"))
    if "sources" not in data:
        out.append(
            CardProblem(
                1,
                "card_field",
                "sources",
                "the card declares no sources (where the tasks came from, e.g. "
                "'sources: [shadow, dispute]')",
            )
        )
    elif not sources or not all(s.strip() for s in sources):
        out.append(
            CardProblem(
                line("sources"),
                "card_field",
                "sources",
                "sources must be a non-empty list of non-empty strings",
            )
        )
    owners = _str_list(data.get("owner"))
    if "owner" not in data:
        out.append(
            CardProblem(
                1,
                "card_field",
                "owner",
                "the card declares no owner (a GitHub @user, @org/team or "
                "e-mail who approves changes)",
            )
        )
    elif not owners:
        out.append(
            CardProblem(
                line("owner"),
                "card_field",
                "owner",
                "owner must be a string or a non-empty list of strings",
            )
        )
    else:
        for o in owners:
            if not OWNER_PATTERN.match(o):
                out.append(
                    CardProblem(
                        line("owner"),
                        "card_field",
                        "owner",
                        f"owner {o!r} is not a GitHub @user, @org/team or e-mail "
                        '(quote it in YAML: owner: "@team")',
                    )
                )
    if out:
        return None, out
    assert isinstance(version, (int, str)) and isinstance(seed, int)
    assert isinstance(spec_version, int) and sources and owners
    known = {"version", "spec_version", "seed", "sources", "owner", "suppress"}

    def line_at(*path: str) -> int:
        return mapping.line_at(*path) + 1  # +1: the opening fence

    suppressions = _suppressions(data["suppress"], line_at, out) if "suppress" in data else ()
    return DataCard(
        version=str(version).strip(),
        spec_version=spec_version,
        seed=seed,
        sources=tuple(sources),
        owners=tuple(owners),
        lines=lines,
        extra={k: v for k, v in data.items() if k not in known},
        suppressions=suppressions,
    ), out
