"""Predictions from another harness's run: lm-evaluation-harness samples and inspect logs.

A team that already ran a model with lm-evaluation-harness (``--log_samples``)
or inspect_ai can score that run with evalspec: its rule and metric, its
unparsed counts and its gates. Only the model's *raw* outputs are taken (lm-eval's
``resps``, never its ``filtered_resps``; inspect's ``output.completion``, never
its scores): the post-process rule is evalspec's.

The mapping rule (docs/harnesses.md):

- **lm-eval** (``samples_<task>_<date>.jsonl``, one record per line, written by
  ``lm_eval/loggers/evaluation_tracker.py`` from the ``example`` dict built in
  ``lm_eval/evaluator.py``: ``doc_id``, ``doc``, ``target``, ``arguments``,
  ``resps``, ``filtered_resps``, ``filter``, ...). A record's task id is
  ``doc["task_id"]``, or what ``id_template`` makes of it (``{doc_id}`` and
  ``{doc.FIELD}``). Its samples are the generated texts of its one request
  (``resps[0]``, n of them when the task repeats). A task lm-eval logs once per
  filter appears on several lines: the repeats with the same raw responses are
  one prediction.
- **inspect** (an ``.eval`` or ``.json`` log, read by inspect's own
  ``read_eval_log``). A sample's task id is ``metadata["task_id"]`` (what
  :func:`evalspec.integrations.inspect_adapter.task` records), else its ``id``, or what
  ``id_template`` makes of it (``{id}`` and ``{metadata.FIELD}``). Its samples
  are ``output.completion`` of each epoch, in epoch order. Problems are numbered
  by the sample's place in the log (1 = the first sample).

Every record that cannot be mapped is a problem with its number; nothing is
dropped silently. The shared checks (unknown task, invalid task, repeated task)
are :class:`~evalspec.scoring.predictions.PredictionCollector`'s.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Collection, Mapping
from typing import Any

from evalspec.errors import EvalspecError
from evalspec.scoring.predictions import (
    PredictionCollector,
    PredictionProblem,
    Predictions,
    json_objects,
    read_predictions,
)
from evalspec.template import (
    Hole,
    Template,
    TemplateSyntaxError,
    TemplateValueError,
    compile_template,
)

FORMATS = ("evalspec", "lm-eval", "inspect")
"""What ``evalspec score --predictions-format`` reads."""

RUN_LOG_RULES = {
    "unmappable_sample": "a harness sample carries no task id evalspec can find",
    "not_generated_text": "a harness sample's response is not generated text "
    "(a loglikelihood or multiple-request task)",
    "sample_error": "the harness recorded an error instead of an output for the sample",
}
"""Rule code -> meaning, for the problems only a harness's run log can have."""


class RunLogError(EvalspecError):
    """A run log cannot be read at all (not the format it was said to be)."""


class InspectNotInstalled(RunLogError):
    """Reading an inspect log needs inspect_ai, which is not installed."""


def check_template(source: str, names: Collection[str]) -> Template:
    """``--id-template`` compiled (:mod:`evalspec.template`, the language of import
    mappings): its holes may name only ``names``, ``doc_id``/``id`` bare and
    ``doc``/``metadata`` with a key (``{doc.FIELD}``); ``{doc_id|plus:1}`` counts
    from 1, as ``evalspec import`` numbers rows (``@row``).

    :raises RunLogError: the template cannot be read, names something else, or
        has no hole (every sample would get one id).
    """
    try:
        template = compile_template(source)
    except TemplateSyntaxError as exc:
        raise RunLogError(f"--id-template: {exc}") from None
    holes = [part for part in template.parts if isinstance(part, Hole)]
    for hole in holes:
        bare = hole.name in ("doc_id", "id")
        if hole.name not in names or bool(hole.steps) == bare:
            allowed = ", ".join(
                "{" + n + "}" if n in ("doc_id", "id") else "{" + n + ".FIELD}" for n in names
            )
            msg = f"--id-template: unknown placeholder {hole.source} (use {allowed})"
            raise RunLogError(msg)
    if not holes:
        msg = f"--id-template {source!r} has no placeholder: every sample would get one id"
        raise RunLogError(msg)
    return template


def _fill(template: Template, values: Mapping[str, Any]) -> str | None:
    """The template filled from ``values``, or None when it names what they lack."""
    try:
        return template.render(values, {})
    except TemplateValueError:
        return None


def read_run_predictions(
    fmt: str,
    data: bytes,
    task_ids: Collection[str],
    *,
    invalid_task_ids: Collection[str] = (),
    id_template: str | None = None,
) -> Predictions:
    """The predictions a run log in ``fmt`` (one of :data:`FORMATS`) holds.

    :raises RunLogError: the log cannot be read as ``fmt`` at all, or the
        template is malformed.
    :raises InspectNotInstalled: an inspect log without inspect_ai installed.
    """
    if fmt == "evalspec":
        if id_template is not None:
            raise RunLogError("--id-template applies to lm-eval and inspect run logs only")
        return read_predictions(io.BytesIO(data), task_ids, invalid_task_ids=invalid_task_ids)
    collector = PredictionCollector(task_ids, invalid_task_ids)
    if fmt == "lm-eval":
        template = None if id_template is None else check_template(id_template, ("doc_id", "doc"))
        _read_lm_eval(data, collector, template)
    elif fmt == "inspect":
        template = None if id_template is None else check_template(id_template, ("id", "metadata"))
        _read_inspect(data, collector, template)
    else:
        raise RunLogError(f"unknown predictions format {fmt!r} (use {', '.join(FORMATS)})")
    return collector.result()


