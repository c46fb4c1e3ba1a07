"""The score report: rows, grouped statistics, counts and provenance.

:func:`build_report` returns the report as a JSON-ready ``dict`` following the
versioned schema documented in ``docs/score-report.md`` (``"schema":
"evalspec/score-report"``, ``"schema_version": 3``); :func:`format_report`
renders it as JSON, plain text or Markdown. Everything in it is a function of
the inputs and the seed: no timestamps, no host names, sorted group keys, so
two runs on the same files give byte-identical JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from typing import Any

from evalspec._version import __version__
from evalspec.io.wording import counted, one_line
from evalspec.model import TaskSpec
from evalspec.registry.build import Registry, default_registry
from evalspec.scoring.intervals import DEFAULT_RESAMPLES, summarize
from evalspec.scoring.predictions import PredictionProblem
from evalspec.scoring.samples import TaskSamples, check_ks, pass_at_aggregates
from evalspec.scoring.scorer import TaskScore
from evalspec.scoring.unparsed import extracts

SCHEMA = "evalspec/score-report"
SCHEMA_VERSION = 3
"""2: rows of sampled tasks (``"outputs"``) carry their samples, and pass@k for binary metrics.
3: a row's (or sample's) ``score`` may be ``null``: an output the sandbox could not run
(``sandbox_error``), counted in ``counts.sandbox_errors`` and in no mean."""
FORMATS = ("text", "json", "markdown")


def _label_value(value: Any) -> str | None:
    """A metadata value as a group key; ``None`` for values that do not group (lists, objects)."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return None


MAX_LABEL_VALUES = 20
"""An undeclared metadata key with more distinct values than this is not a label."""
MAX_LABELS = 16
"""At most this many undeclared metadata keys become labels (the fewest values first)."""


def label_keys(
    tasks: Sequence[TaskSpec], declared: Sequence[str] | None = None
) -> tuple[tuple[str, ...], list[str]]:
    """The metadata keys the report groups by, sorted, and a note per key it does not.

    ``declared`` (the keys of the layout's ``config/labels.yaml``) decides when
    given: those keys and no other. Without it, a key is a label only when it
    has low cardinality: at most :data:`MAX_LABEL_VALUES` distinct groupable
    values, fewer than the tasks carrying it (a value per task is an id, not a
    label) unless a single task carries it, and at most :data:`MAX_LABELS` such
    keys, those with the fewest values first. So an ``entry_point`` or a source
    URL in metadata never makes one group per task.
    """
    if declared is not None:
        return tuple(sorted(set(declared))), []
    values: dict[str, set[str]] = {}
    carriers: dict[str, int] = {}
    for task in tasks:
        for key, value in task.metadata.items():
            seen = values.setdefault(key, set())  # a key of lists only: noted, not grouped
            group = _label_value(value)
            if group is None:
                continue
            if len(seen) <= MAX_LABEL_VALUES:  # enough to know it is too many
                seen.add(group)
            carriers[key] = carriers.get(key, 0) + 1
    notes = []
    fit = []
    for key in sorted(values):
        n = len(values[key])
        if n > MAX_LABEL_VALUES:
            notes.append(
                f"metadata key {key!r} has more than {MAX_LABEL_VALUES} distinct "
                "values: not grouped as a label (declare labels in config/labels.yaml)"
            )
        elif n >= carriers.get(key, 0) > 1:
            notes.append(
                f"metadata key {key!r} has a different value on every task: not "
                "grouped as a label (declare labels in config/labels.yaml)"
            )
        else:
            fit.append(key)
    fit.sort(key=lambda k: (len(values[k]), k))
    for key in sorted(fit[MAX_LABELS:]):
        notes.append(
            f"metadata key {key!r} not grouped as a label: at most {MAX_LABELS} "
            "undeclared keys are (declare labels in config/labels.yaml)"
        )
    return tuple(sorted(fit[:MAX_LABELS])), notes


