"""``evalspec export lm-eval``: an evalspec task file as an lm-evaluation-harness task.

The export is a task directory lm-eval loads with ``--include_path DIR``:

- ``NAME.jsonl``, the task file exactly as validated (its SHA-256 is recorded);
- ``NAME.yaml``, an lm-eval task config (``generate_until``, no few-shot of
  lm-eval's own, no stop sequence: evalspec's rule extracts the answer);
- ``evalspec_NAME.py``, the functions the config names: ``load`` (the docs, after
  checking the file's checksum and validating every line again), ``doc_to_text``
  (evalspec's rendered prompt, few-shot examples included: the single rendering
  path), ``doc_to_target`` and ``process_results`` (the task's own post-process
  rule and metric through evalspec's scorer, code_exec in evalspec's sandbox).

Each doc is ``{"task_id", "task"}``, the task line as a JSON string: lm-eval keeps
docs in a ``datasets`` table, which cannot hold tasks whose metadata differ in
shape. ``process_results`` returns ``{METRIC: score}`` under the task's own metric,
so lm-eval's mean of each metric is ``evalspec score``'s
``aggregates.overall.METRIC.mean``, and the ``--log_samples`` file it writes
carries ``doc.task_id``, which ``evalspec score --predictions-format lm-eval`` maps.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path

import attrs

from evalspec.errors import EvalspecError
from evalspec.io.atomicfile import write_atomic
from evalspec.registry.build import Registry
from evalspec.validation.messages import format_error
from evalspec.validation.validator import validate_file

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


class ExportError(EvalspecError):
    """The export cannot be written: invalid tasks, a bad name, or a directory in the way."""


@attrs.frozen(slots=True)
class Export:
    """What :func:`export_lm_eval` wrote."""

    directory: Path
    task_name: str
    files: tuple[Path, ...]
    tasks: int
    metrics: tuple[str, ...]


def export_lm_eval(
    tasks_path: str | os.PathLike[str],
    directory: str | os.PathLike[str],
    *,
    registry: Registry,
    name: str | None = None,
    allow_code_exec: bool = False,
    force: bool = False,
) -> Export:
    """Write the lm-eval task directory for the task file at ``tasks_path``.

    :raises ExportError: a task line is invalid (each is listed), the name is not
        an identifier, a code-executing task without ``allow_code_exec``, or
        ``directory`` exists and is not empty (without ``force``).
    :raises OSError: a file cannot be read or written.
    """
    source = Path(tasks_path)
    task_name = name if name is not None else source.stem
    if not _NAME.match(task_name):
        msg = (
            f"task name {task_name!r} must start with a letter and hold only letters, "
            "digits and _ (at most 64): pass --name"
        )
        raise ExportError(msg)
    data = source.read_bytes()
    validation = validate_file(io.BytesIO(data), registry=registry)
    if validation.errors:
        lines = [format_error(str(source), e) for e in validation.errors]
        raise ExportError("\n".join([*lines, f"{source}: refusing to export invalid tasks"]))
    if not validation.validated:
        raise ExportError(f"{source} holds no task to export")
    metrics = tuple(sorted({t.metric_name for t in validation.validated}))
    code = [m for m in metrics if registry.metric(m).sandboxed]
    if code and not allow_code_exec:
        msg = (
            f"{source} holds tasks whose metric executes the model's output as code "
            f"({', '.join(code)}); pass --allow-code-exec to let the export run them "
            "in evalspec's sandbox"
        )
        raise ExportError(msg)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ExportError(f"{out} is not empty (pass --force to replace the export in it)")
    out.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(data).hexdigest()
    module = f"evalspec_{task_name}"
    files: dict[Path, bytes | str] = {
        out / f"{task_name}.jsonl": data,
        out / f"{module}.py": _module(task_name, digest, registry.version, allow_code_exec),
        out / f"{task_name}.yaml": _config(task_name, module, metrics, digest, registry.version),
    }
    for path, content in files.items():
        write_atomic(path, content, root=out)
    return Export(out, task_name, tuple(files), len(validation.validated), metrics)


def _config(name: str, module: str, metrics: tuple[str, ...], digest: str, version: int) -> str:
    # JSON strings are YAML strings: no YAML library is needed to write a safe config.
    lines = [
        f"# Written by evalspec export lm-eval from {name}.jsonl (sha256 {digest}).",
        "# Regenerate it rather than edit it: the prompt, rule and metric are evalspec's.",
        f"task: {json.dumps(name)}",
        f"custom_dataset: !function {module}.load",
        "test_split: test",
        "output_type: generate_until",
        "num_fewshot: 0",
        f"doc_to_text: !function {module}.doc_to_text",
        f"doc_to_target: !function {module}.doc_to_target",
        f"process_results: !function {module}.process_results",
        'target_delimiter: ""',
        "generation_kwargs:",
        "  until: []",
        "metric_list:",
    ]
    for metric in metrics:
        lines += [
            f"  - metric: {json.dumps(metric)}",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    lines += [
        "metadata:",
        "  version: 1",
        f"  evalspec_spec_version: {version}",
        f"  tasks_sha256: {json.dumps(digest)}",
    ]
    return "\n".join(lines) + "\n"


def _module(name: str, digest: str, version: int, allow_code_exec: bool) -> str:
    return _MODULE.format(
        name=json.dumps(name),
        digest=json.dumps(digest),
        version=version,
        allow=allow_code_exec,
    )


_MODULE = '''"""lm-eval task functions for {name}, written by evalspec export lm-eval.

