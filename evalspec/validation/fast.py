"""The validator's fast path: vouch for the common valid line at parse speed.

:class:`FastPath` answers one question per line: *is this line certainly a
valid task (stages 1-5)?* It answers "yes" only when it can prove it, and
then returns the same task the precise path (:mod:`evalspec.validation.validator`) would
build. Every other line, valid or not, gets "don't know" (``None``) and goes
to the precise path, which alone writes error records. So the fast path can
never change a verdict; it can only make valid lines cheaper.

With msgspec installed (the ``fast`` extra) a C decoder does the field, type
and vocabulary checks: the spec version in force becomes, at run time, one
``msgspec.Struct`` (unknown fields forbidden, ``category``, ``metric_name``
and ``post_process`` as ``Literal`` vocabularies of the names in force, at
most :data:`~evalspec.rules.MAX_FEW_SHOT` examples of exactly two strings,
non-empty id, prompt and targets) with ``metadata`` any JSON object, nested
at most :data:`TYPED_MAX_DEPTH` deep. The category pairs (and a single
target from the category's letters) are one dict lookup; what is left in
Python per line is a handful of C calls. Without msgspec, orjson (or the
standard library) parses and Python checks the fields.

What the precise path guards against and how the fast path keeps each hole
closed:

- **Duplicate keys.** Every fast parser keeps the last of two equal keys.
  Proof of absence by colon accounting: outside strings a ``:`` is only ever
  a key separator, so ``raw.count(b":") = K + C_raw`` where K is the number
  of key tokens in the text and C_raw the literal colons inside strings. The
  decoded task has P keys (P <= K, equal iff no key repeats) and its strings
  hold C' colons. If no string holds an escaped colon (``\\u003a``),
  C' <= C_raw, so ``P + C' == raw.count(b":")`` forces P == K: no
  duplicates, at any depth. When the equation fails, the line goes to the
  precise path. With msgspec, P + C' is the fields present plus the colons
  of the prompt, id and targets, counted as strings, plus the colons of the
  examples and the metadata re-encoded (keys and strings are written back,
  colons unescaped). An escape that could spell a colon (``\\u003``) is
  searched for once per block of lines, and per line only in a block that
  holds one.
  With the compiled core (:mod:`evalspec.validation._core`, built where a C
  compiler exists) one pass over the raw bytes proves it instead, exactly
  (a key is its decoded string, escapes included), and the accounting, the
  re-encoding and the escape search are skipped: see :func:`compiled_core`.
  The core's ``Voucher`` (:attr:`FastPath.core_block`) goes further: it checks
  whole blocks of lines in C, everything below included, and leaves what it
  cannot decide to the checks here.
- **Integers beyond 64 bits.** msgspec decodes them exactly, as the precise
  path does (up to the same digit limit). orjson turns them into floats; a float in a valid task can
  only sit in ``metadata``; such a float has magnitude >= 2**63, which
  ``orjson.dumps`` writes with an exponent, so metadata whose serialization
  holds ``e+`` is not vouched for. The stdlib keeps them as ints.
- **NaN, Infinity, 1e400.** msgspec and orjson reject them; with the stdlib
  parser they decode to non-finite floats, which only ``metadata`` could
  hold, and its walk rejects them.
- **Lone surrogates, invalid UTF-8, BOM, control characters.** msgspec and
  orjson reject them all. With the stdlib parser, a ``\\ud``/``\\uD`` escape
  anywhere sends the line to the precise path.
- **Nesting.** The precise parser's depth limit depends on the interpreter's
  stack; metadata nested deeper than :data:`TYPED_MAX_DEPTH` (msgspec: only
  metadata re-encoded in more than twice as many bytes is walked),
  :data:`MAX_DEPTH` (stdlib) or than orjson serializes (255) is not vouched
  for.
- **Cross-field rules** (an id without whitespace, a prompt that does not
  end in whitespace, no few-shot block embedded in the prompt) stay in
  Python, each a C call or two on the common line.
"""

from __future__ import annotations

