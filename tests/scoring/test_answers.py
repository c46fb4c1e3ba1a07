"""Golden cases of spec version 2's rules and metric, its fields, and v1 unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from evalspec_plugins import answers

from evalspec import (
    Registry,
    TaskSpec,
    post_process,
    render,
    score,
    validate_file,
    validate_task,
)
from evalspec.validation.fixtures import fixture_dir

MCQ = [
    # (output, letter, why undecided or "")
    ("Answer: D", "D", ""),
    ("ANSWER: B", "B", ""),
    ("The answer is (C).", "C", ""),
    ("The correct answer is **A** because Paris is in France.", "A", ""),
    ("answer: option B", "B", ""),
    ("Let me think. A is wrong, B is wrong.\nAnswer: C", "C", ""),  # the cue outranks words
    ("**B**", "B", ""),
    ("**(C)** Kant", "C", ""),
    ("B. 4", "B", ""),
    ("(D) none of the above", "D", ""),
    ("C", "C", ""),
    ("(C).", "C", ""),
    (" A \n", "A", ""),
    ("Definitely C: Kant wrote it.", "C", ""),
    ("A good guess is C", "C", ""),  # "A good" is the article
    ("I think it's B", "B", ""),
    ("I have no idea.", "", "no candidate"),
    ("", "", "no candidate"),
    ("answer: e", "", "no candidate"),  # letters are upper case
    ("Answer: A\nWait, no. Answer: B", "", "several different candidates"),
    ("A. 1\nB. 2\nC. 3", "", "several different candidates"),
    ("Either B or C", "", "several different candidates"),
    ("Answer: C. Yes, the answer is (C).", "C", ""),  # one letter, twice
]


@pytest.mark.parametrize(("output", "letter", "why"), MCQ)
def test_mcq_golden(registry: Registry, output: str, letter: str, why: str) -> None:
    rule = registry.post_processor("mcq")
    assert rule(output) == letter
    assert rule.unparsed is not None
    assert rule.unparsed(output) is (why != "")
    assert answers.letter_undecided(output) == why


NUMBERS = [
    ("#### 12", "12"),
    ("She has 5 apples and buys 7 more.\n#### 12", "12"),
    ("#### 1,234", "1234"),
    ("#### -3", "-3"),
    ("Step 1: 3 + 4 = 7. Step 2: 7 * 2 = 14. The answer is 14.", "14"),
    ("The speed is 60 km/h.", "60"),
    ("It costs $25.", "25"),
    ("-$1,234.50", "-1234.50"),
    ("The total is 1,234,567 apples.", "1234567"),
    ("It is about .5 of the cake", "0.5"),
    ("x = \u22127.", "-7"),
    ("+8 degrees", "8"),
    ("pages 3-4", "4"),  # a hyphen between numbers is not a sign
    ("The answer is 12.\n#### 18", "18"),  # GSM8K's marker outranks the last number
    ("Growth was 12.5%", "12.5"),
    ("no number here", ""),
    ("", ""),
]


@pytest.mark.parametrize(("output", "number"), NUMBERS)
def test_extract_number_golden(registry: Registry, output: str, number: str) -> None:
    rule = registry.post_processor("extract_number")
    assert rule(output) == number
    assert rule.unparsed is not None
    assert bool(rule.unparsed(output)) == (number == "")


@pytest.mark.parametrize(
    ("prediction", "target", "value"),
    [
        ("12", "12", 1.0),
        ("12.0", "12", 1.0),
        ("12.00", "12", 1.0),
        ("$12", "12", 1.0),
        (" 1,234 ", "1234", 1.0),
        ("-0", "0", 1.0),
        ("0.1", "0.10", 1.0),
        ("12.5", "12", 0.0),
        ("13", "12", 0.0),
        ("", "12", 0.0),
        ("twelve", "twelve", 1.0),  # not numbers: equal only as identical strings
        ("Twelve", "twelve", 0.0),
        ("12 apples", "12", 0.0),  # not all of it a number: compared as strings
        ("0.30000000000000004", "0.3", 0.0),  # exact decimals, never floats
    ],
)
def test_numeric_match_compares_numbers_as_numbers(
    prediction: str, target: str, value: float
) -> None:
    assert score("numeric_match", prediction, [target]) == value


def test_numeric_match_takes_the_best_target() -> None:
    assert score("numeric_match", "7", ["6", "7.0"]) == 1.0


@pytest.mark.parametrize(
    ("output", "label"),
    [(" Positive\n", "positive"), ("NEGATIVE", "negative"), ("\tneutral ", "neutral"), ("", "")],
)
def test_normalize_label_golden(output: str, label: str) -> None:
    assert post_process("normalize_label", output) == label


def test_v1_rules_are_unchanged_at_every_version() -> None:
    # extract_letter stays literal: the A of "Answer" (v2's mcq reads the D).
    assert post_process("extract_letter", "Answer: D") == "A"
    assert post_process("mcq", "Answer: D") == "D"


def test_the_v1_fixture_file_validates_the_same_at_v1_and_v2(registry: Registry) -> None:
    path = fixture_dir() / "tasks.jsonl"
    at_v1 = validate_file(path, registry=registry, spec_version=1)
    at_v2 = validate_file(path, registry=registry, spec_version=2)
    assert at_v1.ok and at_v2.ok
    assert [t.to_dict() for t in at_v1.validated] == [t.to_dict() for t in at_v2.validated]


def test_the_v2_fixture_is_refused_at_v1_and_admitted_at_v2(registry: Registry) -> None:
    path = fixture_dir() / "spec_v2.jsonl"
    assert validate_file(path, registry=registry, spec_version=2).ok
    at_v1 = validate_file(path, registry=registry, spec_version=1)
    assert at_v1.invalid == at_v1.total  # every task uses something version 2 added


def test_the_preamble_is_rendered_first_through_the_one_path(registry: Registry) -> None:
    line = (fixture_dir() / "spec_v2.jsonl").read_text(encoding="utf-8").splitlines()[0]
    task = TaskSpec.from_dict(json.loads(line))
    assert task.preamble.startswith("The following are multiple choice questions")
    rendered = render(task)
    assert rendered.split("\n\n")[0] == task.preamble
    assert rendered == render(task.to_dict())
    without = TaskSpec.from_dict({k: v for k, v in task.to_dict().items() if k != "preamble"})
    assert rendered == task.preamble + "\n\n" + render(without)
    assert "preamble" not in without.to_dict()  # a v1 task's dict is as it was


def test_a_completion_prompt_may_end_in_its_newline_only_in_that_protocol(
    registry: Registry,
) -> None:
    base = {
        "task_id": "c1",
        "category": "code_exec",
        "prompt": "def f():\n    ",
        "targets": ["assert f() == 1"],
        "metric_name": "code_exec",
        "post_process": "none",
    }

    def rules(task: dict[str, object], version: int | None = None) -> list[str]:
        return [e.rule for e in validate_task(task, registry=registry, spec_version=version)[1]]

    assert rules({**base, "code_protocol": "completion"}) == []
    assert rules({**base, "code_protocol": "program"}) == ["prompt_trailing_whitespace"]
    assert rules(base) == ["prompt_trailing_whitespace"]
    assert rules({**base, "code_protocol": "completion"}, 1) == ["unknown_field"]
    assert rules({**base, "prompt": "def f():", "code_protocol": "patch"}) == ["bad_field_value"]


def test_the_report_counts_undecided_outputs_per_category_and_rule(tmp_path: Path) -> None:
    def mcq(task_id: str) -> dict[str, object]:
        return {
            "task_id": task_id,
            "category": "mcq",
            "prompt": "Pick one.\nA. x\nB. y\nC. z\nAnswer:",
            "targets": ["C"],
            "metric_name": "exact_match",
            "post_process": "mcq",
        }

    number = {
        "task_id": "n1",
        "category": "arithmetic",
        "prompt": "2 + 2?",
        "targets": ["4"],
        "metric_name": "numeric_match",
        "post_process": "extract_number",
    }
    tasks = [mcq("m1"), mcq("m2"), mcq("m3"), number]
    outputs = {
        "m1": "Answer: C",  # decided
        "m2": "Answer: A\nNo wait. Answer: B",  # several different candidates
        "m3": "I cannot tell.",  # no candidate
        "n1": "four",  # no number
    }
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (tmp_path / "preds.jsonl").write_text(
        "".join(json.dumps({"task_id": k, "output": v}) + "\n" for k, v in outputs.items())
    )
    command = [sys.executable, "-m", "evalspec", "score", "tasks.jsonl", "preds.jsonl"]
    done = subprocess.run(
        [*command, "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["unparsed"] == {"arithmetic": {"extract_number": 1}, "mcq": {"mcq": 2}}
