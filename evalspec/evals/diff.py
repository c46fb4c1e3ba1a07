"""The change report of a dataset: tasks added, removed and changed, by layer.

Tasks are matched by ``task_id``. For a changed task every changed field is
listed (``metadata`` key by key, so a relabel reads ``metadata.difficulty:
easy -> hard``). Counts are broken down by category and by each metadata
label, so a reviewer sees which layers moved. Removals are flagged: the
discipline is to relabel an invalid task, not delete it. A task id that
appears more than once on a side is reported (only its first line is
compared).

Files are compared in memory proportional to their task ids, not their
tasks (:func:`diff_files`): one pass per file keeps each id's line, byte
offset and a digest of its line; only the tasks that differ are read again.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any

import attrs

from evalspec.evals.records import Records
from evalspec.io.jsonline import decode_bytes, parse_line
from evalspec.io.linelimit import OverlongLine, bounded_lines

KINDS = ("added", "removed", "changed")


@attrs.frozen
class FieldChange:
    """One field of one task, before and after."""

    field: str
    old: Any
    new: Any


@attrs.frozen
class TaskChange:
    """A task present on both sides whose record differs."""

    task_id: str
    changes: tuple[FieldChange, ...]
    old: Mapping[str, Any] = attrs.field(repr=False)
    new: Mapping[str, Any] = attrs.field(repr=False)


@attrs.define
class DatasetDiff:
    """The difference between two versions of a dataset."""

    old_label: str
    new_label: str
    old_total: int = 0
    new_total: int = 0
    added: list[Mapping[str, Any]] = attrs.Factory(list)
    removed: list[Mapping[str, Any]] = attrs.Factory(list)
    changed: list[TaskChange] = attrs.Factory(list)
    unmatched: dict[str, list[int]] = attrs.Factory(dict)
    """Side -> lines without a usable task_id (not JSON, not an object, no string id)."""
    repeated: dict[str, dict[str, list[int]]] = attrs.Factory(dict)
    """Side -> task id -> every line holding it, for ids on more than one line."""
    old_version: str | None = None
    new_version: str | None = None

    def by_category(self) -> dict[str, dict[str, int]]:
        """``category -> {added, removed, changed}``."""
        out: dict[str, dict[str, int]] = {}
        for kind, records in self._records_by_kind():
            for rec in records:
                cats = {str(r.get("category")) for r in rec}
                for cat in sorted(cats):
                    out.setdefault(cat, dict.fromkeys(KINDS, 0))[kind] += 1
        return dict(sorted(out.items()))

    def by_label(self) -> dict[str, dict[str, dict[str, int]]]:
        """``label -> value -> {added, removed, changed}``; a relabelled task counts in both."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for kind, records in self._records_by_kind():
            for rec in records:
                pairs = {pair for r in rec for pair in _labels(r)}
                for label, value in sorted(pairs):
                    row = out.setdefault(label, {}).setdefault(value, dict.fromkeys(KINDS, 0))
                    row[kind] += 1
        return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}

    def _records_by_kind(self) -> Iterable[tuple[str, list[list[Mapping[str, Any]]]]]:
        yield "added", [[r] for r in self.added]
        yield "removed", [[r] for r in self.removed]
        yield "changed", [[c.old, c.new] for c in self.changed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "old": self.old_label,
            "new": self.new_label,
            "old_version": self.old_version,
            "new_version": self.new_version,
            "old_total": self.old_total,
            "new_total": self.new_total,
            "counts": {k: len(getattr(self, k)) for k in KINDS},
            "added": [_summary(r) for r in self.added],
            "removed": [_summary(r) for r in self.removed],
            "changed": [
                {
                    "task_id": c.task_id,
                    "changes": [{"field": f.field, "old": f.old, "new": f.new} for f in c.changes],
                }
                for c in self.changed
            ],
            "by_category": self.by_category(),
            "by_label": self.by_label(),
            "unmatched_lines": self.unmatched,
            "repeated_ids": self.repeated,
        }


def _labels(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    meta = record.get("metadata")
    if not isinstance(meta, dict):
        return []
    return [(str(k), _scalar(v)) for k, v in meta.items() if _is_scalar(v)]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _summary(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "task_id": record["task_id"],
        "category": record.get("category"),
        "labels": dict(_labels(record)),
    }


def field_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldChange]:
    """The fields that differ, ``metadata`` compared key by key."""
    out = []
    for key in dict.fromkeys([*old, *new]):
        if key == "metadata" and isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
            a, b = old[key], new[key]
            for sub in dict.fromkeys([*a, *b]):
                if a.get(sub) != b.get(sub) or (sub in a) != (sub in b):
                    out.append(FieldChange(f"metadata.{sub}", a.get(sub), b.get(sub)))
        elif old.get(key) != new.get(key) or (key in old) != (key in new):
            out.append(FieldChange(key, old.get(key), new.get(key)))
    return out