import functools
import gc
import json
import operator
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalspec.fields import EXAMPLE_FIELDS, OPTIONAL_FIELDS, REQUIRED_FIELDS
from evalspec.rules import MAX_FEW_SHOT
from evalspec.validation.embedded import find_embedded_few_shot

if TYPE_CHECKING:
    from evalspec.registry.tables import AnySpec

MAX_DEPTH = 64
"""Metadata nested deeper than this goes to the precise path."""

_BIG = 9e18  # below 2**63: an orjson float this small was written as a float
_COLONS = (":", "\uff1a")
_MISSING: Any = object()
_maybe_escaped_colon = re.compile(rb"\\u003").search


NO_CCORE_ENV = "EVALSPEC_NO_CCORE"
"""Set to ``1`` to use the pure-Python proof even where the compiled core is built."""


def compiled_core() -> Any | None:
    """The compiled core module when it is built and not switched off, else ``None``.

    Its ``unique_keys(raw, max_depth)`` is the repeated-key proof; the fast
    path's verdicts are the same with and without it (only faster with it).
    """
    if os.environ.get(NO_CCORE_ENV, "") == "1":
        return None
    try:
        from evalspec.validation import _core
    except ImportError:  # not built (no compiler at install time): the pure-Python proof
        return None
    return _core


def core_status() -> str:
    """One phrase for ``evalspec --version``: whether the compiled core is in use."""
    if compiled_core() is not None:
        return "compiled core in use"
    if os.environ.get(NO_CCORE_ENV, "") == "1":
        return f"compiled core off, {NO_CCORE_ENV}=1"
    try:
        from evalspec.validation import _core  # noqa: F401
    except ImportError:
        return "compiled core not built, pure-Python fallback"
    return "compiled core in use"


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

    __slots__ = (
        "_vouch_id_unescaped",
        "ccore",
        "core_block",
        "core_block_digests",
        "merged_digests",
        "parser",
        "vouch",
        "vouch_id",
        "vouch_struct",
    )

    def __init__(
        self,
        spec: AnySpec,
        *,
        use_msgspec: bool | None = None,
        use_orjson: bool = True,
        use_ccore: bool | None = None,
    ) -> None:
        """Decode with msgspec, else orjson, else the standard library, as installed.

        ``use_msgspec=False`` skips msgspec; ``use_orjson=False`` alone means the
        standard library (as before msgspec was used). ``use_ccore`` (default:
        :func:`compiled_core` decides) proves the absence of repeated keys with the
        compiled core; ``False`` uses the pure-Python proof, ``True`` requires the core.
        """
        core = compiled_core() if use_ccore is None or use_ccore else None
        if use_ccore and core is None:
            raise ImportError("evalspec.validation._core is not built or is switched off")
        self.ccore: bool = core is not None
        """Whether the repeated-key proof runs in the compiled core."""
        unique = None if core is None else core.unique_keys
        legal = legal_triples(spec)
        typed_first = use_orjson if use_msgspec is None else use_msgspec
        typed = _typed_vouchers(spec, legal, unique) if typed_first else None
        self.parser: str
        """``"msgspec"``, ``"orjson"`` or ``"json"``: what the fast path decodes with."""
        vouch_struct = None
        if typed is not None:
            self.parser = "msgspec"
            vouch, vouch_id, unescaped, vouch_struct = typed
        else:
            loads = _orjson_loads() if use_orjson else None
            self.parser = "orjson" if loads is not None else "json"
            vouch = _make_vouch(legal, loads, False, unique)
            vouch_id = unescaped = _make_vouch(legal, loads, True, unique)
        self.vouch: Callable[[bytes], dict[str, Any] | None] = vouch
        """``vouch(raw)``: the decoded task when ``raw`` (one line, with or without its
        end of line) is certainly valid at stages 1-5; otherwise ``None`` (ask the
        precise path). Its fields and values are those the precise path decodes."""
        self.vouch_id: Callable[[bytes], str | None] = vouch_id
        """``vouch_id(raw)``: like ``vouch``, but only the task id (for callers that
        never build the task)."""
        self._vouch_id_unescaped: Callable[[bytes], str | None] = unescaped
        voucher = None if core is None else core_voucher(core, legal)
        self.core_block: Callable[[bytes | memoryview], tuple[list[str | None], bytes]] | None = (
            None if voucher is None else voucher.block
        )
        """With the compiled core only (else ``None``): ``core_block(data)`` splits a
        block of whole lines at ``b"\\n"`` and answers ``(ids, lengths)``: ``ids[i]``
        is line i's task id when the core vouches for it (a subset of what
        ``vouch_id`` vouches for, with the same id), else ``None`` (ask ``vouch_id``,
        then the precise path); ``lengths`` is each line's length in bytes, its
        ``b"\\n"`` included, as native 64-bit integers."""
        self.core_block_digests: (
            Callable[[bytes | memoryview], tuple[list[Any], bytes, bytes]] | None
        ) = None if voucher is None else voucher.block_digests
        """With the compiled core only: ``core_block``, for a caller that keeps digests:
        ``(ids, lengths, digests)``, where ``ids[i]`` is ``True`` for a vouched line whose
        id holds no escape (no ``str`` is built for it; ``digests[i]`` is its digest)."""
        self.merged_digests: Callable[[list[Any], bytes], bytes] | None = (
            None if core is None else core.merged_digests
        )
        """With the compiled core only: ``merged_digests(ids, digests)``, the valid
        lines' digests in order, once each line of ``core_block_digests`` left ``None``
        holds its id if it is valid."""
        self.vouch_struct: Callable[[bytes], Any] | None = vouch_struct
        """With msgspec only (else ``None``): like ``vouch``, but the decoded
        ``msgspec.Struct`` itself, not a dict built from it (``few_shot_examples``
        and ``metadata`` are ``msgspec.UNSET`` when absent; each example has the
        attributes ``prompt`` and ``completion``); ``msgspec.to_builtins`` of it is
        what ``vouch`` returns."""

    def vouch_ids(self, lines: list[bytes], block: bytes | memoryview) -> list[str | None]:
        """``vouch_id`` of each of ``lines``, all of them parts of ``block``.

        One search of the whole block for an escape that could spell a colon
        (``\\u003a``, rare: no JSON writer escapes a colon) spares one per line.
        """
        # A regular expression finds it ~1.5x faster than `in`: CPython's substring
        # search skips little with this needle, whose bytes are common ones.
        if self.ccore:  # the core's proof decodes escapes: nothing to search for
            vouch_id = self.vouch_id
        else:
            escapes = _maybe_escaped_colon(block) is not None
            vouch_id = self.vouch_id if escapes else self._vouch_id_unescaped
        # Decoded JSON holds no reference cycles, so the collector has nothing to
        # find here; its passes, triggered by the allocations, cost ~20%.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return list(map(vouch_id, lines))
        finally:
            if collecting:
                gc.enable()


