"""Validator properties, stated with the public strategies of evalspec.testing.strategies."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalspec import Registry, TaskSpec, iter_validate, validate_task
from evalspec.rules import RULES
from evalspec.testing.strategies import MULTI_LINE_RULES, PARSE_RULES, broken_tasks, valid_tasks

LINE_ENDINGS = st.sampled_from([b"\n", b"\r\n", b"\r", b""])


@given(st.lists(st.tuples(st.binary(max_size=120), LINE_ENDINGS), max_size=8))
def test_validator_never_raises_and_accounts_for_every_line(
    registry: Registry, chunks: list[tuple[bytes, bytes]]
) -> None:
    data = b"".join(body + end for body, end in chunks)
    results = list(iter_validate(io.BytesIO(data), registry=registry))
    valid = sum(r.ok for r in results)
    invalid = sum(not r.ok for r in results)
    assert len(results) == valid + invalid
    # Every line that is not blank after decoding gets exactly one verdict, in order.
    physical = io.BytesIO(data).readlines()
    expected = []
    for number, raw in enumerate(physical, start=1):
        body = raw.rstrip(b"\n").removesuffix(b"\r")
        if number == 1:
            body = body.removeprefix(b"\xef\xbb\xbf")
        try:
            if not body.decode("utf-8").strip():
                continue
        except UnicodeDecodeError:
            pass
        expected.append(number)
    assert [r.line for r in results] == expected
    for r in results:
        assert (r.task is None) == bool(r.errors)
        assert all(e.rule in RULES and e.line == r.line for e in r.errors)


@given(st.text(max_size=200))
def test_validator_never_raises_on_arbitrary_text(registry: Registry, text: str) -> None:
    task, errors = validate_task(text, registry=registry)
    assert (task is None) == bool(errors)


@given(st.data())
def test_valid_tasks_always_validate(registry: Registry, data: st.DataObject) -> None:
    task = data.draw(valid_tasks(registry))
    _, errors = validate_task(task, registry=registry)
    assert errors == []
    line = json.dumps(task, ensure_ascii=False).encode("utf-8")
    results = list(iter_validate([line + b"\n"], registry=registry))
    assert [r.errors for r in results] == [()]


@given(st.data())
def test_task_spec_round_trips_through_json(registry: Registry, data: st.DataObject) -> None:
    task = data.draw(valid_tasks(registry))
    spec, errors = validate_task(task, registry=registry)
    assert spec is not None, errors
    again = TaskSpec.from_dict(json.loads(json.dumps(spec.to_dict(), ensure_ascii=False)))
    assert again == spec
    assert again.to_dict() == spec.to_dict()
    assert validate_task(spec.to_dict(), registry=registry) == (spec, [])


def _rules_found(value: dict[str, object] | bytes, registry: Registry) -> set[str]:
    if isinstance(value, bytes):
        results = iter_validate(io.BytesIO(value), registry=registry)
        return {e.rule for r in results for e in r.errors}
    _, errors = validate_task(value, registry=registry)
    return {e.rule for e in errors}


@pytest.mark.parametrize("rule", list(RULES))
@given(data=st.data())
def test_breaking_one_rule_yields_exactly_that_rule(
    registry: Registry, rule: str, data: st.DataObject
) -> None:
    value = data.draw(broken_tasks(rule, registry))
    if rule in PARSE_RULES or rule in MULTI_LINE_RULES:
        assert isinstance(value, bytes)
    assert _rules_found(value, registry) == {rule}


@pytest.mark.parametrize("version", [1, 2])
@given(data=st.data())
def test_valid_tasks_validate_at_the_spec_version_they_were_drawn_for(
    example_registry: Registry, version: int, data: st.DataObject
) -> None:
    task = data.draw(valid_tasks(example_registry, version))
    assert validate_task(task, registry=example_registry, spec_version=version)[1] == []
    assert task["category"] in example_registry.at_version(version).spec.categories
