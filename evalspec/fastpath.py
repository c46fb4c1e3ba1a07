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
  them as ints. A float in a valid task can only sit in ``metadata``; such a
  float has magnitude >= 2**63, which ``orjson.dumps`` writes with an
  exponent, so metadata whose serialization holds ``e+`` is not vouched for
  (smaller floats are genuine: an integer literal below 2**63 stays an int).
- **NaN, Infinity, 1e400.** orjson rejects them; with the stdlib parser
  they decode to non-finite floats, which only ``metadata`` could hold, and
  its walk rejects them.
- **Lone surrogates, invalid UTF-8, BOM, control characters.** orjson
  rejects them all. With the stdlib parser, a ``\\ud``/``\\uD`` escape anywhere
  sends the line to the precise path.
- **Nesting.** The precise parser's depth limit depends on the interpreter's
  stack; metadata nested deeper than orjson serializes (255) or, with the
  stdlib parser, than :data:`MAX_DEPTH`, is not vouched for.

The key count and the colons of ``metadata`` come from one
``orjson.dumps(metadata).count(b":")`` (keys at every depth plus the colons
in its strings, all in C).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
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

    __slots__ = ("parser", "vouch", "vouch_id")

    def __init__(self, spec: SpecVersion, *, use_orjson: bool = True) -> None:
        metrics, rules = frozenset(spec.metrics), frozenset(spec.post_processes)
        # (category, metric, rule) -> the allowed single targets, or None for any
        legal: dict[tuple[str, str, str], frozenset[str] | None] = {}
        for name, cat in spec.categories.items():
            single = frozenset(cat.single_target_from) if cat.single_target_from else None
            for metric in frozenset(cat.metrics) & metrics:
                for rule in frozenset(cat.post_processes) & rules:
                    legal[(name, metric, rule)] = single
        loads = _orjson_loads() if use_orjson else None
        self.parser = "orjson" if loads is not None else "json"
        """``"orjson"`` or ``"json"``: what the fast path parses with."""
        self.vouch: Callable[[bytes], dict[str, Any] | None] = _make_vouch(legal, loads, False)
        """``vouch(raw)``: the decoded task when ``raw`` (one line, with or without its
        end of line) is certainly valid at stages 1-5; otherwise ``None`` (ask the
        precise path)."""
        self.vouch_id: Callable[[bytes], str | None] = _make_vouch(legal, loads, True)
        """``vouch_id(raw)``: like ``vouch``, but only the task id (for callers that
        never build the task)."""


def _make_vouch(
    legal: dict[tuple[str, str, str], frozenset[str] | None],
    orjson_loads: Callable[[bytes], Any] | None,
    want_id: bool,
) -> Callable[[bytes], Any]:
    # Everything the hot loop touches is a local of this closure: the checks run
    # once per line, so attribute and global look-ups are worth avoiding.
    colons_end, missing, max_few_shot = _COLONS, _MISSING, MAX_FEW_SHOT
    count_keys, string_colons, embedded = _count_keys, _string_colons, find_embedded_few_shot
    dumps: Callable[[Any], bytes] | None = None
    if orjson_loads is not None:
        import orjson

        # orjson turns an integer beyond 64 bits into a float of magnitude >= 2**63,
        # which it writes back with an exponent ("9.3e+18"); genuine smaller floats
        # have none. Use that only if this orjson writes floats that way.
        if all(b"e+" in orjson.dumps(x) for x in (2.0**63, -(2.0**63), 1e300)):
            dumps = orjson.dumps
    # An escaped colon could hide a repeated key.
    escaped_colon = re.compile(rb"\\u003[aA]").search
    json_loads = json.loads

    def parse(raw: bytes) -> Any:
        if orjson_loads is not None:
            return orjson_loads(raw)
        text = raw.decode("utf-8")
        if "\\ud" in text or "\\uD" in text:  # maybe a lone surrogate: the precise path
            raise ValueError
        return json_loads(text)

    def vouch(raw: bytes) -> Any:
        try:
            obj = parse(raw)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
            return None
        if type(obj) is not dict:
            return None
        examples = obj.get("few_shot_examples", missing)
        metadata = obj.get("metadata", missing)
        # Exactly the six required keys (each read below; a missing one raises
        # KeyError) plus the optional ones present: no unknown field.
        if len(obj) != 6 + (examples is not missing) + (metadata is not missing):
            return None
        try:
            single = legal[(obj["category"], obj["metric_name"], obj["post_process"])]
            task_id = obj["task_id"]
            prompt = obj["prompt"]
            targets = obj["targets"]
        except (KeyError, TypeError):  # missing, not legal, or not even hashable
            return None
        # Non-empty and no whitespace. Every whitespace character but " " is
        # non-printable, so a printable id needs no split.
        if type(task_id) is not str or not task_id or " " in task_id:
            return None
        if not task_id.isprintable() and task_id.split() != [task_id]:
            return None
        # A prompt that does not end in whitespace is not blank either.
        if type(prompt) is not str or not prompt or prompt[-1].isspace():
            return None
        if type(targets) is not list or not targets:
            return None
        accounted = len(obj) + prompt.count(":") + task_id.count(":")  # keys, string colons
        for t in targets:
            if type(t) is not str:
                return None
            accounted += t.count(":")
        if single is not None and (len(targets) != 1 or targets[0] not in single):
            return None
        exact_few_shot = False
        if prompt.endswith(colons_end):
            # Rule (b) needs the cue (the last token) earlier in the prompt too.
            tail = prompt[-64:].rsplit(None, 1)  # the last token, without copying it all
            cue = tail[-1] if len(tail) == 2 else prompt.rsplit(None, 1)[-1]
            exact_few_shot = prompt.find(cue) != len(prompt) - len(cue)
        if examples is not missing:
            if type(examples) is not list or len(examples) > max_few_shot:
                return None
            for ex in examples:
                if type(ex) is not dict or len(ex) != 2:
                    return None
                ex_prompt = ex.get("prompt")
                completion = ex.get("completion")
                if type(ex_prompt) is not str or type(completion) is not str:
                    return None
                accounted += 2 + ex_prompt.count(":") + completion.count(":")
                if not exact_few_shot:
                    # Rule (a) needs every token of the rendered example in the prompt;
                    # the completion's last token is the cheapest one to rule out.
                    last = completion.rsplit(None, 1)
                    if not last or last[-1] in prompt:
                        tokens = (ex_prompt + " " + completion).split()
                        exact_few_shot = bool(tokens) and all(tok in prompt for tok in tokens)
        if metadata is not missing:
            if type(metadata) is not dict:
                return None
            if dumps is not None:
                try:
                    dumped = dumps(metadata)
                except TypeError:  # nested beyond orjson's limit
                    return None
                if b"e+" in dumped:  # maybe an integer orjson made a float
                    return None
                accounted += dumped.count(b":")  # its keys at every depth + string colons
            else:
                keys = count_keys(metadata, 1)
                if keys < 0:
                    return None
                accounted += keys + string_colons(metadata)
        if exact_few_shot:
            pairs = [(ex["prompt"], ex["completion"]) for ex in obj.get("few_shot_examples", ())]
            if embedded(prompt, pairs) is not None:
                return None
        # No duplicate keys: see the module docstring for why this proves it.
        if accounted != raw.count(b":") or (accounted and escaped_colon(raw) is not None):
            return None
        return task_id if want_id else obj

    return vouch