def legal_triples(spec: AnySpec) -> dict[tuple[str, str, str], frozenset[str] | None]:
    """``(category, metric, rule) -> the allowed single targets (None: any)`` of ``spec``."""
    metrics, rules = frozenset(spec.metrics), frozenset(spec.post_processes)
    legal: dict[tuple[str, str, str], frozenset[str] | None] = {}
    for name, cat in spec.categories.items():
        single = frozenset(cat.single_target_from) if cat.single_target_from else None
        for metric in frozenset(cat.metrics) & metrics:
            for rule in frozenset(cat.post_processes) & rules:
                legal[(name, metric, rule)] = single
    return legal


def core_voucher(core: Any, legal: dict[tuple[str, str, str], frozenset[str] | None]) -> Any:
    """The compiled core's whole-line check (``core.Voucher``) for the ``legal`` triples.

    It vouches only for what the Python checks here vouch for (a strict JSON pass,
    the fields and types of the msgspec struct, the triple and single targets, the
    id and prompt rules, no repeated key at any depth) and leaves every line whose
    prompt :func:`_maybe_embedded` might find a few-shot block in, and every
    integer of more than 19 digits, to them.
    """
    return core.Voucher(
        fields=REQUIRED_FIELDS + OPTIONAL_FIELDS,
        example_fields=EXAMPLE_FIELDS,
        legal=legal,
        max_few_shot=MAX_FEW_SHOT,
        max_depth=1 + TYPED_MAX_DEPTH,  # the task object, then its metadata
    )