@attrs.define
class _Side:
    """One side of a diff, kept compact: per task id a position into flat arrays of
    first line, byte offset, length and a 64-bit digest of the line (0: compare by
    value), and a function that reads the record at a position again."""

    index: dict[str, int] = attrs.Factory(dict)
    lines: array[int] = attrs.Factory(lambda: array("q"))
    offsets: array[int] = attrs.Factory(lambda: array("q"))
    lengths: array[int] = attrs.Factory(lambda: array("q"))
    digests: array[int] = attrs.Factory(lambda: array("Q"))
    repeats: dict[str, list[int]] = attrs.Factory(dict)
    unmatched: list[int] = attrs.Factory(list)
    total: int = 0
    load: Callable[[int], Mapping[str, Any]] = attrs.field(default=lambda at: {})

    def note(self, task_id: str, line: int, digest: int, offset: int, length: int) -> None:
        at = self.index.get(task_id)
        if at is None:
            self.index[task_id] = len(self.lines)
            self.lines.append(line)
            self.digests.append(digest)
            self.offsets.append(offset)
            self.lengths.append(length)
        else:
            self.repeats.setdefault(task_id, [self.lines[at]]).append(line)


def _records_side(records: Records) -> _Side:
    kept: list[Mapping[str, Any]] = []
    side = _Side(total=len(records.values) + len(records.unparsed), load=kept.__getitem__)
    side.unmatched.extend(records.unparsed)
    for line, value in records.values:
        if isinstance(value, dict) and isinstance(value.get("task_id"), str):
            if value["task_id"] not in side.index:
                kept.append(value)
            side.note(value["task_id"], line, 0, 0, 0)
        else:
            side.unmatched.append(line)
    return side


def _numbered(stream: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, raw line)``; an overlong line is the last one."""
    offset = 0
    for number, raw in enumerate(bounded_lines(stream), start=1):
        yield number, offset, raw
        offset += len(raw)


def _content(raw: bytes, number: int) -> bytes:
    raw = raw.removesuffix(b"\n").removesuffix(b"\r")
    return raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw


def _parse(raw: bytes) -> Any:
    """The JSON value of a line's content, or None when it is not a JSON line."""
    text, problem = decode_bytes(raw)
    if problem is not None or text is None:
        return None
    value, problems = parse_line(text)
    return None if problems else value


def _digest(content: bytes) -> int:
    # Never 0, which stands for "compare by value".
    return int.from_bytes(hashlib.blake2b(content, digest_size=8).digest(), "big") or 1


def _stream_side(stream: IO[bytes] | None) -> _Side:
    side = _Side()
    if stream is None:
        return side

    def load(at: int) -> Mapping[str, Any]:
        stream.seek(side.offsets[at])
        raw = stream.read(side.lengths[at])
        value: Mapping[str, Any] = _parse(_content(raw, side.lines[at]))
        return value

    side.load = load
    for number, offset, raw in _numbered(stream):
        if isinstance(raw, OverlongLine):
            side.total += 1
            side.unmatched.append(number)
            break
        content = _content(raw, number)
        text, problem = decode_bytes(content)
        if text is not None and not text.strip():
            continue  # a blank line
        side.total += 1
        value = None
        if problem is None and text is not None:
            value, problems = parse_line(text)
            if problems:
                value = None
        if isinstance(value, dict) and isinstance(value.get("task_id"), str):
            side.note(value["task_id"], number, _digest(content), offset, len(raw))
        else:
            side.unmatched.append(number)
    return side


