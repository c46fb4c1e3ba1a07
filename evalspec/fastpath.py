"""The validator's fast path: vouch for the common valid line at parse speed.

:class:`FastPath` answers one question per line: *is this line certainly a
valid task (stages 1-5)?* It answers "yes" only when it can prove it, and
then returns the same decoded object the precise path
(:mod:`evalspec.validate`) would decode, so ``TaskSpec.from_dict`` gives the
same task. Every other line, valid or not, gets "don't know" (``None``) and
goes to the precise path, which alone writes error records. So the fast path
can never change a verdict; it can only make valid lines cheaper.

What the precise path guards against and how the fast path keeps each hole
closed:

- **Duplicate keys.** orjson and ``json.loads`` keep the last of two equal
  keys. Proof of absence by colon accounting: outside strings a ``:`` is
  only ever a key separator, so ``raw.count(b":") = K + C_raw`` where K is
  the number of key tokens in the text and C_raw the literal colons inside
  strings. The decoded object has P keys (P <= K, equal iff no key repeats)
  and its strings hold C' colons. If no string holds an escaped colon
  (``\\u003a``), C' <= C_raw, so ``P + C' == raw.count(b":")`` forces
  P == K: no duplicates. When the equation fails, the line goes to the
  precise path.
- **Integers beyond 64 bits.** orjson turns them into floats; stdlib keeps
  them as ints. A float in a valid task can only sit in ``metadata``; a
  float of magnitude >= 9e18 might be such an integer, so it is not vouched
  for. Smaller floats are genuine (an integer literal below 2**63 stays an
  int in orjson).
- **NaN, Infinity, 1e400.** orjson rejects them; with the stdlib parser
  they decode to non-finite floats, which the same magnitude test rejects.
- **Lone surrogates, invalid UTF-8, BOM, control characters.** orjson
  rejects them all. With the stdlib parser, a ``\\ud``/``\\uD`` escape anywhere
  sends the line to the precise path.
- **Nesting.** The precise parser's depth limit depends on the interpreter's
  stack; metadata nested deeper than :data:`MAX_DEPTH` is not vouched for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from evalspec.fewshot import find_embedded_few_shot
from evalspec.rules import MAX_FEW_SHOT
from evalspec.versions import SpecVersion

MAX_DEPTH = 64
"""Metadata nested deeper than this goes to the precise path."""

_BIG = 9e18  # below 2**63: an orjson float this small was written as a float
_REQUIRED = frozenset(("task_id", "category", "prompt", "targets", "metric_name", "post_process"))
_FIELDS = _REQUIRED | {"few_shot_examples", "metadata"}
_EXAMPLE_KEYS = frozenset(("prompt", "completion"))
_COLONS = (":", "\uff1a")
_MISSING: Any = object()

# category -> (allowed metrics, allowed rules, the single target set or None)
_Pairs = tuple[frozenset[str], frozenset[str], "frozenset[str] | None"]


def _orjson_loads() -> Callable[[bytes], Any] | None:
    try:
        import orjson
    except ImportError:  # the `fast` extra is optional; the stdlib parser is the fallback
        return None
    loads: Callable[[bytes], Any] = orjson.loads
    return loads


def _count_keys(node: Any, depth: int) -> int:
    """Keys in every object under ``node``; -1 when the node cannot be vouched for."""
    if depth > MAX_DEPTH:
        return -1
    t = type(node)
    if t is dict:
        n = len(node)
        values = node.values()
    elif t is list:
        n = 0
        values = node
    else:
        return -1
    for v in values:
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is float:
            if not -_BIG < v < _BIG:  # also false for NaN
                return -1
            continue
        k = _count_keys(v, depth + 1)
        if k < 0:
            return -1
        n += k
    return n


def _string_colons(node: Any) -> int:
    """Colons in every string (keys included) under ``node``."""
    t = type(node)
    if t is str:
        return int(node.count(":"))
    if t is dict:
        return sum(k.count(":") + _string_colons(v) for k, v in node.items())
    if t is list:
        return sum(_string_colons(v) for v in node)
    return 0


class FastPath:
    """Vouches for lines that are certainly valid tasks under one spec version."""

    __slots__ = ("_categories", "_loads", "_stdlib")

    def __init__(self, spec: SpecVersion, *, use_orjson: bool = True) -> None:
        metrics, rules = frozenset(spec.metrics), frozenset(spec.post_processes)
        self._categories: dict[str, _Pairs] = {
            name: (
                frozenset(cat.metrics) & metrics,
                frozenset(cat.post_processes) & rules,
                frozenset(cat.single_target_from) if cat.single_target_from else None,
            )
            for name, cat in spec.categories.items()
        }
        loads = _orjson_loads() if use_orjson else None
        self._stdlib = loads is None
        self._loads: Callable[[bytes], Any] = loads if loads is not None else json.loads

    @property
    def parser(self) -> str:
        """``"orjson"`` or ``"json"``: what the fast path parses with."""
        return "json" if self._stdlib else "orjson"

    def vouch(self, raw: bytes) -> dict[str, Any] | None:
        """The decoded task when ``raw`` (one line, with or without its end of line)
        is certainly valid at stages 1-5; otherwise ``None`` (ask the precise path)."""
        try:
            if self._stdlib:
                text = raw.decode("utf-8")
                if "\\ud" in text or "\\uD" in text:  # maybe a lone surrogate
                    return None
                obj = self._loads(text)  # type: ignore[arg-type]
            else:
                obj = self._loads(raw)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
            return None
        if type(obj) is not dict:
            return None
        keys = obj.keys()
        if not (keys >= _REQUIRED and keys <= _FIELDS):
            return None
        task_id = obj["task_id"]
        prompt = obj["prompt"]
        targets = obj["targets"]
        metric = obj["metric_name"]
        rule = obj["post_process"]
        if (
            type(task_id) is not str
            or type(prompt) is not str
            or type(metric) is not str
            or type(rule) is not str
            or type(targets) is not list
            or not targets
        ):
            return None
        category = obj["category"]
        if type(category) is not str:
            return None
        pairs = self._categories.get(category)
        if pairs is None:
            return None
        allowed_metrics, allowed_rules, single = pairs
        if metric not in allowed_metrics or rule not in allowed_rules:
            return None
        for t in targets:
            if type(t) is not str:
                return None
        if single is not None and (len(targets) != 1 or targets[0] not in single):
            return None
        if task_id.split() != [task_id]:  # empty, or holds whitespace
            return None
        if not prompt or prompt[-1].isspace():  # also covers a whitespace-only prompt
            return None
        keys_seen = len(obj)
        colons = prompt.count(":")
        exact_few_shot = False
        if prompt.endswith(_COLONS):
            # Rule (b) needs the cue (the last token) earlier in the prompt too.
            cue = prompt.rsplit(None, 1)[-1]
            exact_few_shot = prompt.find(cue) != len(prompt) - len(cue)
        examples = obj.get("few_shot_examples", _MISSING)
        pairs_list: list[tuple[str, str]] = []
        if examples is not _MISSING:
            if type(examples) is not list or len(examples) > MAX_FEW_SHOT:
                return None
            for ex in examples:
                if type(ex) is not dict or ex.keys() != _EXAMPLE_KEYS:
                    return None
                ex_prompt, completion = ex["prompt"], ex["completion"]
                if type(ex_prompt) is not str or type(completion) is not str:
                    return None
                pairs_list.append((ex_prompt, completion))
                colons += ex_prompt.count(":") + completion.count(":")
                if not exact_few_shot:
                    # Rule (a) needs every token of the rendered example in the prompt.
                    tokens = (ex_prompt + " " + completion).split()
                    exact_few_shot = bool(tokens) and all(tok in prompt for tok in tokens)
            keys_seen += 2 * len(examples)
        metadata = obj.get("metadata", _MISSING)
        if metadata is not _MISSING:
            if type(metadata) is not dict:
                return None
            k = _count_keys(metadata, 1)
            if k < 0:
                return None
            keys_seen += k
        if exact_few_shot and find_embedded_few_shot(prompt, pairs_list) is not None:
            return None
        return obj if self._no_duplicate_keys(raw, obj, keys_seen, colons) else None

    def _no_duplicate_keys(
        self, raw: bytes, obj: Mapping[str, Any], keys_seen: int, colons: int
    ) -> bool:
        raw_colons = raw.count(b":")
        if keys_seen + colons != raw_colons:
            # Colons in the rarer places: targets and metadata strings and keys.
            colons += _string_colons(obj["targets"]) + _string_colons(obj.get("metadata"))
            if keys_seen + colons != raw_colons:
                return False
        # An escaped colon could hide a repeated key; \u003 starts every such escape.
        return colons == 0 or b"\\u003" not in raw