Regenerate rather than edit: the prompt, the post-process rule and the metric
are evalspec's, so lm-eval scores this task exactly as `evalspec score` does.
"""

import hashlib
import io
import json
from pathlib import Path

TASKS = Path(__file__).with_name({name} + ".jsonl")
TASKS_SHA256 = {digest}
SPEC_VERSION = {version}
ALLOW_CODE_EXEC = {allow}

_state = {{}}


def _tasks():
    if "tasks" not in _state:
        from evalspec.registry.build import default_registry
        from evalspec.validation.validator import validate_file

        data = TASKS.read_bytes()
        if hashlib.sha256(data).hexdigest() != TASKS_SHA256:
            raise RuntimeError(
                f"{{TASKS}} changed since it was exported (sha256 differs): "
                "run evalspec export lm-eval again"
            )
        registry = default_registry(SPEC_VERSION)
        result = validate_file(io.BytesIO(data), registry=registry)
        if result.errors:
            raise RuntimeError(f"{{TASKS}} has invalid tasks: run evalspec validate on it")
        _state["registry"] = registry
        _state["tasks"] = {{t.task_id: t for t in result.validated}}
        _state["lines"] = [line for line in data.decode("utf-8-sig").splitlines() if line.strip()]
    return _state["tasks"]


def load(**kwargs):
    import datasets

    _tasks()
    rows = [{{"task_id": json.loads(line)["task_id"], "task": line}} for line in _state["lines"]]
    return datasets.DatasetDict({{"test": datasets.Dataset.from_list(rows)}})


def doc_to_text(doc):
    from evalspec.scoring.render import render

    return render(_tasks()[doc["task_id"]])


def doc_to_target(doc):
    return _tasks()[doc["task_id"]].targets[0]


def process_results(doc, results):
    from evalspec.scoring.scorer import open_sandbox, score_task

    task = _tasks()[doc["task_id"]]
    registry = _state["registry"]
    sandbox = None
    if registry.metric(task.metric_name).sandboxed:
        if "sandbox" not in _state:
            _state["sandbox"] = open_sandbox(ALLOW_CODE_EXEC)
        sandbox = _state["sandbox"]
    scored = score_task(
        task, results[0], registry=registry, allow_code_exec=ALLOW_CODE_EXEC, sandbox=sandbox
    )
    return {{scored.metric: scored.score}}
'''
