"""The labels file: legal values of the stratification labels kept in task metadata.

``config/labels.yaml``::

    labels:                  # metadata key -> its legal values
      difficulty: [easy, hard]
      source: [shadow, dispute, hard, constructed]
    required: [difficulty, source]   # keys every task must carry (default: all labels)
"""

from __future__ import annotations

from pathlib import Path

import attrs

from evalspec.evals.card import CardProblem
from evalspec.evals.yamlfile import YamlSyntaxError, load_mapping

LABELS_FILE = Path("config") / "labels.yaml"


@attrs.frozen
class Labels:
    """Legal values per label, and the labels every task must carry."""

    legal: dict[str, tuple[str, ...]]
    required: tuple[str, ...]


def parse_labels(text: str) -> tuple[Labels | None, list[CardProblem]]:
    """Parse a labels file; problems carry the rule ``config_invalid`` and a line."""
    try:
        mapping = load_mapping(text, what="the labels file")
    except YamlSyntaxError as exc:
        return None, [CardProblem(exc.line, "config_invalid", None, exc.message)]
    problems: list[CardProblem] = []
    unknown = sorted(set(mapping.data) - {"labels", "required"})
    for key in unknown:
        problems.append(
            CardProblem(
                mapping.line_of(key),
                "config_invalid",
                key,
                f"unknown key {key!r}: the labels file has 'labels' and 'required'",
            )
        )
    raw = mapping.data.get("labels")
    legal: dict[str, tuple[str, ...]] = {}
    if not isinstance(raw, dict) or not raw:
        problems.append(
            CardProblem(
                mapping.line_of("labels"),
                "config_invalid",
                "labels",
                "'labels' must map each metadata key to its list of legal "
                "values, e.g. difficulty: [easy, hard]",
            )
        )
    else:
        for name, values in raw.items():
            ok = (
                isinstance(values, list)
                and values
                and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values)
            )
            if not isinstance(name, str) or not ok:
                problems.append(
                    CardProblem(
                        mapping.line_of("labels"),
                        "config_invalid",
                        f"labels.{name}",
                        f"label {name!r} must list its legal values as a non-empty list of strings",
                    )
                )
                continue
            legal[name] = tuple(str(v) for v in values)
    req = mapping.data.get("required", list(legal))
    if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
        problems.append(
            CardProblem(
                mapping.line_of("required"),
                "config_invalid",
                "required",
                "'required' must be a list of label names",
            )
        )
        req = []
    for r in req:
        if legal and r not in legal:
            problems.append(
                CardProblem(
                    mapping.line_of("required"),
                    "config_invalid",
                    "required",
                    f"required label {r!r} is not declared under 'labels'",
                )
            )
    if problems:
        return None, problems
    return Labels(legal=legal, required=tuple(req)), []


def declared_label_keys(start: Path) -> tuple[str, ...] | None:
    """The label keys the layout at or above ``start`` declares in its labels file,
    for the score report to group by; ``None`` when there is no layout, no labels
    file or one that does not parse (``lint`` reports that), so the report falls
    back to its bounded set of low-cardinality metadata keys."""
    from evalspec.evals.layout import find_layout
    from evalspec.io.repository import OutsideRootError
    from evalspec.io.safeload import MAX_YAML_BYTES, DocumentError, read_in_repository

    layout = find_layout(start)
    if layout is None:
        return None
    try:
        data = read_in_repository(layout.labels_file, MAX_YAML_BYTES)
        parsed, _ = parse_labels(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, DocumentError, OutsideRootError):
        return None
    return None if parsed is None else tuple(parsed.legal)
