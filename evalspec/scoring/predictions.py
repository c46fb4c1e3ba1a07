"""Reading a predictions file: one ``{"task_id", "output"}`` JSON object per line.

A line may carry ``"outputs": [...]`` (n samples of the task, for pass@k)
instead of ``"output"``; each sample is post-processed and scored on its own.

Every line is checked, and every problem is reported with its line number; a
bad line never stops the file. Lines are read as the task validator reads
them: split at ``\\n`` (a ``\\r`` before it dropped), a UTF-8 BOM accepted at the
start, blank lines skipped but counted, strict JSON (no repeated keys, no
NaN). Keys other than ``task_id``, ``output`` and ``outputs`` are ignored, so a runner may
record the model, latency or token counts beside each output.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator
from types import MappingProxyType
from typing import Any

import attrs

from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.linelimit import OverlongLine, overlong_message
from evalspec.validation.validator import Source, line_content, read_lines

PREDICTION_RULES: MappingProxyType[str, str] = MappingProxyType(
    {
        "invalid_json": "the line is not valid JSON (or not valid UTF-8)",
        "duplicate_key": "a JSON object repeats a key",
        "not_object": "the line is valid JSON but not an object",
        "missing_field": "task_id is absent, or neither output nor outputs is there",
        "wrong_type": "task_id or output is not a string, or outputs not a list of strings",
        "conflicting_fields": "a line carries both output and outputs",
        "no_samples": "outputs is an empty list",
        "unknown_task": "task_id names no task of the tasks file",
        "duplicate_task_id": "a task_id already predicted on an earlier line (the first counts)",
    }
)
"""Rule code -> meaning, for every problem a predictions line can have."""


@attrs.frozen
class PredictionProblem:
    """Why one line of a predictions file was not used."""

    line: int
    rule: str
    message: str
    task_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Predictions:
    """The usable outputs (task id -> raw output) and the problems, by line.

    ``samples`` maps every predicted task to its raw outputs: one for an
    ``"output"`` line, n for an ``"outputs"`` line (those tasks are in
    ``sampled_ids``). ``outputs`` holds the first of them for every task, all
    there is for single-output predictions.
    ``for_invalid_tasks`` counts predictions whose task line was rejected by
    the validator: they are not problems of the predictions file, and are not
    scored.
    """

    outputs: MappingProxyType[str, str]
    problems: tuple[PredictionProblem, ...]
    total: int
    for_invalid_tasks: int = 0
    samples: MappingProxyType[str, tuple[str, ...]] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    sampled_ids: frozenset[str] = frozenset()

    @property
    def sampled(self) -> bool:
        """True when any line carried ``"outputs"`` (the report then gives pass@k)."""
        return bool(self.sampled_ids)

    def for_scoring(self) -> dict[str, str | tuple[str, ...]]:
        """Task id -> what :func:`evalspec.score_tasks` takes: the output, or the samples."""
        out: dict[str, str | tuple[str, ...]] = dict(self.outputs)
        for tid in self.sampled_ids:
            out[tid] = self.samples[tid]
        return out


MAX_SUGGESTIONS = 20
"""Unknown task ids that get a "did you mean" hint; later ones are reported without."""


def _samples(
    obj: dict[str, Any], line: int
) -> tuple[tuple[str, ...] | None, list[PredictionProblem]]:
    """The raw outputs of a line: ``(output,)`` or the ``outputs`` list."""
    if "output" in obj and "outputs" in obj:
        msg = "a line carries either output (one sample) or outputs (n samples), not both"
        return None, [PredictionProblem(line, "conflicting_fields", msg)]
    if "outputs" in obj:
        outputs = obj["outputs"]
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            # null samples included: a runner that got no answer for a sample
            # should leave it out (n is then smaller), not pretend it failed.
            msg = "outputs must be a list of strings (the samples)"
            return None, [PredictionProblem(line, "wrong_type", msg)]
        if not outputs:
            msg = "outputs is empty: leave the line out when a task has no sample"
            return None, [PredictionProblem(line, "no_samples", msg)]
        return tuple(outputs), []
    if "output" not in obj:
        msg = "required field 'output' (or 'outputs', a list of samples) is missing"
        # Runners name the answer differently ("answer", "completion", ...):
        # naming the keys the line does carry points at the one to rename.
        others = [k for k in obj if k != "task_id"]
        if others:
            # A hostile line's keys stay one short line: each cut to 40 characters.
            shown = (repr(k if len(k) <= 40 else k[:40] + "…") for k in others[:5])
            msg += f"; the line has {', '.join(shown)}"
            if len(others) > 5:
                msg += f" and {len(others) - 5} more"
            msg += ": rename the answer's key to 'output'"
        return None, [PredictionProblem(line, "missing_field", msg)]
    if not isinstance(obj["output"], str):
        # null included: a runner that got no answer should leave the line out,
        # and the task is then counted as missing.
        return None, [PredictionProblem(line, "wrong_type", "output must be a string")]
    return (obj["output"],), []


def _check(
    obj: Any, line: int
) -> tuple[str | None, tuple[str, ...] | None, list[PredictionProblem]]:
    if not isinstance(obj, dict):
        return None, None, [PredictionProblem(line, "not_object", "a prediction is a JSON object")]
    problems = []
    task_id = obj.get("task_id")
    if "task_id" not in obj:
        problems.append(
            PredictionProblem(line, "missing_field", "required field 'task_id' is missing")
        )
    samples, found = _samples(obj, line)
    problems.extend(found)
    if "task_id" in obj and not isinstance(task_id, str):
        problems.append(PredictionProblem(line, "wrong_type", "task_id must be a string"))
    tid = task_id if isinstance(task_id, str) else None
    if problems:
        return tid, None, [attrs.evolve(p, task_id=tid) for p in problems]
    return tid, samples, []


class PredictionCollector:
    """Admits one predicted task at a time, with the checks every predictions
    source shares: invalid tasks skipped, unknown ids and repeated ids reported.

    :func:`read_predictions` feeds it the lines of an evalspec predictions file;
    :mod:`evalspec.scoring.runlogs` feeds it the samples of another harness's
    run, numbered as that log numbers them.
    """

    def __init__(self, task_ids: Collection[str], invalid_task_ids: Collection[str] = ()) -> None:
        self._known = set(task_ids)
        self._rejected = set(invalid_task_ids) - self._known
        self._outputs: dict[str, str] = {}
        self._samples: dict[str, tuple[str, ...]] = {}
        self._sampled: set[str] = set()
        self._first_line: dict[str, int] = {}
        self.problems: list[PredictionProblem] = []
        self.total = 0
        self._skipped = self._unknown = 0

    def add(self, number: int, task_id: str, output: tuple[str, ...], *, sampled: bool) -> None:
        """Admit ``output`` (one raw output, or n samples when ``sampled``) for ``task_id``."""
        if task_id in self._rejected:
            self._skipped += 1
            return
        if task_id not in self._known:
            self._unknown += 1
            hint = ""
            # A suggestion costs a scan of every id: offer it for the first few
            # only, so a predictions file for the wrong dataset stays fast.
            if self._unknown <= MAX_SUGGESTIONS:
                close = difflib.get_close_matches(task_id, list(self._known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"task_id {task_id!r} is not a task of the tasks file{hint}"
            self.problems.append(PredictionProblem(number, "unknown_task", msg, task_id))
            return
        if task_id in self._first_line:
            msg = (
                f"task_id {task_id!r} was already predicted on line "
                f"{self._first_line[task_id]}; the first prediction is scored"
            )
            self.problems.append(PredictionProblem(number, "duplicate_task_id", msg, task_id))
            return
        self._first_line[task_id] = number
        self._outputs[task_id] = output[0]
        self._samples[task_id] = output
        if sampled:
            self._sampled.add(task_id)

    def result(self) -> Predictions:
        return Predictions(
            MappingProxyType(self._outputs),
            tuple(self.problems),
            self.total,
            self._skipped,
            MappingProxyType(self._samples),
            frozenset(self._sampled),
        )


def read_predictions(
    source: Source,
    task_ids: Collection[str],
    *,
    invalid_task_ids: Collection[str] = (),
) -> Predictions:
    """Read and check a predictions file against the ids of the valid tasks.

    :param source: a path, a binary file, or an iterable of byte lines.
    :param task_ids: the ids of the tasks being scored.
    :param invalid_task_ids: ids of task lines the validator rejected
        (with ``--allow-bad-tasks``); their predictions are skipped, not flagged.
    :raises OSError: the file cannot be read.
    """
    collector = PredictionCollector(task_ids, invalid_task_ids)
    for number, obj in json_objects(source, collector):
        collector.total += 1
        task_id, output, found = _check(obj, number)
        if found:
            collector.problems.extend(found)
            continue
        assert task_id is not None and output is not None
        collector.add(number, task_id, output, sampled="outputs" in obj)
    return collector.result()


def json_objects(source: Source, collector: PredictionCollector) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a JSON Lines source.

    A line that is overlong, not UTF-8 or not strict JSON is counted and
    reported to ``collector`` here; a yielded line is the caller's to count.
    """
    for number, raw in enumerate(read_lines(source), start=1):
        if isinstance(raw, OverlongLine):
            collector.total += 1
            collector.problems.append(PredictionProblem(number, "invalid_json", overlong_message()))
            continue
        text, problem = decode_bytes(line_content(raw, number))
        if problem is not None:
            collector.total += 1
            collector.problems.append(PredictionProblem(number, problem.rule, problem.message))
            continue
        assert text is not None
        if not text.strip():
            continue
        obj, parse_problems = parse_line(text)
        if parse_problems:
            collector.total += 1
            collector.problems.extend(
                PredictionProblem(number, p.rule, p.message) for p in parse_problems
            )
            continue
        yield number, obj