def reference_packages(registry: Registry) -> list[str]:
    """The distributions behind the registry's metrics, as the metrics declare them, sorted."""
    return sorted({p for m in registry.metrics.values() for p in m.reference_packages})


def _target_notes(tasks: Sequence[TaskSpec], registry: Registry) -> list[str]:
    """Tasks a metric cannot score meaningfully, by the metric's own ``target_check``."""
    notes = []
    for name in sorted(registry.metrics):
        metric = registry.metrics[name]
        if metric.target_check is None:
            continue
        check = metric.target_check
        hit = [t.task_id for t in tasks if t.metric_name == name and check(t.targets)]
        if hit:
            shown = ", ".join(hit[:5]) + (f" and {len(hit) - 5} more" if len(hit) > 5 else "")
            why = metric.caveat or "the metric cannot score these targets meaningfully"
            notes.append(f"{name}: {counted(len(hit), 'task')} ({shown}): {why}")
    return notes


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _group_stats(
    groups: Mapping[str, list[float]], *, seed: int, resamples: int, prefix: str
) -> dict[str, Any]:
    return {
        name: summarize(groups[name], seed=seed, key=f"{prefix}/{name}", resamples=resamples)
        for name in sorted(groups)
    }


def build_report(
    tasks: Sequence[TaskSpec],
    scores: Sequence[TaskScore],
    *,
    dataset: str = "tasks",
    seed: int = 0,
    bootstrap: int = DEFAULT_RESAMPLES,
    registry: Registry | None = None,
    invalid_tasks: int = 0,
    prediction_problems: Sequence[PredictionProblem] = (),
    tasks_sha256: str | None = None,
    predictions_sha256: str | None = None,
    notes: Iterable[str] = (),
    pass_at: Sequence[int] | None = None,
    executor: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    labels: Sequence[str] | None = None,
    predictions_format: str = "evalspec",
) -> dict[str, Any]:
    """The report of one scoring run as a JSON-ready dict (schema version 2).

    :param tasks: the scored tasks, in the order of ``scores``.
    :param scores: what :func:`evalspec.score_tasks` returned for them.
    :param seed: the seed of every bootstrap interval.
    :param bootstrap: resamples per interval (0: no intervals).
    :param invalid_tasks: task lines the validator rejected (``--allow-bad-tasks``).
    :param prediction_problems: the problems found in the predictions file.
    :param tasks_sha256: checksums of the input files, for provenance.
    :param notes: extra human-readable notes to carry in the report.
    :param pass_at: the ``k`` of each pass@k to report for binary metrics
        (default: ``[1]`` when any task was scored on samples, else none, so a
        single-output report is what it was).
    :param executor: where sandboxed programs ran, when not on this machine
        (``{"executor", "nodes", "node_tiers"}``), recorded in provenance.
    :param limits: each sandboxed program's limits (the fields of
        :class:`evalspec.sandbox.Limits`), recorded in provenance.
    :param labels: the metadata keys to group by (the layout's declared labels);
        default: the low-cardinality keys :func:`label_keys` picks.
    :param predictions_format: what the predictions file was (``evalspec``, or
        the harness run log it was read from: ``lm-eval``, ``inspect``).
    :raises ValueError: ``tasks`` and ``scores`` do not describe the same tasks.
    :raises PassAtKError: a ``k`` above the samples of a predicted binary task.
    """
    if [t.task_id for t in tasks] != [s.task_id for s in scores]:
        msg = "tasks and scores must list the same tasks in the same order"
        raise ValueError(msg)
    if bootstrap < 0:
        msg = f"bootstrap resamples must be 0 or more, got {bootstrap}"
        raise ValueError(msg)
    reg = default_registry() if registry is None else registry
    sampled = any(s.samples is not None for s in scores)
    ks = _pass_at_ks(pass_at, sampled, scores)
    note_list = list(notes)
    note_list.extend(_target_notes(tasks, reg))
    keys, label_notes = label_keys(tasks, labels)
    note_list.extend(label_notes)

    by_metric: dict[str, list[float]] = {}
    by_category: dict[str, list[float]] = {}
    by_label: dict[str, dict[str, list[float]]] = {}
    ungrouped: dict[str, int] = {}
    unparsed: dict[str, dict[str, int]] = {}
    tiers: set[str] = set()
    for task, row in zip(tasks, scores, strict=True):
        # A task the sandbox could not run has no score: its group is listed
        # (count 0 when it is the only one) but the task is in no mean.
        values = [] if row.score is None else [row.score]
        by_metric.setdefault(row.metric, []).extend(values)
        by_category.setdefault(row.category, []).extend(values)
        for label in keys:
            if label not in task.metadata:
                continue
            key = _label_value(task.metadata[label])
            if key is None:
                ungrouped[label] = ungrouped.get(label, 0) + 1
                continue
            by_label.setdefault(label, {}).setdefault(key, []).extend(values)
        rule = reg.post_processors.get(row.post_process)
        if rule is not None and extracts(rule):
            per_rule = unparsed.setdefault(row.category, {})
            # Counted per output: a sampled task adds each unparsed sample.
            found = (
                int(row.unparsed)
                if row.samples is None
                else sum(1 for x in row.samples if x.unparsed)
            )
            per_rule[row.post_process] = per_rule.get(row.post_process, 0) + found
        if row.detail is not None and "isolation_tier" in row.detail:
            tiers.add(str(row.detail["isolation_tier"]))
    for label in sorted(ungrouped):
        note_list.append(
            f"metadata label {label!r} holds a list or object on {ungrouped[label]} tasks; "
            "those tasks are not grouped by it"
        )

    metric_stats = _group_stats(by_metric, seed=seed, resamples=bootstrap, prefix="metric")
    corpus: dict[str, float | None] = {}
    for name in sorted(reg.metrics):
        metric = reg.metrics[name]
        if metric.corpus_scorer is None:
            continue
        items = [
            (t, s)
            for t, s in zip(tasks, scores, strict=True)
            if s.metric == name and s.score is not None
        ]
        if not items:
            corpus[name] = None
            note_list.append(f"corpus {name} is null: no task uses metric {name!r}")
            continue
        # A missing prediction enters the corpus as an empty hypothesis: it
        # matches nothing and its references still count, as its score of 0 does.
        corpus[name] = metric.corpus_scorer(
            [s.prediction if s.prediction is not None else "" for _, s in items],
            [t.targets for t, _ in items],
        )

    missing = sum(1 for s in scores if s.missing)
    errored = [s for s in scores if s.sandbox_errors]
    if errored:
        note_list.append(_sandbox_error_note(errored))
    code_exec: dict[str, Any] | None = (
        {"isolation_tier": ", ".join(sorted(tiers))} if tiers else None
    )
    if code_exec is not None and executor is not None:
        code_exec.update(executor)
    if code_exec is not None and limits is not None:
        code_exec["limits"] = dict(limits)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "dataset": dataset,
        "provenance": {
            "spec_version": reg.version,
            "tasks_sha256": tasks_sha256,
            "predictions_sha256": predictions_sha256,
            "predictions_format": predictions_format,
            "evalspec_version": __version__,
            "plugins": {name: reg.plugins[name] for name in sorted(reg.plugins)},
            "reference_packages": {p: _package_version(p) for p in reference_packages(reg)},
            "seed": seed,
            "bootstrap_resamples": bootstrap,
            "ci_method": "percentile bootstrap of the mean, 95%, linear interpolation",
            "code_exec": code_exec,
        },
        "rows": [_row(s, ks) for s in scores],
        "aggregates": {
            "overall": metric_stats,
            "by_category": _group_stats(
                by_category, seed=seed, resamples=bootstrap, prefix="category"
            ),
            "by_metric": metric_stats,
            "by_label": {
                label: _group_stats(
                    by_label[label], seed=seed, resamples=bootstrap, prefix=f"label/{label}"
                )
                for label in sorted(by_label)
            },
        },
        "corpus": corpus,
        "counts": {
            "tasks": len(scores),
            "scored": len(scores) - missing - len(errored),
            "missing": missing,
            "sandbox_errors": len(errored),
            "invalid_tasks": invalid_tasks,
            "invalid_predictions": len({(p.line) for p in prediction_problems}),
        },
        "unparsed": {cat: dict(sorted(unparsed[cat].items())) for cat in sorted(unparsed)},
        "prediction_problems": [p.to_dict() for p in prediction_problems],
        "notes": note_list,
    }
    if sampled:
        report["counts"]["samples"] = sum(s.n for s in scores)
    if ks:
        binary_items = [
            TaskSamples(
                t.task_id,
                s.metric,
                s.category,
                _labels(t, keys),
                s.n,
                s.correct,
            )
            for t, s in zip(tasks, scores, strict=True)
            if s.binary and not s.sandbox_errors
        ]
        report["pass_at_k"] = {
            "k": list(ks),
            "estimator": "unbiased, Chen et al. 2021: 1 - C(n-c, k) / C(n, k), as a product",
            **pass_at_aggregates(binary_items, ks, seed=seed, resamples=bootstrap),
        }
    return report


