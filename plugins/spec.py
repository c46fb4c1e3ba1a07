"""The built-in spec versions.

Version 1: the five categories, six metrics and six rules of the frozen spec
(never edited: its checksum is in evalspec's lock). Version 2: answers read
from real model outputs (rules ``mcq``, ``extract_number``, ``normalize_label``,
metric ``numeric_match``) and published benchmarks as published (optional
fields ``preamble`` and ``code_protocol``; a completion-protocol prompt may
end in its newline). Both are ordinary migrations, under the same gate,
fixtures and lock as a third party's.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

from evalspec import hookimpl
from evalspec.versions import (
    AddCategory,
    AddField,
    AddMetric,
    AddPostProcess,
    BindMetric,
    BindPostProcess,
    Migration,
    WaiveFieldRule,
)

FIXTURES = ("tasks.jsonl",)
FIXTURES_V2 = ("spec_v2.jsonl",)

V1 = Migration(
    version=1,
    parent=None,
    message="Initial spec: five categories, six metrics, six post-process rules",
    operations=(
        AddMetric("exact_match", "1 when the prediction equals any target"),
        AddMetric("f1", "SQuAD v1.1 token F1, best target wins"),
        AddMetric("bleu_4", "sacreBLEU sentence BLEU against all targets"),
        AddMetric("rouge_l", "ROUGE-L F-measure, best target wins"),
        AddMetric("accuracy", "exact match per item, reported as accuracy"),
        AddMetric("code_exec", "extracted code passes every target test program"),
        AddPostProcess("none", "the text unchanged"),
        AddPostProcess("strip_whitespace", "leading and trailing whitespace removed"),
        AddPostProcess("lower", "str.lower"),
        AddPostProcess("extract_letter", "the first character in A-E, or ''"),
        AddPostProcess("extract_code_block", "the body of the first fenced code block"),
        AddPostProcess("extract_first_line", "the first non-blank line"),
        AddCategory(
            "arithmetic",
            metrics=("exact_match", "accuracy"),
            post_processes=("none", "strip_whitespace", "extract_first_line"),
            fixtures=FIXTURES,
        ),
        AddCategory(
            "mcq",
            metrics=("exact_match",),
            post_processes=("extract_letter", "strip_whitespace", "none"),
            fixtures=FIXTURES,
            single_target_from=("A", "B", "C", "D", "E"),
        ),
        AddCategory(
            "code_exec",
            metrics=("code_exec",),
            post_processes=("extract_code_block", "none"),
            fixtures=FIXTURES,
        ),
        AddCategory(
            "classification",
            metrics=("exact_match", "accuracy", "f1"),
            post_processes=("none", "strip_whitespace", "lower", "extract_first_line"),
            fixtures=FIXTURES,
        ),
        AddCategory(
            "summary",
            metrics=("rouge_l", "bleu_4", "f1"),
            post_processes=("none", "strip_whitespace", "extract_first_line"),
            fixtures=FIXTURES,
        ),
    ),
    fixture_dir=resources.files("evalspec_fixtures"),
)


V2 = Migration(
    version=2,
    parent=1,
    message="Answers read from real model outputs; benchmarks as published",
    operations=(
        AddPostProcess(
            "mcq",
            "the answer letter A-E: an answer cue, a bold letter, an option label, a lone "
            "letter (that precedence); '' when none or several different",
        ),
        AddPostProcess("extract_number", "GSM8K's '#### N', else the last number, written plainly"),
        AddPostProcess("normalize_label", "surrounding whitespace removed, then str.lower"),
        AddMetric("numeric_match", "1 when the prediction equals a target as a number"),
        BindPostProcess(
            "mcq", "mcq", FIXTURES_V2, "read the letter of 'Answer: D', '(C)', '**A**', 'B. 4'"
        ),
        BindPostProcess("arithmetic", "extract_number", FIXTURES_V2, "the answer number"),
        BindMetric("arithmetic", "numeric_match", FIXTURES_V2, "12, 12.0 and $12 are equal"),
        BindPostProcess(
            "classification", "normalize_label", FIXTURES_V2, "' Positive\\n' is 'positive'"
        ),
        AddField(
            "preamble",
            FIXTURES_V2,
            "text rendered before the few-shot examples (MMLU's subject line)",
        ),
        AddField(
            "code_protocol",
            FIXTURES_V2,
            "'program': the output is the whole program; 'completion': the program is the "
            "prompt followed by the output (HumanEval)",
            choices=("program", "completion"),
            categories=("code_exec",),
        ),
        WaiveFieldRule(
            "prompt_trailing_whitespace",
            "code_exec",
            "code_protocol",
            "completion",
            FIXTURES_V2,
            "a completion-protocol prompt ends in the newline and indentation the model continues",
        ),
    ),
    fixture_dir=resources.files("evalspec_fixtures"),
)


@hookimpl
def evalspec_register_migrations(register: Callable[[Migration], None]) -> None:
    register(V1)
    register(V2)