# -- typed decoding (msgspec) --------------------------------------------------------

TYPED_MAX_DEPTH = 256
"""With msgspec, metadata nested deeper than this goes to the precise path (whose
parser's limit, about 1000 levels, depends on the interpreter's stack)."""


def _typed_decoder(
    spec: AnySpec, legal: dict[tuple[str, str, str], frozenset[str] | None]
) -> Any | None:
    """A msgspec decoder of the tasks whose fields, types and vocabularies are those
    of ``spec`` (the category pairs and the cross-field rules are checked after);
    ``None`` without msgspec.

    One struct, not a union tagged by category: msgspec finds a tag that is not
    the first key only by decoding the object twice.
    """
    try:
        import msgspec
    except ImportError:  # the `fast` extra is optional
        return None
    from typing import Annotated, Literal

    if not legal:
        return None
    task_id, category, prompt, targets, metric_name, post_process = REQUIRED_FIELDS
    examples, metadata = OPTIONAL_FIELDS
    unset, unset_type = msgspec.UNSET, msgspec.UnsetType
    non_empty = msgspec.Meta(min_length=1)
    example = msgspec.defstruct(
        "FewShotExample", [(key, str) for key in EXAMPLE_FIELDS], forbid_unknown_fields=True
    )
    few_shot = Annotated[list[example], msgspec.Meta(max_length=MAX_FEW_SHOT)]  # type: ignore[valid-type]

    def one_of(names: Any) -> Any:
        return Literal[tuple(sorted(set(names)))]

    fields: list[tuple[str, Any, Any]] = [
        (task_id, Annotated[str, non_empty], msgspec.NODEFAULT),
        (category, one_of(c for c, _, _ in legal), msgspec.NODEFAULT),
        (prompt, Annotated[str, non_empty], msgspec.NODEFAULT),
        (targets, Annotated[list[str], non_empty], msgspec.NODEFAULT),
        (metric_name, one_of(m for _, m, _ in legal), msgspec.NODEFAULT),
        (post_process, one_of(r for _, _, r in legal), msgspec.NODEFAULT),
        (examples, _union(few_shot, unset_type), unset),
        (metadata, _union(dict[str, Any], unset_type), unset),
    ]
    task = msgspec.defstruct(
        "Task",
        fields,
        forbid_unknown_fields=True,
        gc=False,  # holds JSON values only: no cycles to collect
    )
    return msgspec.json.Decoder(task)


def _union(*types: Any) -> Any:
    return functools.reduce(operator.or_, types)


