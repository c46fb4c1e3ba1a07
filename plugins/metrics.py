"""The six metrics of spec v1 (scorers arrive with the scoring work)."""

from __future__ import annotations

from collections.abc import Callable

from evalspec import Metric, hookimpl


@hookimpl
def evalspec_register_metrics(register: Callable[[Metric], None]) -> None:
    register(Metric("exact_match", "1.0 when the prediction equals any target exactly"))
    register(Metric("f1", "SQuAD v1.1 token F1; the best target wins"))
    register(Metric("bleu_4", "sacreBLEU sentence BLEU / 100 against all targets"))
    register(Metric("rouge_l", "rouge-score ROUGE-L F-measure; the best target wins"))
    register(Metric("accuracy", "exact match per item; the mean is reported as accuracy"))
    register(Metric("code_exec", "1.0 when the extracted code passes every target test"))
