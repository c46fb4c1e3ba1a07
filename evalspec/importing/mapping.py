"""The mapping file of ``evalspec import``: how one benchmark row becomes one task.

A YAML (``.yaml``, ``.yml``) or TOML (``.toml``) document, in the spirit of an
lm-evaluation-harness task YAML: ``prompt`` is its ``doc_to_text``, ``target`` /
``targets`` its ``doc_to_target``, ``choices`` its ``doc_to_choice``, ``few_shot``
its ``fewshot_split`` with ``num_fewshot`` (the first rows, in order, as lm-eval's
``first_n`` sampler takes them). The values are templates
(:mod:`evalspec.template`); ``category``, ``metric`` and ``post_process``
are names, checked by the validator on every task. The document is read as a
stranger's input (:mod:`evalspec.io.safeload`): bounded, safe YAML, and every
problem is one :class:`MappingError` line naming the key.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from evalspec.errors import EvalspecError
from evalspec.io.repository import inside
from evalspec.io.safeload import MAX_YAML_BYTES, DocumentError, loads_yaml, read_bounded
from evalspec.rules import MAX_FEW_SHOT
from evalspec.template import Template, TemplateSyntaxError, compile_template

FORMATS = ("jsonl", "csv", "parquet")
"""The row shapes public benchmarks ship in."""

SPECIALS = ("@row", "@stem", "@choices")
"""The names a template may use besides the row's columns."""

_KEYS = (
    "spec_version",
    "format",
    "columns",
    "task_id",
    "category",
    "metric",
    "post_process",
    "prompt",
    "target",
    "targets",
    "choices",
    "few_shot",
    "metadata",
    "preamble",
    "code_protocol",
)
_FEW_SHOT_KEYS = ("path", "count", "prompt", "completion", "columns")


class MappingError(EvalspecError):
    """The mapping file cannot be used; the message names the file and the key."""


@attrs.frozen
class FewShotSource:
    """The rows the few-shot examples are taken from: the first ``count`` of ``path``."""

    path: Path
    count: int
    prompt: Template
    completion: Template
    columns: tuple[str, ...] | None


@attrs.frozen
class ImportMapping:
    """A read mapping file: every template compiled, every name a string."""

    path: Path
    spec_version: int
    task_id: Template
    category: str
    metric: str
    post_process: str
    prompt: Template
    targets: tuple[Template, ...]
    format: str | None = None
    columns: tuple[str, ...] | None = None
    choices: tuple[Template, ...] = ()
    few_shot: FewShotSource | None = None
    metadata: tuple[tuple[str, Template], ...] = ()
    preamble: Template | None = None
    code_protocol: str | None = None


def _load(path: Path) -> Any:
    try:
        raw = read_bounded(path, MAX_YAML_BYTES)
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise MappingError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise MappingError(f"{path} is not UTF-8 (byte {exc.start})") from None
    except DocumentError as exc:
        raise MappingError(exc.about(str(path))) from None
    if path.suffix == ".toml":
        # By name: tomllib is standard from Python 3.11; on 3.10 the base
        # dependency tomli provides the same API.
        tomllib = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise MappingError(f"{path} is not valid TOML: {exc}") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            return loads_yaml(text)
        except DocumentError as exc:
            raise MappingError(exc.about(str(path))) from None
    raise MappingError(f"{path}: a mapping file is .yaml, .yml or .toml")