def _brief(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the report keeps of an added, removed or changed task: id, category, labels."""
    out: dict[str, Any] = {"task_id": record["task_id"]}
    if "category" in record:
        out["category"] = record["category"]
    meta = record.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if _is_scalar(v)}
    return out


def _safe_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldChange]:
    try:
        return field_changes(old, new)
    except RecursionError:  # a task nested too deep for ==: it differs, somewhere
        return [FieldChange("(task)", "(nested too deep to show)", "(nested too deep to show)")]


def _diff_sides(a: _Side, b: _Side, old_label: str, new_label: str) -> DatasetDiff:
    diff = DatasetDiff(old_label, new_label, old_total=a.total, new_total=b.total)
    for name, side in (("old", a), ("new", b)):
        if side.unmatched:
            diff.unmatched[name] = sorted(side.unmatched)
        if side.repeats:
            diff.repeated[name] = side.repeats
    diff.added = [_brief(b.load(at)) for tid, at in b.index.items() if tid not in a.index]
    diff.removed = [_brief(a.load(at)) for tid, at in a.index.items() if tid not in b.index]
    for tid, at in b.index.items():
        old_at = a.index.get(tid)
        if old_at is None:
            continue
        digest = b.digests[at]
        if digest and digest == a.digests[old_at]:
            continue  # the very same line
        old_rec, new_rec = a.load(old_at), b.load(at)
        changes = _safe_changes(old_rec, new_rec)
        if changes:
            diff.changed.append(TaskChange(tid, tuple(changes), _brief(old_rec), _brief(new_rec)))
    return diff


def diff_records(old: Records, new: Records, old_label: str, new_label: str) -> DatasetDiff:
    """Compare two parsed versions of a dataset, matching tasks by ``task_id``."""
    return _diff_sides(_records_side(old), _records_side(new), old_label, new_label)


def diff_files(
    old: IO[bytes] | None, new: IO[bytes] | None, old_label: str, new_label: str
) -> DatasetDiff:
    """Compare two seekable binary files (None: the side does not exist).

    Memory is proportional to the task ids and the differences, not to the
    tasks: each file is read once, then only the differing tasks are read again.
    """
    return _diff_sides(_stream_side(old), _stream_side(new), old_label, new_label)


# -- Markdown --------------------------------------------------------------------------


def _short_pair(old: Any, new: Any, limit: int = 80) -> tuple[str, str]:
    """Both sides of a change, each at most about ``limit`` characters.

    Long values are cut around their first difference, not at their start:
    two targets that share a long opening would otherwise show identically.
    """
    texts = [json.dumps(value, ensure_ascii=False) for value in (old, new)]
    if all(len(text) <= limit for text in texts):
        return texts[0], texts[1]
    same = next(
        (i for i, (a, b) in enumerate(zip(*texts, strict=False)) if a != b),
        min(map(len, texts)),
    )
    start = max(0, same - 20)  # some shared context before the difference
    width = limit - 2  # room for the two ellipses

    def cut(text: str) -> str:
        head = "…" if start else ""
        tail = "…" if start + width < len(text) else ""
        return head + text[start : start + width] + tail

    return cut(texts[0]), cut(texts[1])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(diff: DatasetDiff, title: str) -> str:
    """A change report fit to paste into a pull request description."""
    n_add, n_rem, n_chg = len(diff.added), len(diff.removed), len(diff.changed)
    lines = [f"### Dataset change: `{title}`", ""]
    lines.append(
        f"`{diff.old_label}` → `{diff.new_label}`: **{n_add} added, {n_rem} removed, "
        f"{n_chg} changed** ({diff.old_total} → {diff.new_total} tasks)"
    )
    if diff.old_version is not None or diff.new_version is not None:
        old_v, new_v = diff.old_version or "none", diff.new_version or "none"
        note = "" if old_v != new_v or not (n_add or n_rem or n_chg) else " ⚠️ not bumped"
        lines.append(f"\nData card version: {old_v} → {new_v}{note}")
    if n_rem:
        lines += [
            "",
            f"> ⚠️ **{n_rem} task(s) removed.** The discipline is to relabel an "
            "invalid task (fix its targets or labels), not delete it; say why in the "
            "PR description.",
        ]
    for side, bad in sorted(diff.unmatched.items()):
        lines += [
            "",
            f"> {len(bad)} line(s) of the {side} side have no usable task_id and are "
            f"not compared (lines {', '.join(map(str, bad[:10]))}"
            f"{', …' if len(bad) > 10 else ''}).",
        ]
    for side, repeats in sorted(diff.repeated.items()):
        shown = [f"`{tid}` (lines {', '.join(map(str, ls))})" for tid, ls in repeats.items()]
        more = f", and {len(shown) - 10} more" if len(shown) > 10 else ""
        lines += [
            "",
            f"> ⚠️ **{len(repeats)} task id(s) repeated on the {side} side**: "
            f"{'; '.join(shown[:10])}{more}. Task ids must be unique; only the first "
            "line of each is compared.",
        ]
    if not (n_add or n_rem or n_chg):
        lines += ["", "No task changed."]
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "#### By category",
        "",
        "| category | added | removed | changed |",
        "|---|---:|---:|---:|",
    ]
    for cat, row in diff.by_category().items():
        lines.append(f"| {_cell(cat)} | {row['added']} | {row['removed']} | {row['changed']} |")
    by_label = diff.by_label()
    if by_label:
        lines += [
            "",
            "#### By label",
            "",
            "| label | value | added | removed | changed |",
            "|---|---|---:|---:|---:|",
        ]
        for label, values in by_label.items():
            for value, row in values.items():
                lines.append(
                    f"| {_cell(label)} | {_cell(value)} | {row['added']} | "
                    f"{row['removed']} | {row['changed']} |"
                )
    if diff.changed:
        lines += ["", "#### Changed", ""]
        for c in diff.changed:
            parts = [f"{f.field}: {' → '.join(_short_pair(f.old, f.new))}" for f in c.changes]
            lines.append(f"- `{c.task_id}`: " + "; ".join(parts))
    for kind, records in (("Added", diff.added), ("Removed", diff.removed)):
        if records:
            lines += ["", f"#### {kind}", ""]
            for r in records:
                labels = ", ".join(f"{k}={v}" for k, v in _labels(r))
                extra = f"; {labels}" if labels else ""
                lines.append(f"- `{r['task_id']}` ({r.get('category')}{extra})")
    return "\n".join(lines) + "\n"