def _depth(node: Any) -> int:
    """How deep ``node`` nests (a scalar is 0), iteratively."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        node, d = stack.pop()
        if type(node) is dict:
            node = node.values()
        elif type(node) is not list:
            continue
        deepest = max(deepest, d)
        stack.extend((v, d + 1) for v in node)
    return deepest


def _typed_vouchers(
    spec: AnySpec,
    legal: dict[tuple[str, str, str], frozenset[str] | None],
    unique: Callable[[bytes, int], bool] | None = None,
) -> (
    tuple[
        Callable[[bytes], Any],
        Callable[[bytes], Any],
        Callable[[bytes], Any],
        Callable[[bytes], Any],
    ]
    | None
):
    """``vouch``, ``vouch_id``, ``vouch_id`` for lines known to hold no escaped colon, and
    ``vouch_struct``; with ``unique`` (the compiled core's proof) the colon accounting
    is not needed, and lines with escaped colons are checked like any other."""
    decoder = _typed_decoder(spec, legal)
    if decoder is None:
        return None
    import msgspec

    pairs_of = legal.get
    decode, encode = decoder.decode, msgspec.json.Encoder().encode
    decode_errors = (msgspec.DecodeError, RecursionError)  # ValidationError is a DecodeError
    unset, missing = msgspec.UNSET, _MISSING
    colons_end, embedded, maybe_embedded, depth = (
        _COLONS,
        find_embedded_few_shot,
        _maybe_embedded,
        _depth,
    )
    deep_bytes = 2 * TYPED_MAX_DEPTH  # fewer bytes cannot nest deeper
    n_required, sep = len(REQUIRED_FIELDS), "\x00"
    names_have_colons = any(":" in name for triple in legal for name in triple)
    task_id, category, prompt, targets, metric_name, post_process = REQUIRED_FIELDS
    examples, metadata = OPTIONAL_FIELDS
    ex_prompt, ex_completion = EXAMPLE_FIELDS
    line_depth = 1 + TYPED_MAX_DEPTH  # the task object, then its metadata

    def checker(want_id: bool) -> Callable[[bytes], Any]:
        """The check of a line known to hold no ``\\u003`` escape (no escaped colon):
        the task (or its id) when it is certainly valid, else ``None``."""

        def check(raw: bytes) -> Any:
            try:
                task = decode(raw)
            except decode_errors:  # not JSON, not a task, or not one msgspec can vouch for
                return None
            single = pairs_of((task.category, task.metric_name, task.post_process), missing)
            if single is not None and (
                single is missing or len(task.targets) != 1 or task.targets[0] not in single
            ):
                return None  # not a legal pair, or not one of the category's letters
            tid = task.task_id
            # No whitespace. Every whitespace character but " " is non-printable, so
            # a printable id needs no split.
            if " " in tid or (not tid.isprintable() and tid.split() != [tid]):
                return None
            text = task.prompt
            if text[-1].isspace():  # also rules out a blank prompt
                return None
            shots = task.few_shot_examples
            if shots is unset:
                shots = ()
            # Most prompts hold no colon: `in` (memchr) is several times faster than
            # a count.
            text_colons = text.count(":") if ":" in text else 0
            # The cue test of _maybe_embedded, first done here: most prompts that end
            # in a colon hold no other (a call saved per line).
            if (
                shots or (text.endswith(colons_end) and (text_colons > 1 or text[-1] != ":"))
            ) and maybe_embedded(text, shots, text_colons):
                pairs = [(ex.prompt, ex.completion) for ex in shots]
                if embedded(text, pairs) is not None:
                    return None
            if unique is not None:  # the compiled core: exact, at any depth, escapes decoded
                if not unique(raw, line_depth):
                    return None
                return tid if want_id else task
            # No duplicate keys (see the module docstring): the decoded keys and the
            # colons of the decoded strings against the colons of the raw line. The
            # prompt is counted as a string; examples and metadata re-encoded (keys
            # and strings are written back, colons unescaped).
            keys_and_colons = n_required + text_colons + tid.count(":")
            answers = task.targets
            if len(answers) == 1:
                keys_and_colons += answers[0].count(":")
            else:
                keys_and_colons += sep.join(answers).count(":")
            if names_have_colons:
                keys_and_colons += sep.join(
                    (task.category, task.metric_name, task.post_process)
                ).count(":")
            if shots:
                keys_and_colons += 1 + encode(shots).count(b":")
            elif task.few_shot_examples is not unset:
                keys_and_colons += 1  # an empty list
            meta = task.metadata
            if meta is not unset:
                encoded = encode(meta)
                keys_and_colons += 1 + encoded.count(b":")
                if len(encoded) > deep_bytes and depth(meta) > TYPED_MAX_DEPTH:
                    return None  # fewer bytes cannot nest deeper
            if keys_and_colons != raw.count(b":"):
                return None
            return tid if want_id else task

        return check

    id_unescaped, task_unescaped = checker(True), checker(False)
    escaped = _maybe_escaped_colon

    def id_if_unescaped(raw: bytes) -> Any:
        return None if escaped(raw) is not None else id_unescaped(raw)

    def struct_if_unescaped(raw: bytes) -> Any:
        return None if escaped(raw) is not None else task_unescaped(raw)

    vouch_id: Callable[[bytes], Any] = id_if_unescaped
    vouch_struct: Callable[[bytes], Any] = struct_if_unescaped
    if unique is not None:  # no escape search: the core decodes every key
        vouch_id, vouch_struct = id_unescaped, task_unescaped

    def vouch(raw: bytes) -> Any:
        task = vouch_struct(raw)
        if task is None:
            return None
        obj = {
            task_id: task.task_id,
            category: task.category,
            prompt: task.prompt,
            targets: task.targets,
            metric_name: task.metric_name,
            post_process: task.post_process,
        }
        if task.few_shot_examples is not unset:
            obj[examples] = [
                {ex_prompt: ex.prompt, ex_completion: ex.completion}
                for ex in task.few_shot_examples
            ]
        if task.metadata is not unset:
            obj[metadata] = task.metadata
        return obj

    return vouch, vouch_id, id_unescaped, vouch_struct


def _maybe_embedded(prompt: str, examples: Any, colons: int) -> bool:
    """Whether the prompt might hold a few-shot block (``False`` proves it does not).

    Rule (b) needs the cue (the last token) earlier in the prompt too, so a
    prompt whose only ``:`` (``colons`` is ``prompt.count(":")``) is its last
    character has none; rule (a) needs every token of a rendered example in
    the prompt. The cheapest to find are the completion's last token and the
    example prompt's first and last (a prefix or suffix of a token is in the
    prompt too, so at most 64 characters of the example are split to find them);
    tried in that order, they rule out most examples before all are split.
    """
    if prompt.endswith(_COLONS) and (colons > 1 or prompt[-1] != ":"):
        tail = prompt[-64:].rsplit(None, 1)  # the last token, without copying it all
        cue = tail[-1] if len(tail) == 2 else prompt.rsplit(None, 1)[-1]
        if prompt.find(cue) != len(prompt) - len(cue):
            return True
    for ex in examples:
        last = ex.completion.rsplit(None, 1)
        if last and last[-1] not in prompt:
            continue
        text = ex.prompt
        first = text[:64].split(None, 1)
        if first and first[0] not in prompt:
            continue
        end = text[-64:].rsplit(None, 1)
        if end and end[-1] not in prompt:
            continue
        tokens = (text + " " + ex.completion).split()
        if tokens and all(tok in prompt for tok in tokens):
            return True
    return False


# -- orjson / stdlib decoding ------------------------------------------------------


def _make_vouch(
    legal: dict[tuple[str, str, str], frozenset[str] | None],
    orjson_loads: Callable[[bytes], Any] | None,
    want_id: bool,
    unique: Callable[[bytes, int], bool] | None = None,
) -> Callable[[bytes], Any]:
    # Everything the hot loop touches is a local of this closure: the checks run
    # once per line, so attribute and global look-ups are worth avoiding.
    colons_end, missing, max_few_shot = _COLONS, _MISSING, MAX_FEW_SHOT
    n_required = len(REQUIRED_FIELDS)
    examples_field, metadata_field = OPTIONAL_FIELDS
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
    line_depth = 1 + TYPED_MAX_DEPTH

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
        examples = obj.get(examples_field, missing)
        metadata = obj.get(metadata_field, missing)
        # Exactly the six required keys (each read below; a missing one raises
        # KeyError) plus the optional ones present: no unknown field.
        if len(obj) != n_required + (examples is not missing) + (metadata is not missing):
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
        prompt_colons = prompt.count(":")
        accounted = len(obj) + prompt_colons + task_id.count(":")  # keys, string colons
        for t in targets:
            if type(t) is not str:
                return None
            accounted += t.count(":")
        if single is not None and (len(targets) != 1 or targets[0] not in single):
            return None
        exact_few_shot = False
        if prompt.endswith(colons_end) and (prompt_colons > 1 or prompt[-1] != ":"):
            # Rule (b) needs the cue (the last token) earlier in the prompt too: with
            # one ":" in all, the last character, it cannot be.
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
            pairs = [(ex["prompt"], ex["completion"]) for ex in obj.get(examples_field, ())]
            if embedded(prompt, pairs) is not None:
                return None
        if unique is not None:  # the compiled core: exact, at any depth, escapes decoded
            if not unique(raw, line_depth):
                return None
        # No duplicate keys: see the module docstring for why this proves it.
        elif accounted != raw.count(b":") or (accounted and escaped_colon(raw) is not None):
            return None
        return task_id if want_id else obj

    return vouch
