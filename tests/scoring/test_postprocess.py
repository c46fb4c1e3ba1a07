"""Post-process rules: pinned behaviour, and properties fuzzed over every registered rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from timing import within

from evalspec import PostProcessRule, Registry, UnknownNameError, post_process

LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# Text that exercises the rules: lone surrogates, every line break, fences, letters.
pieces = st.one_of(
    st.characters(exclude_categories=()),  # any code point, lone surrogates included
    st.sampled_from(
        ["`", "```", "```py\n", "\n", "\r\n", " ", "A", "E", "F", "a", "\u3000", "\ud800"]
    ),
)
texts = st.lists(pieces, max_size=40).map("".join)


def run(rule: str, text: str, registry: Registry) -> str:
    return post_process(rule, text, registry=registry)


@pytest.mark.parametrize(
    ("rule", "text", "expected"),
    [
        ("none", "  Keep Me \n", "  Keep Me \n"),
        ("strip_whitespace", "\u3000\u00a0 41\n\t\u2028", "41"),
        ("strip_whitespace", " x\u200b ", "x\u200b"),  # U+200B is not whitespace
        ("lower", "ÀBC İ ẞ", "àbc i̇ ß"),
        ("extract_letter", "Answer: C", "A"),
        ("extract_letter", "the answer is (b) or C", "C"),
        ("extract_letter", "I pick E", "E"),
        ("extract_letter", "\uff22 or F", ""),
        ("extract_letter", "", ""),
        ("extract_code_block", "Here:\n```python\nprint(1)\n```\nbye", "print(1)"),
        ("extract_code_block", "```\nx = 1\ny = 2\n```", "x = 1\ny = 2"),
        ("extract_code_block", "```py\na\n```\n```py\nb\n```", "a"),
        ("extract_code_block", "```python\r\nprint(1)\r\n```", "print(1)"),
        ("extract_code_block", "```def foo():\n    return 1\n```", "    return 1"),
        ("extract_code_block", "```python\nunclosed = True\n", "unclosed = True\n"),
        ("extract_code_block", "no fence here", "no fence here"),
        ("extract_code_block", "```python", ""),
        ("extract_code_block", "```\n```", ""),
        ("extract_code_block", "```\n\n```", ""),
        ("extract_first_line", "\n  \nfirst line \nsecond", "first line "),
        ("extract_first_line", "A\u2028B\nC", "A"),
        ("extract_first_line", "A\r\nB", "A"),
        ("extract_first_line", " \t\n\u3000\n", ""),
        ("extract_first_line", "", ""),
    ],
)
def test_builtin_rule_behaviour(registry: Registry, rule: str, text: str, expected: str) -> None:
    assert run(rule, text, registry) == expected


def test_unknown_rule_is_a_clear_error(registry: Registry) -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'lower'"):
        run("lowr", "x", registry)


def test_post_process_uses_the_installed_registry_by_default() -> None:
    assert post_process("strip_whitespace", "  x ") == "x"


# -- properties over every registered rule (built-in or plugin) ------------------


def test_property_suite_covers_every_registered_rule(all_rules: list[PostProcessRule]) -> None:
    names = {r.name for r in all_rules}
    assert {"none", "strip_whitespace", "lower", "extract_letter", "extract_code_block",
            "extract_first_line"} <= names  # fmt: skip


@given(text=texts)
@example(text="\ud800")
@example(text="```" * 10)
def test_every_rule_is_total_and_deterministic(all_rules: list[PostProcessRule], text: str) -> None:
    for rule in all_rules:
        first = rule(text)
        assert isinstance(first, str), rule.name
        assert rule(text) == first, rule.name


CONTRACTS: dict[str, Callable[[str, str], bool]] = {
    "none": lambda text, out: out == text,
    "strip_whitespace": lambda text, out: out == "" or not (out[0].isspace() or out[-1].isspace()),
    "lower": lambda text, out: out == text.lower(),
    "extract_letter": lambda text, out: out == "" or (len(out) == 1 and out in "ABCDE"),
    "extract_code_block": lambda text, out: out in text,
    "extract_first_line": lambda text, out: (
        not any(c in out for c in LINE_BREAKS) and (out == "" or not out.isspace()) and out in text
    ),
}
IDEMPOTENT = ("none", "strip_whitespace", "lower", "extract_letter", "extract_first_line")


@given(text=texts)
def test_every_builtin_rule_meets_its_output_contract(registry: Registry, text: str) -> None:
    for name, holds in CONTRACTS.items():
        assert holds(text, run(name, text, registry)), name


@given(text=texts)
def test_idempotent_rules_are_idempotent(registry: Registry, text: str) -> None:
    for name in IDEMPOTENT:
        once = run(name, text, registry)
        assert run(name, once, registry) == once, name


@given(text=texts)
def test_extract_letter_is_the_first_letter_a_to_e(registry: Registry, text: str) -> None:
    out = run("extract_letter", text, registry)
    if out:
        assert text.index(out) == min(text.find(c) for c in "ABCDE" if c in text)
    else:
        assert not any(c in text for c in "ABCDE")


@given(
    body=st.text().filter(lambda s: "```" not in s and not s.endswith("\n")),
    tag=st.text(alphabet="abcdefghijklmnopqrstuvwxyz+-", max_size=10),
    before=st.text().filter(lambda s: "`" not in s),
)
def test_extract_code_block_recovers_the_fenced_body(
    registry: Registry, body: str, tag: str, before: str
) -> None:
    text = f"{before}```{tag}\n{body}\n```\nafter ```x\nother\n```"
    assert run("extract_code_block", text, registry) == body


def test_rules_agree_in_a_fresh_interpreter_with_another_hash_seed(
    all_rules: list[PostProcessRule], tmp_path: os.PathLike[str]
) -> None:
    samples = [
        "", "Answer: C", "```py\nprint(1)\n```", "\n\n  x\u2028y", "\ud800 lone", "ÀİΣ",
        "B" * 1000, "``` \n" * 50, "a\r\nb\rc", "\u3000\tx\t\u3000",
    ]  # fmt: skip
    here = {r.name: [r(s) for s in samples] for r in all_rules}
    script = (
        "import json, sys\n"
        "from evalspec import default_registry\n"
        "samples = json.loads(sys.stdin.read())\n"
        "reg = default_registry()\n"
        "names = json.loads(sys.argv[1])\n"
        "print(json.dumps({n: [reg.post_processor(n)(s) for s in samples] for n in names}))\n"
    )
    names = [r.name for r in all_rules if r.name in _installed_rule_names()]
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script, json.dumps(names)],
            input=json.dumps(samples),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
        there = json.loads(out)
        assert there == {n: here[n] for n in names}


def _installed_rule_names() -> set[str]:
    from evalspec import default_registry

    return set(default_registry().post_processors)


ADVERSARIAL = [
    "```" + " " * 1_000_000,
    "```python\n" + "\n" * 1_000_000,
    "```py\nx\n```y " * 80_000,
    "`" * 1_000_000,
    "\n" * 1_000_000,
    " " * 1_000_000,
    "a" * 1_000_000,
]


def test_every_rule_handles_a_megabyte_of_adversarial_input(
    all_rules: list[PostProcessRule],
) -> None:
    # A backtracking regex would take minutes here; linear code takes milliseconds.
    # The generous bound only catches catastrophic behaviour, not speed (see benchmarks/).
    for text in ADVERSARIAL:
        for rule in all_rules:
            # The timing is retried (tests/timing.py): a loaded machine is slow now
            # and then, a backtracking regex on every attempt.
            within(5.0, lambda rule=rule, text=text: rule(text), what=rule.name)
