"""Gates: the red lines of ``config/gates.yaml`` checked against score reports.

``config/gates.yaml``::

    gates:
      main:                          # a dataset, as score reports name it
        exact_match: {min: 0.80, max_drop: 0.02}
      main[difficulty=hard]:         # a slice: a metadata label's value ...
        score: {min: 0.50}
      main[category=mcq]:            # ... or a category
        score: 0.70                  # a bare number is a minimum
      security_cases:
        accuracy: {min: 0.95}

A gate fails when the mean is below ``min``, or when it dropped more than
``max_drop`` below the baseline report's mean. A whole dataset is gated per
metric (``aggregates.by_metric``); a slice is gated on ``score``, the mean task
score of the slice (``aggregates.by_label`` / ``aggregates.by_category``), since
score reports do not break slices down by metric. The config is validated up
front: an unknown key, dataset or metric is an error, never a gate that
silently passes.

``pass@K`` (for example ``main: {pass@10: {min: 0.6}}``, or on a slice) gates
the mean pass@K over the dataset's (or slice's) tasks with a binary metric,
from the ``pass_at_k`` section of a report scored on n samples per task
(``evalspec score --pass-at K``); a report without that figure fails the gate.

A report (or baseline) with ``sandbox_error`` tasks, which the sandbox could
not run and which its means leave out, is refused (:func:`sandbox_errors`)
unless the caller accepts it (``evalspec gate --allow-sandbox-errors``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import EvalspecError
from evalspec.evals.yamlfile import YamlSyntaxError, load_mapping
from evalspec.io.wording import one_line
from evalspec.scoring.passatk import parse_name

REPORT_SCHEMA = "evalspec/score-report"
REPORT_SCHEMA_VERSION = 3
READABLE_SCHEMA_VERSIONS = (1, 2, 3)
"""Version 2 only added keys (samples, pass@k) and version 3 allows a ``null`` row score
(a sandbox error, which the means leave out), so every one of them still gates."""
_TARGET = re.compile(r"^(?P<dataset>[^\[\]\s]+)(?:\[(?P<label>[^=\]\s]+)=(?P<value>[^\]]+)\])?$")
_THRESHOLD_KEYS = ("min", "max_drop")
SLICE_METRIC = "score"
"""What a slice is gated on: the mean task score of the slice, whatever its metrics."""


class GateConfigError(EvalspecError):
    """``gates.yaml`` is invalid; ``problems`` holds one ``(line, message)`` per problem."""

    def __init__(self, path: str, problems: Sequence[tuple[int, str]]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{path}:{line}: {msg}" for line, msg in self.problems))


class ReportError(EvalspecError):
    """A score report cannot be used."""


@attrs.frozen
class Gate:
    """One red line: a dataset (or slice of it), a metric and its thresholds."""

    dataset: str
    metric: str
    min: float | None
    max_drop: float | None
    label: str | None = None
    value: str | None = None
    line: int = 1

    @property
    def name(self) -> str:
        where = f"{self.dataset}[{self.label}={self.value}]" if self.label else self.dataset
        return f"{where} {self.metric}"


@attrs.frozen
class Verdict:
    """The outcome of one check of one gate."""

    gate: Gate
    check: str
    """``min``, ``max_drop`` or ``data`` (the figure could not be found)."""
    passed: bool | None
    """``None``: not checked (a drop gate without a baseline)."""
    figure: float | None
    threshold: float | None
    message: str
    baseline: float | None = None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer YAML or JSON takes, beyond any float
        return None
    return number if math.isfinite(number) else None


def parse_gates(
    text: str,
    path: str,
    *,
    datasets: Collection[str] | None,
    metrics: Collection[str],
    labels: Mapping[str, Collection[str]] | None = None,
    categories: Collection[str] | None = None,
) -> list[Gate]:
    """Parse and validate ``gates.yaml``.

    :param datasets: the known dataset names (``None``: not known, not checked).
    :param metrics: the known metric names.
    :param labels: legal values per label (``None``: slices by label are not checked).
    :param categories: the known categories (``None``: not checked).
    :raises GateConfigError: with every problem at once.
    """
    try:
        mapping = load_mapping(text, what=path)
    except YamlSyntaxError as exc:
        raise GateConfigError(path, [(exc.line, exc.message)]) from None
    problems: list[tuple[int, str]] = []
    for key in mapping.data:
        if key != "gates":
            problems.append((mapping.line_of(key), f"unknown key {key!r}; the file holds 'gates'"))
    raw = mapping.data.get("gates")
    if not isinstance(raw, dict) or not raw:
        problems.append(
            (
                mapping.line_of("gates"),
                "'gates' must map datasets to metrics to "
                "thresholds, e.g. main: {exact_match: {min: 0.8}}",
            )
        )
        raise GateConfigError(path, problems)
    gates: list[Gate] = []
    for target, per_metric in raw.items():
        line = mapping.line_at("gates", str(target))
        m = _TARGET.match(str(target))
        if m is None:
            problems.append((line, f"{target!r} is not NAME or NAME[label=value]"))
            continue
        dataset = m["dataset"]
        if datasets is not None and dataset not in datasets:
            known = ", ".join(sorted(datasets)) or "none"
            problems.append((line, f"unknown dataset {dataset!r} (datasets: {known})"))
        problems.extend((line, msg) for msg in _slice_problems(m, labels, categories))
        if not isinstance(per_metric, dict) or not per_metric:
            problems.append((line, f"{target}: give at least one metric with its thresholds"))
            continue
        for metric, spec in per_metric.items():
            mline = mapping.line_at("gates", str(target), str(metric))
            is_pass_at = parse_name(str(metric)) is not None
            if m["label"] is not None and metric != SLICE_METRIC and not is_pass_at:
                problems.append(
                    (
                        mline,
                        f"{target}: a slice is gated on {SLICE_METRIC!r} (the mean task score "
                        f"of the slice), not {metric!r}: score reports do not break slices "
                        "down by metric",
                    )
                )
                continue
            if m["label"] is None and metric not in metrics and not is_pass_at:
                known = ", ".join(sorted(metrics))
                problems.append((mline, f"unknown metric {metric!r} (metrics: {known}; or pass@K)"))
                continue
            if not isinstance(spec, dict):
                spec = {"min": spec}
            for key in spec:
                if key not in _THRESHOLD_KEYS:
                    problems.append(
                        (
                            mline,
                            f"{target} {metric}: unknown threshold {key!r} "
                            "(thresholds: min, max_drop)",
                        )
                    )
            lo = _number(spec.get("min")) if "min" in spec else None
            drop = _number(spec.get("max_drop")) if "max_drop" in spec else None
            if "min" in spec and (lo is None or not 0 <= lo <= 1):
                problems.append(
                    (
                        mline,
                        f"{target} {metric}: min must be a number in [0, 1], found {spec['min']!r}",
                    )
                )
            if "max_drop" in spec and (drop is None or not 0 <= drop <= 1):
                problems.append(
                    (
                        mline,
                        f"{target} {metric}: max_drop must be a number in "
                        f"[0, 1], found {spec['max_drop']!r}",
                    )
                )
            if "min" not in spec and "max_drop" not in spec:
                problems.append((mline, f"{target} {metric}: give min, max_drop or both"))
            gates.append(Gate(dataset, str(metric), lo, drop, m["label"], m["value"], mline))
    if problems:
        raise GateConfigError(path, problems)
    return gates


def _slice_problems(
    m: re.Match[str],
    labels: Mapping[str, Collection[str]] | None,
    categories: Collection[str] | None,
) -> list[str]:
    label, value = m["label"], m["value"]
    if label is None:
        return []
    if label == "category":
        if categories is not None and value not in categories:
            return [f"unknown category {value!r} (categories: {', '.join(sorted(categories))})"]
        return []
    if labels is None:
        return []
    if label not in labels:
        known = ", ".join(sorted(labels)) or "none"
        return [f"unknown label {label!r} (labels in config/labels.yaml: {known}; or category)"]
    if value not in labels[label]:
        return [f"{label}={value!r} is not a legal value (legal: {', '.join(labels[label])})"]
    return []


def load_report(path: Path, text: str | bytes | None = None) -> dict[str, Any]:
    """Read and check one score report (``text``, when given, is its content: standard
    input has no path to read).

    :raises ReportError: unreadable, not JSON, or not an ``evalspec/score-report`` of a version this
        evalspec reads (:data:`READABLE_SCHEMA_VERSIONS`).
    """
    from evalspec.io.repository import OutsideRootError
    from evalspec.io.safeload import MAX_JSON_BYTES, DocumentError, loads_json, read_in_repository

    try:
        raw = read_in_repository(path, MAX_JSON_BYTES) if text is None else text
        if len(raw) > MAX_JSON_BYTES:
            raise DocumentError(f"{path} is larger than the {MAX_JSON_BYTES >> 20} MiB limit")
        data = loads_json(raw)
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except OutsideRootError as exc:
        raise ReportError(f"cannot read {exc}") from None
    except DocumentError as exc:
        # "is not JSON" as before the limits existed; scripts match on it.
        raise ReportError(
            exc.about(str(path)).replace(" is not valid JSON", " is not JSON")
        ) from None
    if not isinstance(data, dict) or data.get("schema") != REPORT_SCHEMA:
        raise ReportError(f'{path} is not a score report ("schema": "{REPORT_SCHEMA}")')
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        readable = ", ".join(map(str, READABLE_SCHEMA_VERSIONS))
        raise ReportError(
            f"{path}: unsupported score-report schema_version "
            f"{version!r} (this evalspec reads {readable})"
        )
    if not isinstance(data.get("dataset"), str):
        raise ReportError(f"{path}: the report names no dataset")
    if not isinstance(data.get("aggregates"), dict):
        raise ReportError(f"{path}: the report has no aggregates")
    return data


def by_dataset(reports: Sequence[tuple[Path, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Reports keyed by dataset; two reports of one dataset are an error."""
    out: dict[str, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    for path, report in reports:
        name = report["dataset"]
        if name in out:
            raise ReportError(f"{where[name]} and {path} both report dataset {name!r}")
        out[name], where[name] = report, path
    return out


def _stats(report: Mapping[str, Any], gate: Gate) -> Mapping[str, Any] | None:
    agg = report.get("aggregates", {})
    stats: Any
    if parse_name(gate.metric) is not None:
        figures = _get(report, "pass_at_k", gate.metric)
        if gate.label is None:
            stats = _get(figures, "all")
        elif gate.label == "category":
            stats = _get(figures, "by_category", gate.value)
        else:
            stats = _get(figures, "by_label", gate.label, gate.value)
    elif gate.label is None:
        stats = _get(agg, "by_metric", gate.metric)
    elif gate.label == "category":
        stats = _get(agg, "by_category", gate.value)
    else:
        stats = _get(agg, "by_label", gate.label, gate.value)
    return stats if isinstance(stats, dict) else None


def _get(node: Any, *keys: str | None) -> Any:
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _mean(stats: Mapping[str, Any] | None) -> float | None:
    return None if stats is None else _number(stats.get("mean"))


def check(
    gates: Sequence[Gate],
    reports: Mapping[str, Mapping[str, Any]],
    baselines: Mapping[str, Mapping[str, Any]] | None,
) -> list[Verdict]:
    """Every check of every gate, in config order."""
    out: list[Verdict] = []
    for gate in gates:
        report = reports.get(gate.dataset)
        if report is None:
            out.append(
                Verdict(
                    gate, "data", False, None, None, f"no score report for dataset {gate.dataset!r}"
                )
            )
            continue
        stats = _stats(report, gate)
        mean = _mean(stats)
        if mean is None:
            out.append(
                Verdict(
                    gate,
                    "data",
                    False,
                    None,
                    None,
                    f"the report of {gate.dataset!r} has no {gate.name} score",
                )
            )
            continue
        n = stats.get("count") if stats else None
        ci = stats.get("ci95") if stats else None
        extra = f" (n={n}" + (f", ci95 {_fmt_ci(ci)})" if _fmt_ci(ci) else ")") if n else ""
        if gate.min is not None:
            ok = mean >= gate.min
            op = ">=" if ok else "<"
            out.append(
                Verdict(
                    gate,
                    "min",
                    ok,
                    mean,
                    gate.min,
                    f"mean {mean:.4f} {op} min {gate.min:.4f}{extra}",
                )
            )
        if gate.max_drop is not None:
            if baselines is None:
                out.append(
                    Verdict(
                        gate,
                        "max_drop",
                        None,
                        mean,
                        gate.max_drop,
                        f"max_drop {gate.max_drop:.4f} not checked: no --baseline",
                    )
                )
                continue
            base_report = baselines.get(gate.dataset)
            base = _mean(_stats(base_report, gate)) if base_report is not None else None
            if base is None:
                out.append(
                    Verdict(
                        gate,
                        "max_drop",
                        False,
                        mean,
                        gate.max_drop,
                        f"the baseline has no {gate.name} score to compare with",
                    )
                )
                continue
            drop = base - mean
            ok = drop <= gate.max_drop + 1e-12  # float noise must not fail an exact-limit drop
            op = "<=" if ok else ">"
            out.append(
                Verdict(
                    gate,
                    "max_drop",
                    ok,
                    mean,
                    gate.max_drop,
                    f"drop {drop:.4f} (baseline {base:.4f} -> {mean:.4f}) {op} "
                    f"max_drop {gate.max_drop:.4f}",
                    baseline=base,
                )
            )
    return out


def _fmt_ci(ci: Any) -> str:
    if isinstance(ci, list) and len(ci) == 2 and all(_number(x) is not None for x in ci):
        return f"[{ci[0]:.4f}, {ci[1]:.4f}]"
    return ""


def tally(verdicts: Sequence[Verdict]) -> str:
    """``3 passed, 1 skipped, 0 failed``: every count, always, so a check that was not
    made is never read as one that passed."""
    failed = sum(1 for v in verdicts if v.passed is False)
    skipped = sum(1 for v in verdicts if v.passed is None)
    return f"{len(verdicts) - failed - skipped} passed, {skipped} skipped, {failed} failed"


def _cell(text: str) -> str:
    """``text`` for a Markdown table cell: control characters escaped, pipes too."""
    return one_line(text).replace("|", "\\|")


def to_markdown(verdicts: Sequence[Verdict]) -> str:
    """A gate summary for a pull request or a CI job summary."""
    head = f"**Gate checks: {tally(verdicts)}**"
    lines = [
        "### Eval gates",
        "",
        head,
        "",
        "| result | gate | check | detail |",
        "|---|---|---|---|",
    ]
    for v in verdicts:
        mark = {True: "pass", False: "**FAIL**", None: "not checked"}[v.passed]
        lines.append(f"| {mark} | `{_cell(v.gate.name)}` | {v.check} | {_cell(v.message)} |")
    return "\n".join(lines) + "\n"


GATE_SCHEMA = "evalspec/gate-report"
GATE_SCHEMA_VERSION = 2
"""2: ``sandbox_errors`` (per report and baseline) and ``refused``."""
_RESULTS = {True: "pass", False: "fail", None: "skip"}
REFUSED_SANDBOX_ERRORS = "sandbox_errors"
"""``refused`` of a gate run that checked nothing: a report or baseline had sandbox errors."""


def to_json(
    verdicts: Sequence[Verdict],
    *,
    config: str,
    uncovered: Sequence[str] = (),
    compared_anyway: Sequence[str] = (),
    sandbox_errors: Sequence[SandboxErrors] = (),
    refused: str | None = None,
) -> dict[str, Any]:
    """The gate run as one JSON object (``gate --format json``; the schema is in
    docs/gates.md). Every key is always present, in this order, so a tool
    reads ``counts.failed`` or ``checks[i].result`` without guessing;
    ``config`` names the gates file read, ``uncovered`` the reports' datasets no
    gate covers, ``compared_anyway`` the differences ``--allow-incomparable``
    let through, ``sandbox_errors`` each report or baseline holding tasks the
    sandbox could not run, and ``refused`` why nothing was checked
    (:data:`REFUSED_SANDBOX_ERRORS`), ``None`` when the gates were checked. A
    refused run has not passed."""
    failed = sum(1 for v in verdicts if v.passed is False)
    skipped = sum(1 for v in verdicts if v.passed is None)
    return {
        "schema": GATE_SCHEMA,
        "schema_version": GATE_SCHEMA_VERSION,
        "config": config,
        "passed": failed == 0 and refused is None,
        "counts": {
            "passed": len(verdicts) - failed - skipped,
            "skipped": skipped,
            "failed": failed,
        },
        "checks": [
            {
                "gate": v.gate.name,
                "dataset": v.gate.dataset,
                "label": v.gate.label,
                "value": v.gate.value,
                "metric": v.gate.metric,
                "check": v.check,
                "result": _RESULTS[v.passed],
                "figure": v.figure,
                "threshold": v.threshold,
                "baseline": v.baseline,
                "message": v.message,
                "line": v.gate.line,
            }
            for v in verdicts
        ],
        "uncovered": list(uncovered),
        "compared_anyway": list(compared_anyway),
        "sandbox_errors": [
            {"dataset": e.dataset, "role": e.role, "tasks": e.tasks} for e in sandbox_errors
        ],
        "refused": refused,
    }


def _facts(report: Mapping[str, Any]) -> dict[str, Any]:
    """What must agree for a report's figures to be compared with a baseline's."""
    provenance = report.get("provenance")
    prov = provenance if isinstance(provenance, dict) else {}
    metrics = _get(report, "aggregates", "by_metric")
    return {
        "tasks_sha256": prov.get("tasks_sha256"),
        "spec version": prov.get("spec_version"),
        "metrics": sorted(metrics) if isinstance(metrics, dict) else None,
        "number of tasks": _get(report, "counts", "tasks"),
    }


def incomparable(
    reports: Mapping[str, Mapping[str, Any]], baselines: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """One message per fact on which a dataset's report and its baseline differ
    (scored on other tasks, at another spec version, on other metrics or another
    number of tasks): their figures say nothing about a drop."""
    out = []
    for name in sorted(set(reports) & set(baselines)):
        now, then = _facts(reports[name]), _facts(baselines[name])
        for fact in now:
            if now[fact] != then[fact]:
                out.append(
                    f"dataset {name!r}: the report and the baseline differ in {fact} "
                    f"({json.dumps(now[fact])} vs {json.dumps(then[fact])})"
                )
    return out


def _sandbox_error_count(report: Mapping[str, Any]) -> int:
    """Tasks of a report the sandbox could not run: from its counts, else its rows."""
    counted_ = _get(report, "counts", "sandbox_errors")
    if isinstance(counted_, int) and not isinstance(counted_, bool) and counted_ > 0:
        return counted_
    rows = report.get("rows")
    found = 0
    for row in rows if isinstance(rows, list) else []:
        detail = row.get("detail") if isinstance(row, dict) else None
        if isinstance(detail, dict) and (
            detail.get("status") == "sandbox_error" or detail.get("sandbox_errors")
        ):
            found += 1
    return found


@attrs.frozen
class SandboxErrors:
    """A report (``role`` ``"report"``) or baseline (``"baseline"``) of ``dataset``
    holding ``tasks`` tasks the sandbox could not run."""

    dataset: str
    role: str
    tasks: int

    @property
    def message(self) -> str:
        return (
            f"dataset {self.dataset!r}: the {self.role} has {self.tasks} "
            f"task{'' if self.tasks == 1 else 's'} with sandbox_error "
            "(not run: its means leave them out)"
        )


def sandbox_error_counts(
    reports: Mapping[str, Mapping[str, Any]], baselines: Mapping[str, Mapping[str, Any]]
) -> list[SandboxErrors]:
    """Every report, then every baseline, holding tasks the sandbox could not run
    (by dataset name): its means are over the other tasks only, so no gate can be
    checked on it."""
    out = []
    for role, group in (("report", reports), ("baseline", baselines)):
        for name in sorted(group):
            n = _sandbox_error_count(group[name])
            if n:
                out.append(SandboxErrors(name, role, n))
    return out


def sandbox_errors(
    reports: Mapping[str, Mapping[str, Any]], baselines: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """One message per report or baseline holding tasks the sandbox could not run."""
    return [e.message for e in sandbox_error_counts(reports, baselines)]
