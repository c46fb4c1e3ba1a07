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
import re
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

FORMATS = ("evalspec", "lm-eval", "inspect")
"""What ``evalspec score --predictions-format`` reads."""

RUN_LOG_RULES = {
    "unmappable_sample": "a harness sample carries no task id evalspec can find",
    "not_generated_text": "a harness sample's response is not generated text "
    "(a loglikelihood or multiple-request task)",
    "sample_error": "the harness recorded an error instead of an output for the sample",
}
"""Rule code -> meaning, for the problems only a harness's run log can have."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[^{}.+]+)?)(?:\+([0-9]{1,6}))?\}")
"""``{name}``, ``{name.FIELD}``, and ``{doc_id+1}``: lm-eval counts docs from 0,
``evalspec import`` numbers rows (``@row``) from 1."""


class RunLogError(EvalspecError):
    """A run log cannot be read at all (not the format it was said to be)."""


class InspectNotInstalled(RunLogError):
    """Reading an inspect log needs inspect_ai, which is not installed."""


def check_template(template: str, fields: Collection[str]) -> None:
    """Refuse a template with a placeholder other than ``fields`` or ``FIELD.NAME``.

    :raises RunLogError: naming the first unknown placeholder.
    """
    for name, offset in _PLACEHOLDER.findall(template):
        head = name.split(".", 1)[0]
        if offset and name != "doc_id":
            msg = f"--id-template: {{{name}+{offset}}}: only {{doc_id+N}} takes an offset"
            raise RunLogError(msg)
        if head not in fields or ("." in name) == (head in ("doc_id", "id")):
            allowed = ", ".join(
                "{" + f + "}" if f in ("doc_id", "id") else "{" + f + ".FIELD}" for f in fields
            )
            msg = f"--id-template: unknown placeholder {{{name}}} (use {allowed})"
            raise RunLogError(msg)
    if not _PLACEHOLDER.search(template):
        msg = f"--id-template {template!r} has no placeholder: every sample would get one id"
        raise RunLogError(msg)


def _fill(template: str, values: Mapping[str, Any]) -> str | None:
    """The template with each placeholder's value, or None when one is absent or not scalar."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        head, _, field = match.group(1).partition(".")
        found = values.get(head)
        if field:
            found = found.get(field) if isinstance(found, Mapping) else None
        if isinstance(found, bool) or not isinstance(found, (str, int)):
            missing = True
            return ""
        if match.group(2):
            if not isinstance(found, int):
                missing = True
                return ""
            found += int(match.group(2))
        return str(found)

    filled = _PLACEHOLDER.sub(value, template)
    return None if missing else filled


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
        if id_template is not None:
            check_template(id_template, ("doc_id", "doc"))
        _read_lm_eval(data, collector, id_template)
    elif fmt == "inspect":
        if id_template is not None:
            check_template(id_template, ("id", "metadata"))
        _read_inspect(data, collector, id_template)
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


def _read_lm_eval(data: bytes, collector: PredictionCollector, template: str | None) -> None:
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
            how = f"--id-template {template!r} names a field the record lacks"
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


def _read_inspect(data: bytes, collector: PredictionCollector, template: str | None) -> None:
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
            msg = f"the sample: --id-template {template!r} names a field the sample lacks"
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
