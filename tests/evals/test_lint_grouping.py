"""Folding repeated lint problems (evalspec.evals.lint.grouping)."""

from __future__ import annotations

from evalspec.evals.lint.grouping import SHOWN, Fold, grouped, shape
from evalspec.evals.lint.report import LintProblem
from evalspec.model import ErrorRecord


def _problem(
    line: int, rule: str, field: str | None, message: str, file: str = "d.jsonl"
) -> LintProblem:
    return LintProblem(file, ErrorRecord(line, rule, field, message))


def _duplicate(line: int, first: str) -> LintProblem:
    return _problem(line, "duplicate_prompt", "prompt", f"the same prompt as {first!r} (line 1)")


def test_shape_blanks_quoted_values_numbers_and_lists() -> None:
    assert shape("the same prompt as 'T1' (line 3)") == shape('the same prompt as "x y" (line 45)')
    assert shape("targets: ['a', 'b'] there, ['c'] here") == "targets: […] there, […] here"
    assert shape("metadata has no 'difficulty' label") != shape("metadata lacks a label")


def test_problems_beyond_the_first_few_of_a_kind_fold_into_one_exact_count() -> None:
    problems = [_duplicate(n, f"T{n % 7}") for n in range(2, 32)]  # 30, ids differ
    out = list(grouped(problems))
    shown = [p for p in out if isinstance(p, LintProblem)]
    [fold] = [p for p in out if isinstance(p, Fold)]
    assert shown == problems[:SHOWN]
    assert fold.count == 30 - SHOWN and len(shown) + fold.count == len(problems)
    assert fold.first == problems[SHOWN]
    assert fold.lines == tuple(range(2 + SHOWN, 32))
    assert fold.describe() == f"{30 - SHOWN} more like this (lines 5, 6, 7, 8, 9 and 22 more)"
    assert out[SHOWN] is fold  # where the first folded problem stood


def test_kinds_differ_by_file_rule_and_field() -> None:
    problems = [
        _problem(n, "missing_label", f"metadata.{label}", f"metadata has no {label!r} label", file)
        for file in ("a.jsonl", "b.jsonl")
        for label in ("difficulty", "source")
        for n in range(1, 6)
    ]
    out = list(grouped(problems))
    folds = [p for p in out if isinstance(p, Fold)]
    assert len(folds) == 4  # two files times two labels
    assert {(f.first.file, f.first.error.field, f.count) for f in folds} == {
        (file, f"metadata.{label}", 2)
        for file in ("a.jsonl", "b.jsonl")
        for label in ("difficulty", "source")
    }
    assert sum(f.count for f in folds) + sum(isinstance(p, LintProblem) for p in out) == 20


def test_a_fold_of_one_is_the_problem_itself_and_interleaving_keeps_the_order() -> None:
    dups = [_duplicate(n, "T1") for n in (2, 4, 6, 8)]
    other = [_problem(n, "illegal_label", "metadata.source", "source='x' is bad") for n in (3, 5)]
    problems = sorted([*dups, *other], key=lambda p: p.error.line)
    assert list(grouped(problems)) == problems  # SHOWN + 1 of a kind: nothing folded
    out = list(grouped(problems, shown=1))
    assert [
        getattr(p, "error", None) and p.error.line for p in out if isinstance(p, LintProblem)
    ] == [2, 3, 5]
    [fold] = [p for p in out if isinstance(p, Fold)]
    assert fold.lines == (4, 6, 8) and fold.describe() == "3 more like this (lines 4, 6, 8)"
