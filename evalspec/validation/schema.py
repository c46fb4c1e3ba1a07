"""A JSON Schema (Draft 2020-12) of one task line at a spec version.

For editors (a ``$schema``-aware editor completes and checks task lines) and
for tools in other languages. The schema states the fields, their types, the
names of the version table as enums, the few-shot bound, no extra keys, the
category pair table as ``if``/``then`` conditionals, the single-letter
target of single-target categories such as ``mcq``, and the optional fields
a spec version added (their choices, the categories that may carry them, and
the field rules a ``WaiveFieldRule`` lifts, as conditionals). ``str.isspace`` is
spelled out as an explicit character class, so "no whitespace" means exactly
what it means to the validator.

What a JSON Schema of one decoded value cannot say is listed in
:data:`NOT_EXPRESSIBLE`; the validator stays the authority for those rules.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from evalspec.registry.build import Registry, default_registry
from evalspec.rules import MAX_FEW_SHOT
from evalspec.validation.validator import EXAMPLE_KEYS, REQUIRED_FIELDS

DRAFT = "https://json-schema.org/draft/2020-12/schema"

WHITESPACE_CLASS = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace())
"""Every ``str.isspace`` character as ``\\uXXXX`` escapes, for a regex character class.

The escapes mean the same in ECMA-262 (the dialect JSON Schema names) and in
Python's ``re``; no ``str.isspace`` character lies above U+3000.
"""

NOT_EXPRESSIBLE: MappingProxyType[str, str] = MappingProxyType(
    {
        "invalid_json": "a schema applies to a decoded value; a line that does not decode "
        "never reaches it",
        "duplicate_key": "JSON parsers keep one of the repeated keys before a schema sees "
        "the object",
        "prompt_embedded_few_shot": "detecting a few-shot block compares the prompt with the "
        "examples and its own blocks (evalspec.validation.embedded), beyond regular expressions",
        "duplicate_task_id": "uniqueness is a property of the whole file, and a schema "
        "checks one line",
    }
)
"""Rules the exported schema cannot check, with the reason."""

NAMED_DIFFERENTLY: MappingProxyType[str, str] = MappingProxyType(
    {
        "combined_post_process": "rejected, as a list (type) or as a name outside the enum; "
        "the schema cannot tell a combination from an unknown name",
    }
)
"""Rules the schema does enforce, but only under a generic keyword."""


def _no_whitespace() -> dict[str, Any]:
    return {"not": {"pattern": f"[{WHITESPACE_CLASS}]"}}


def task_schema(
    registry: Registry | None = None, spec_version: int | None = None
) -> dict[str, Any]:
    """The Draft 2020-12 schema of a task at ``spec_version`` (default: the registry's)."""
    if registry is None:
        reg = default_registry(spec_version)
    else:
        reg = registry if spec_version is None else registry.at_version(spec_version)
    spec = reg.spec
    example = {
        "type": "object",
        "properties": {key: {"type": "string"} for key in EXAMPLE_KEYS},
        "required": list(EXAMPLE_KEYS),
        "additionalProperties": False,
    }
    properties: dict[str, Any] = {
        "task_id": {
            "description": "unique in the file; no whitespace (str.isspace)",
            "type": "string",
            "minLength": 1,
            **_no_whitespace(),
        },
        "category": {"type": "string", "enum": sorted(spec.categories)},
        "prompt": {
            "description": "not blank, no trailing whitespace, no few-shot block inside",
            "type": "string",
            "pattern": f"[^{WHITESPACE_CLASS}]",
            "not": {"pattern": f"[{WHITESPACE_CLASS}]$"},
        },
        "targets": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "metric_name": {"type": "string", "enum": sorted(spec.metrics)},
        "post_process": {
            "description": "exactly one rule name; rules are never combined",
            "type": "string",
            "enum": sorted(spec.post_processes),
        },
        "few_shot_examples": {"type": "array", "items": example, "maxItems": MAX_FEW_SHOT},
        "metadata": {"type": "object"},
    }
    for field in spec.fields.values():
        properties[field.name] = {"type": "string"}
        if field.choices:
            properties[field.name]["enum"] = list(field.choices)
    pairs: list[dict[str, Any]] = []
    waived = [
        {
            "properties": {"category": {"const": category}, field: {"const": value}},
            "required": ["category", field],
        }
        for rule, category, field, value in sorted(spec.waivers)
        if rule == "prompt_trailing_whitespace"
    ]
    waiver: dict[str, Any] = {}
    if waived:  # the trailing-whitespace rule holds for every task the waivers do not name
        trailing = properties["prompt"].pop("not")
        waiver = {
            "if": {"not": {"anyOf": waived}},
            "then": {"properties": {"prompt": {"not": trailing}}},
        }
    for name in sorted(spec.categories):
        cat = spec.categories[name]
        then: dict[str, Any] = {
            "metric_name": {"enum": sorted(cat.metrics)},
            "post_process": {"enum": sorted(cat.post_processes)},
        }
        forbidden = [
            f.name for f in spec.fields.values() if f.categories and name not in f.categories
        ]
        for field_name in forbidden:
            then[field_name] = False
        if cat.single_target_from:
            then["targets"] = {
                "minItems": 1,
                "maxItems": 1,
                "items": {"enum": sorted(cat.single_target_from)},
            }
        pairs.append(
            {
                "if": {"properties": {"category": {"const": name}}, "required": ["category"]},
                "then": {"properties": then},
            }
        )
    return {
        "$schema": DRAFT,
        "$id": f"urn:evalspec:task:spec-v{spec.version}",
        "title": f"evalspec task, spec version {spec.version}",
        "description": "One line of tasks.jsonl. Not checked here: "
        + "; ".join(f"{rule} ({why})" for rule, why in NOT_EXPRESSIBLE.items()),
        "type": "object",
        "properties": properties,
        "required": list(REQUIRED_FIELDS),
        "additionalProperties": False,
        "allOf": pairs,
        **waiver,
    }


__all__ = ["DRAFT", "NAMED_DIFFERENTLY", "NOT_EXPRESSIBLE", "WHITESPACE_CLASS", "task_schema"]
