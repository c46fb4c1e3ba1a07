"""The bundled fixtures: ten valid tasks, and exactly one error per rule."""

from __future__ import annotations

import collections
import io

from evalspec import Registry, load_fixtures, validate_file
from evalspec.rules import RULES


def test_good_fixture_has_two_valid_tasks_per_category(registry: Registry) -> None:
    fixtures = load_fixtures()
    assert len(fixtures.tasks) == 10
    counts = collections.Counter(t.category for t in fixtures.tasks)
    assert counts == {c: 2 for c in registry.at_version(1).spec.categories}


def test_bad_fixture_gives_exactly_one_error_per_rule(registry: Registry) -> None:
    fixtures = load_fixtures()
    result = validate_file(io.BytesIO(b"".join(fixtures.bad_lines)), registry=registry)
    rules = [e.rule for e in result.errors]
    assert collections.Counter(rules) == {rule: 1 for rule in RULES}
    assert set(rules) == set(RULES)  # a new rule cannot land without its bad line
    assert len(result.errors) == len(RULES)
    # one line per rule, plus the valid first occurrence the duplicate needs
    assert result.total == len(RULES) + 1 and result.valid == 1


def test_every_bad_line_is_a_different_line() -> None:
    fixtures = load_fixtures()
    result = validate_file(io.BytesIO(b"".join(fixtures.bad_lines)))
    lines = [e.line for e in result.errors]
    assert len(lines) == len(set(lines))


def test_fixture_files_are_installed_with_the_package() -> None:
    fixtures = load_fixtures()
    assert fixtures.path("tasks.jsonl").read_bytes().count(b"\n") == 10
    assert fixtures.path("tasks_bad.jsonl").is_file()