def _lm_eval_texts(resps: object) -> tuple[str, ...] | None:
    """The generated texts of a record's ``resps``, None when they are not that."""
    if not isinstance(resps, list) or len(resps) != 1:
        return None  # a loglikelihood task logs one request per choice
    texts = resps[0]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return None  # loglikelihood responses are [logprob, is_greedy] pairs
    return tuple(texts)


def _read_lm_eval(data: bytes, collector: PredictionCollector, template: Template | None) -> None:
    problems = collector.problems
    seen: dict[str, tuple[str, ...]] = {}  # a doc logged once per filter
    for number, obj in json_objects(io.BytesIO(data), collector):
        if not isinstance(obj, dict) or "resps" not in obj or "doc" not in obj:
            collector.total += 1
            msg = "not an lm-eval sample record (a JSON object with doc and resps)"
            problems.append(PredictionProblem(number, "not_object", msg))
            continue
        doc = obj["doc"]
        if template is None:
            found = doc.get("task_id") if isinstance(doc, dict) else None
            task_id = found if isinstance(found, str) else None
            how = "its doc has no string task_id (pass --id-template, e.g. 'name_{doc_id}')"
        else:
            task_id = _fill(template, {"doc_id": obj.get("doc_id"), "doc": doc})
            how = f"--id-template {template.source!r} names a field the record lacks"
        if task_id is None:
            collector.total += 1
            problems.append(PredictionProblem(number, "unmappable_sample", f"the sample: {how}"))
            continue
        texts = _lm_eval_texts(obj["resps"])
        if texts is None:
            collector.total += 1
            msg = (
                "resps is not one request's generated text (a loglikelihood or "
                "multiple-choice task): evalspec scores generated outputs"
            )
            problems.append(PredictionProblem(number, "not_generated_text", msg, task_id))
            continue
        if seen.get(task_id) == texts:
            continue  # the same doc logged under another filter: one prediction
        seen.setdefault(task_id, texts)
        collector.total += 1
        collector.add(number, task_id, texts, sampled=len(texts) > 1)


def _inspect_reader() -> Callable[..., Any]:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        msg = "reading an inspect log needs inspect_ai: pip install 'evalspec-contract[inspect]'"
        raise InspectNotInstalled(msg) from None
    return read_eval_log


def _read_inspect(data: bytes, collector: PredictionCollector, template: Template | None) -> None:
    read_eval_log = _inspect_reader()
    # An .eval log is a zip archive; a .json log is one JSON document.
    fmt = "eval" if data[:4] == b"PK\x03\x04" else "json"
    try:
        log = read_eval_log(io.BytesIO(data), format=fmt)
    except Exception as exc:  # inspect raises what its parsers raise
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RunLogError(f"not an inspect eval log ({fmt}): {reason}") from None
    samples = list(log.samples or [])
    if not samples:
        raise RunLogError("the inspect log holds no samples (written with --no-log-samples?)")
    by_task: dict[str, list[tuple[int, int, str]]] = {}
    order: list[str] = []
    problems = collector.problems
    for number, sample in enumerate(samples, start=1):
        collector.total += 1
        metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
        if template is None:
            found = metadata.get("task_id")
            task_id: str | None = found if isinstance(found, str) else str(sample.id)
        else:
            task_id = _fill(template, {"id": sample.id, "metadata": metadata})
        if task_id is None:
            shown = template.source if template is not None else ""
            msg = f"the sample: --id-template {shown!r} names a field the sample lacks"
            problems.append(PredictionProblem(number, "unmappable_sample", msg))
            continue
        if sample.error is not None:
            message = str(getattr(sample.error, "message", sample.error)).splitlines()
            msg = f"inspect recorded an error, not an output: {message[0] if message else ''}"
            problems.append(PredictionProblem(number, "sample_error", msg, task_id))
            continue
        completion = sample.output.completion if sample.output is not None else None
        if not isinstance(completion, str):
            msg = "the sample has no output text"
            problems.append(PredictionProblem(number, "not_generated_text", msg, task_id))
            continue
        if task_id not in by_task:
            order.append(task_id)
        by_task.setdefault(task_id, []).append((int(sample.epoch), number, completion))
    for task_id in order:
        # The epochs of one sample are its n samples: one prediction, not repeats.
        # Two samples mapped to the same id and epoch are a repeat: the first counts.
        kept: dict[int, tuple[int, str]] = {}
        for epoch, number, text in by_task[task_id]:
            if epoch in kept:
                msg = (
                    f"task_id {task_id!r} epoch {epoch} was already sample {kept[epoch][0]}; "
                    "the first is scored"
                )
                problems.append(PredictionProblem(number, "duplicate_task_id", msg, task_id))
                continue
            kept[epoch] = (number, text)
        runs = [kept[epoch] for epoch in sorted(kept)]
        collector.total -= len(runs) - 1
        first = min(number for number, _text in runs)
        texts = tuple(text for _number, text in runs)
        collector.add(first, task_id, texts, sampled=len(texts) > 1)