def _sandbox_error_note(errored: Sequence[TaskScore]) -> str:
    shown = ", ".join(s.task_id for s in errored[:5])
    more = f" and {len(errored) - 5} more" if len(errored) > 5 else ""
    outputs = sum(s.sandbox_errors for s in errored)
    return (
        f"{counted(len(errored), 'task')} ({shown}{more}) had sandbox_error: the sandbox "
        f"could not run {counted(outputs, 'output')} (the machine's failure, not the "
        "program's), so they have no score, are left out of every mean and of pass@k, "
        "and the run should be repeated for them"
    )


def _labels(task: TaskSpec, keys: Sequence[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for label in keys:
        key = _label_value(task.metadata[label]) if label in task.metadata else None
        if key is not None:
            out.append((label, key))
    return tuple(out)


def _pass_at_ks(
    pass_at: Sequence[int] | None, sampled: bool, scores: Sequence[TaskScore]
) -> tuple[int, ...]:
    from evalspec.scoring.passatk import normalize_ks

    if pass_at is None:
        return (1,) if sampled else ()
    ks = normalize_ks(pass_at)
    check_ks(ks, {s.task_id: s.n for s in scores if s.binary and not s.missing})
    return ks


def _row(score: TaskScore, ks: Sequence[int]) -> dict[str, Any]:
    row = score.to_dict()
    if ks and score.binary:
        from evalspec.scoring.passatk import metric_name, pass_at_k

        if score.sandbox_errors:
            # c counts correct samples of n that ran: with one not run there is no c.
            row["pass_at"] = {metric_name(k): None for k in ks}
            row["pass_at_reason"] = (
                f"{score.sandbox_errors} of {score.n} outputs had sandbox_error: "
                "the task has no pass@k"
            )
        else:
            row["pass_at"] = {
                metric_name(k): 0.0 if score.missing else pass_at_k(score.n, score.correct, k)
                for k in ks
            }
    return row


# -- rendering -------------------------------------------------------------------


def to_json(report: Mapping[str, Any]) -> str:
    """The report as JSON text: strict (``allow_nan=False``), UTF-8 characters kept."""
    return json.dumps(report, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def _num(value: float | None) -> str:
    return "null" if value is None else f"{value:.4f}"


def _corpus_rows(report: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The corpus figures some task measured (null ones are only in JSON and the notes)."""
    return [(name, value) for name, value in report["corpus"].items() if value is not None]


def _ci(stat: Mapping[str, Any]) -> str:
    ci = stat.get("ci95")
    return "-" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _short(text: str | None, limit: int = 60) -> str:
    if text is None:
        return "(missing)"
    shown = json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _stat_rows(report: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(grouping, group, stat) for every aggregate, in report order."""
    agg = report["aggregates"]
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    out.extend(("metric", name, stat) for name, stat in agg["by_metric"].items())
    out.extend(("category", name, stat) for name, stat in agg["by_category"].items())
    for label, values in agg["by_label"].items():
        out.extend((f"label {label}", value, stat) for value, stat in values.items())
    return out


def _pass_rows(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(group, stat) for every pass@k figure, in report order (none without samples)."""
    section = report.get("pass_at_k")
    if not section:
        return []
    out: list[tuple[str, Mapping[str, Any]]] = []
    for k in section["k"]:
        name = f"pass@{k}"
        figures = section[name]
        out.append((f"{name} all", figures["all"]))
        out.extend((f"{name} metric {m}", st) for m, st in figures["by_metric"].items())
        out.extend((f"{name} category {c}", st) for c, st in figures["by_category"].items())
        for label, values in figures["by_label"].items():
            out.extend((f"{name} label {label} {v}", st) for v, st in values.items())
    return out


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    c = report["counts"]
    prov = report["provenance"]
    lines = [
        f"dataset {report['dataset']}: {counted(c['tasks'], 'task')}, {c['scored']} scored, "
        f"{c['missing']} missing, {c['invalid_tasks']} invalid tasks, "
        f"{c['invalid_predictions']} invalid predictions"
        # A report from before sandbox errors were counted has no such key.
        + (f", {c['sandbox_errors']} sandbox errors" if "sandbox_errors" in c else ""),
        f"spec version {prov['spec_version']}, evalspec {prov['evalspec_version']}, "
        f"seed {prov['seed']}, {prov['bootstrap_resamples']} bootstrap resamples",
    ]
    # From the Python API there may be no file to hash: say so rather than print None.
    for name in ("tasks", "predictions"):
        digest = prov[f"{name}_sha256"]
        lines.append(f"{name} sha256 {digest if digest is not None else 'not recorded (no file)'}")
    if prov["code_exec"] is not None:
        lines.append(f"code_exec isolation tier: {prov['code_exec']['isolation_tier']}")
        if "executor" in prov["code_exec"]:
            ce = prov["code_exec"]
            tiers = ", ".join(ce["node_tiers"])
            lines.append(f"code_exec executor: {ce['executor']}, {ce['nodes']} nodes ({tiers})")
        if "limits" in prov["code_exec"]:
            shown = ", ".join(f"{k} {v}" for k, v in prov["code_exec"]["limits"].items())
            lines.append(f"code_exec limits: {shown}")
    if "samples" in c:
        lines.append(f"{c['samples']} samples scored")
    return lines


def _text(report: Mapping[str, Any]) -> str:
    lines = _summary_lines(report)
    lines.append("")
    lines.append(f"{'group':<32} {'count':>6} {'mean':>8}  ci95")
    for grouping, name, stat in _stat_rows(report):
        label = f"{grouping} {name}"
        lines.append(f"{label:<32} {stat['count']:>6} {_num(stat['mean']):>8}  {_ci(stat)}")
    for label, stat in _pass_rows(report):
        lines.append(f"{label:<32} {stat['count']:>6} {_num(stat['mean']):>8}  {_ci(stat)}")
    # A null corpus figure means no task uses that metric (the notes say so);
    # a "corpus bleu_4: null" row would read as a failed measurement.
    for name, value in _corpus_rows(report):
        lines.append(f"corpus {name}: {_num(value)}")
    if report["unparsed"]:
        lines.append("")
        lines.append("unparsed outputs (the rule found no answer, or several different ones):")
        for cat, rules in report["unparsed"].items():
            for rule, count in rules.items():
                lines.append(f"  {cat} {rule}: {count}")
    if report["prediction_problems"]:
        lines.append("")
        lines.append("prediction problems:")
        for p in report["prediction_problems"]:
            lines.append(f"  line {p['line']}: {p['rule']} — {p['message']}")
    for note in report["notes"]:
        lines.append(f"note: {note}")
    lines.append("")
    lines.append(f"{'task_id':<20} {'category':<15} {'metric':<12} {'score':>7}  prediction")
    for row in report["rows"]:
        lines.append(
            f"{row['task_id']:<20} {row['category']:<15} {row['metric']:<12} "
            f"{_score(row['score']):>7}  {_short(row['prediction'])}"
        )
        lines.extend(f"    {line}" for line in _failure_lines(row))
    # Names and values come from task files and predictions: a line holding a
    # control character (a newline in a label value, an escape sequence in a task
    # id) is shown JSON-quoted, so it can neither split its line nor draw on a terminal.
    return "\n".join(one_line(line) for line in lines) + "\n"


def _score(value: float | None) -> str:
    """A row's score; ``none`` for a task the sandbox could not run."""
    return "none" if value is None else f"{value:.4f}"


def _failure_lines(row: Mapping[str, Any]) -> list[str]:
    """The row's one-line failure, then each sample's that did not pass (text, markdown)."""
    detail = row.get("detail") or {}
    lines = []
    if detail.get("failure"):
        lines.append(one_line(str(detail["failure"])))
    for i, sample in enumerate(row.get("samples") or [], 1):
        failure = (sample.get("detail") or {}).get("failure")
        if failure:
            lines.append(f"sample {i}: {one_line(str(failure))}")
    if row.get("pass_at_reason"):
        lines.append(one_line(str(row["pass_at_reason"])))
    return lines


def _md(text: str) -> str:
    """``text`` for a Markdown table cell: a control character (a line break, an
    escape sequence) shows JSON-escaped, a pipe cannot end the cell."""
    return one_line(text).replace("\\", "\\\\").replace("|", "\\|")


def _markdown(report: Mapping[str, Any]) -> str:
    lines = [f"# Score report: {_md(report['dataset'])}", ""]
    lines.extend(f"- {_md(line)}" for line in _summary_lines(report))
    lines += ["", "## Aggregates", "", "| group | count | mean | 95% CI |", "|---|---:|---:|---|"]
    for grouping, name, stat in _stat_rows(report):
        lines.append(
            f"| {_md(grouping)} {_md(name)} | {stat['count']} | {_num(stat['mean'])} "
            f"| {_ci(stat)} |"
        )
    for label, stat in _pass_rows(report):
        lines.append(f"| {_md(label)} | {stat['count']} | {_num(stat['mean'])} | {_ci(stat)} |")
    if corpus := _corpus_rows(report):
        lines += ["", "| corpus metric | value |", "|---|---:|"]
        lines.extend(f"| {name} | {_num(v)} |" for name, v in corpus)
    if report["unparsed"]:
        lines += ["", "## Unparsed outputs", "", "| category | rule | count |", "|---|---|---:|"]
        for cat, rules in report["unparsed"].items():
            lines.extend(f"| {cat} | {rule} | {count} |" for rule, count in rules.items())
    if report["prediction_problems"]:
        lines += ["", "## Prediction problems", ""]
        lines.extend(
            f"- line {p['line']}: `{p['rule']}` {_md(p['message'])}"
            for p in report["prediction_problems"]
        )
    if report["notes"]:
        lines += ["", "## Notes", ""]
        lines.extend(f"- {_md(n)}" for n in report["notes"])
    lines += [
        "",
        "## Tasks",
        "",
        "| task_id | category | metric | score | prediction | failure |",
        "|---|---|---|---:|---|---|",
    ]
    for row in report["rows"]:
        # A failure quotes the program's own message: no HTML of it reaches a renderer.
        failure = "<br>".join(_md(line).replace("<", "&lt;") for line in _failure_lines(row))
        lines.append(
            f"| {_md(row['task_id'])} | {row['category']} | {row['metric']} "
            f"| {_score(row['score'])} | {_md(_short(row['prediction']))} | {failure} |"
        )
    return "\n".join(lines) + "\n"


def format_report(report: Mapping[str, Any], fmt: str = "text") -> str:
    """Render a report as ``"json"``, ``"text"`` or ``"markdown"``."""
    if fmt == "json":
        return to_json(report)
    if fmt == "text":
        return _text(report)
    if fmt == "markdown":
        return _markdown(report)
    msg = f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})"
    raise ValueError(msg)