class _Reader:
    """Typed access to the document's keys, each problem a :class:`MappingError`."""

    def __init__(self, path: Path, doc: Mapping[str, Any], where: str = "") -> None:
        self.path, self.doc, self.where = path, doc, where

    def fail(self, key: str, message: str) -> MappingError:
        return MappingError(f"{self.path}: {self.where}{key}: {message}")

    def text(self, key: str, *, required: bool = True) -> str | None:
        value = self.doc.get(key)
        if value is None:
            if required:
                raise self.fail(key, "is required")
            return None
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, found {type(value).__name__}")
        return value

    def name(self, key: str) -> str:
        value = self.text(key)
        assert value is not None
        if not value.strip():
            raise self.fail(key, "is empty")
        return value

    def template(self, key: str, source: Any = None) -> Template:
        text = self.text(key) if source is None else source
        if not isinstance(text, str):
            raise self.fail(key, f"must be a string template, found {type(text).__name__}")
        try:
            return compile_template(text, SPECIALS)
        except TemplateSyntaxError as exc:
            raise self.fail(key, str(exc)) from None

    def templates(self, key: str) -> tuple[Template, ...]:
        """A list of templates, or one template (a single hole may name a list)."""
        value = self.doc.get(key)
        if isinstance(value, str):
            return (self.template(key),)
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a template or a non-empty list of templates")
        return tuple(self.template(f"{key}[{i}]", v) for i, v in enumerate(value))

    def columns(self) -> tuple[str, ...] | None:
        value = self.doc.get("columns")
        if value is None:
            return None
        if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
            raise self.fail("columns", "must be a non-empty list of column names")
        if len(set(value)) != len(value):
            raise self.fail("columns", "names a column twice")
        return tuple(value)

    def unknown(self, known: tuple[str, ...]) -> None:
        import difflib

        for key in self.doc:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.fail(str(key), f"unknown key (known: {', '.join(known)}){hint}")


def _few_shot(reader: _Reader, base: Path) -> FewShotSource | None:
    doc = reader.doc.get("few_shot")
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise reader.fail("few_shot", "must be a table of path, count, prompt, completion")
    sub = _Reader(reader.path, doc, "few_shot.")
    sub.unknown(_FEW_SHOT_KEYS)
    rel = sub.name("path")
    count = doc.get("count")
    # Every task carries a copy of the examples: a count past the spec's limit would
    # build a huge file only for the validator to reject every task of it.
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_FEW_SHOT:
        raise sub.fail("count", f"must be a whole number of examples from 1 to {MAX_FEW_SHOT}")
    # The mapping comes from a pull request: its few-shot rows are read from beside it,
    # never from wherever an absolute path or a symlink points.
    target = base / rel
    if os.path.isabs(rel) or not inside(os.path.realpath(base), os.path.realpath(target)):
        raise sub.fail("path", f"{rel!r} leads outside the mapping's directory {base}")
    return FewShotSource(
        path=target,
        count=count,
        prompt=sub.template("prompt"),
        completion=sub.template("completion"),
        columns=sub.columns() if "columns" in doc else reader.columns(),
    )


def read_mapping(path: str | os.PathLike[str]) -> ImportMapping:
    """The mapping at ``path``. :raises MappingError: one line, naming the key at fault."""
    path = Path(path)
    doc = _load(path)
    if not isinstance(doc, dict):
        raise MappingError(f"{path}: a mapping file is a table of keys (spec_version, prompt, ...)")
    reader = _Reader(path, doc)
    reader.unknown(_KEYS)
    version = doc.get("spec_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise reader.fail("spec_version", "is required: the spec version the tasks are written at")
    fmt = reader.text("format", required=False)
    if fmt is not None and fmt not in FORMATS:
        raise reader.fail("format", f"{fmt!r} is not one of {', '.join(FORMATS)}")
    if ("target" in doc) == ("targets" in doc):
        raise reader.fail("target", "give exactly one of target (one template) or targets")
    targets = (reader.template("target"),) if "target" in doc else reader.templates("targets")
    metadata = doc.get("metadata", {})
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise reader.fail("metadata", "must be a table of key: template")
    preamble = doc.get("preamble")
    return ImportMapping(
        path=path,
        spec_version=version,
        task_id=reader.template("task_id"),
        category=reader.name("category"),
        metric=reader.name("metric"),
        post_process=reader.name("post_process"),
        prompt=reader.template("prompt"),
        targets=targets,
        format=fmt,
        columns=reader.columns(),
        choices=reader.templates("choices") if "choices" in doc else (),
        few_shot=_few_shot(reader, path.parent),
        metadata=tuple((k, reader.template(f"metadata.{k}", v)) for k, v in metadata.items()),
        preamble=None if preamble is None else reader.template("preamble"),
        code_protocol=reader.text("code_protocol", required=False),
    )


__all__ = ["FORMATS", "FewShotSource", "ImportMapping", "MappingError", "read_mapping"]
