"""The exported JSON Schema, checked differentially against the validator with jsonschema."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec import Registry, iter_validate, validate_task
from evalspec.io.jsonline import parse_line
from evalspec.rules import MAX_FEW_SHOT, RULES
from evalspec.testing.strategies import broken_tasks, valid_tasks
from evalspec.validation.schema import DRAFT, NAMED_DIFFERENTLY, NOT_EXPRESSIBLE, task_schema

EXPRESSIBLE = [rule for rule in RULES if rule not in NOT_EXPRESSIBLE]


@pytest.fixture(scope="module")
def validator(registry: Registry) -> jsonschema.protocols.Validator:
    schema = task_schema(registry)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _decoded(value: dict[str, object] | bytes) -> object:
    if isinstance(value, bytes):
        obj, problems = parse_line(value.decode("utf-8"))
        assert problems == []
        return obj
    return value


def _evalspec_admits(value: object, registry: Registry) -> bool:
    _, errors = validate_task(value, registry=registry)  # type: ignore[arg-type]
    return not errors


def test_schema_is_draft_2020_12_with_the_version_table(registry: Registry) -> None:
    schema = task_schema(registry)
    assert schema["$schema"] == DRAFT
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["category"]["enum"] == sorted(registry.spec.categories)
    assert props["metric_name"]["enum"] == sorted(registry.spec.metrics)
    assert props["post_process"]["enum"] == sorted(registry.spec.post_processes)
    assert props["few_shot_examples"]["maxItems"] == MAX_FEW_SHOT
    conditions = {c["if"]["properties"]["category"]["const"]: c["then"] for c in schema["allOf"]}
    assert set(conditions) == set(registry.spec.categories)
    mcq = conditions["mcq"]["properties"]["targets"]
    assert (mcq["maxItems"], mcq["items"]["enum"]) == (1, ["A", "B", "C", "D", "E"])


@given(st.data())
def test_schema_accepts_every_valid_task(
    registry: Registry, validator: jsonschema.protocols.Validator, data: st.DataObject
) -> None:
    task = data.draw(valid_tasks(registry))
    assert _evalspec_admits(task, registry)
    assert list(validator.iter_errors(task)) == []


@pytest.mark.parametrize("rule", EXPRESSIBLE)
@given(data=st.data())
def test_schema_and_validator_agree_on_one_rule_broken_tasks(
    registry: Registry, validator: jsonschema.protocols.Validator, rule: str, data: st.DataObject
) -> None:
    obj = _decoded(data.draw(broken_tasks(rule, registry)))
    assert _evalspec_admits(obj, registry) is False
    assert validator.is_valid(obj) is False


def test_the_rules_the_schema_cannot_express_are_listed() -> None:
    assert sorted(NOT_EXPRESSIBLE) == sorted(
        ["invalid_json", "duplicate_key", "prompt_embedded_few_shot", "duplicate_task_id"]
    )
    assert set(NAMED_DIFFERENTLY) <= set(EXPRESSIBLE)
    assert set(NOT_EXPRESSIBLE) <= set(RULES)


@given(st.data())
def test_schema_misses_exactly_the_rules_it_lists(
    registry: Registry, validator: jsonschema.protocols.Validator, data: st.DataObject
) -> None:
    # Each listed rule is really beyond the schema: a value breaking it passes the schema.
    line = data.draw(broken_tasks("invalid_json", registry))
    assert isinstance(line, bytes)
    [result] = iter_validate(io.BytesIO(line), registry=registry)
    assert not result.ok
    dup = data.draw(broken_tasks("duplicate_key", registry))
    assert isinstance(dup, bytes)
    assert validator.is_valid(json.loads(dup))  # json's last-wins hides the repeat
    embedded = data.draw(broken_tasks("prompt_embedded_few_shot", registry))
    assert not _evalspec_admits(embedded, registry)
    assert validator.is_valid(embedded)
    two_lines = data.draw(broken_tasks("duplicate_task_id", registry))
    assert isinstance(two_lines, bytes)
    assert all(validator.is_valid(json.loads(x)) for x in two_lines.splitlines())


def test_schema_command_prints_the_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "evalspec", "schema", "--spec-version", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    schema = json.loads(out.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "urn:evalspec:task:spec-v1"


def test_schema_command_rejects_an_unknown_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "evalspec", "schema", "--spec-version", "99"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "unknown spec version 99" in out.stderr
    assert "Traceback" not in out.stderr


@given(st.data())
def test_schema_follows_the_spec_version(example_registry: Registry, data: st.DataObject) -> None:
    newer = jsonschema.Draft202012Validator(task_schema(example_registry, 2))
    older = jsonschema.Draft202012Validator(task_schema(example_registry, 1))
    task = data.draw(valid_tasks(example_registry, 2))
    assert newer.is_valid(task)
    v1_admits = _evalspec_admits_at(task, example_registry, 1)
    assert older.is_valid(task) == v1_admits


def _evalspec_admits_at(task: object, registry: Registry, version: int) -> bool:
    _, errors = validate_task(task, registry=registry, spec_version=version)  # type: ignore[arg-type]
    return not errors


@pytest.mark.parametrize("indent", ["99999999999", "17", "-1"])
def test_an_indent_out_of_range_is_a_usage_error(indent: str) -> None:
    # 99999999999 asked json for a string of that many spaces: a MemoryError traceback.
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "schema", "--indent", indent],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"evalspec schema: error: argument --indent: must be between 0 and 16, not {indent}"
    )


def test_an_indent_in_range_indents() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "schema", "--indent", "16"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.splitlines()[1].startswith(" " * 16 + '"')
