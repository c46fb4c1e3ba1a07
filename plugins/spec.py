"""Spec version 1: the five categories, six metrics and six rules of the frozen spec."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

from evalspec import hookimpl
from evalspec.versions import AddCategory, AddMetric, AddPostProcess, Migration

FIXTURES = ("tasks.jsonl",)

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


@hookimpl
def evalspec_register_migrations(register: Callable[[Migration], None]) -> None:
    register(V1)
