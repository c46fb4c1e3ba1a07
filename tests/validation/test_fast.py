"""The fast path never changes a verdict: a differential test against the precise path.

Every decoder the fast path can use (msgspec's typed structs, orjson, the
standard library) is held to the precise path on random valid tasks, on
tasks broken in one way for every rule code of :data:`evalspec.rules.RULES`,
and on hand-picked nasty lines (duplicate keys at depth, big integers, NaN,
surrogates, BOM, CRLF).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hostile_lines import _VALID, NASTY
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalspec.io.jsonline import parse_line
from evalspec.model import EXAMPLE_FIELDS, FIELDS, OPTIONAL_FIELDS, REQUIRED_FIELDS, TaskSpec
from evalspec.registry.build import Registry
from evalspec.rules import MAX_FEW_SHOT, RULES
from evalspec.validation.fast import TYPED_MAX_DEPTH, FastPath, compiled_core
from evalspec.validation.validator import _iter_validate, line_verdict
from evalspec.versions import SpecVersion

PARSERS = ("msgspec", "orjson", "json")
# The repeated-key proof in the compiled core, and in Python (the fallback). Where
# the core is missing, only the fallback runs, and tests/validation/test_ccore.py
# fails (unless EVALSPEC_NO_CCORE=1 switched the core off on purpose).
PROOFS = ("ccore", "python") if compiled_core() is not None else ("python",)


@pytest.fixture(scope="module")
def spec(registry: Registry) -> SpecVersion:
    return registry.spec


@pytest.fixture(
    scope="module",
    params=[(parser, proof) for parser in PARSERS for proof in PROOFS],
    ids="-".join,
)
def fast(request: pytest.FixtureRequest, registry: Registry) -> FastPath:
    parser, proof = request.param
    if parser != "json":
        pytest.importorskip(parser)  # the `fast` extra
    fp = FastPath(
        registry.spec,
        use_msgspec=parser == "msgspec",
        use_orjson=parser != "json",
        use_ccore=proof == "ccore",
    )
    assert fp.parser == parser
    assert fp.ccore == (proof == "ccore")
    return fp


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1 != 1.0, 2**64 != 2.0**64)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return bool(a.hex() == b.hex())
    same: bool = a == b
    return same


def core_id(fast: FastPath, raw: bytes) -> str | None:
    """The compiled core's whole-line answer for the one line ``raw`` (``None`` where
    the core is not in use, or ``raw`` is not one line)."""
    if fast.core_block is None or b"\n" in raw.rstrip(b"\n"):
        return None
    ids, lengths = fast.core_block(raw)
    assert len(lengths) == 8 * len(ids)
    assert ids or not raw
    return ids[0] if ids else None


def assert_agree(fast: FastPath, spec: SpecVersion, raw: bytes, number: int = 2) -> bool:
    """If the fast path vouches for ``raw``, the precise path admits it with the same task;
    so it does when the compiled core vouches, with the same id (and with msgspec, the
    core vouches only where the Python checks vouch)."""
    core = core_id(fast, raw)
    if core is not None:
        admitted = line_verdict(number, raw, spec)
        assert admitted is not None and admitted.task is not None, raw
        assert admitted.task.task_id == core, raw
        if fast.parser == "msgspec":
            assert fast.vouch_id(raw) == core, raw
    vouched = fast.vouch(raw)
    if vouched is None:
        return False
    verdict = line_verdict(number, raw, spec)
    assert verdict is not None, raw
    assert verdict.errors == (), (raw, verdict.errors)
    text = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8")
    decoded, problems = parse_line(text)
    assert problems == []
    # The same fields with the same values and types (metadata in the same order;
    # the order of the top-level keys and of an example's two keys means nothing).
    assert sorted(vouched) == sorted(decoded), raw
    examples = [dict(sorted(ex.items())) for ex in decoded.pop("few_shot_examples", [])]
    assert _same(
        [dict(sorted(ex.items())) for ex in vouched.get("few_shot_examples", [])], examples
    )
    assert all(_same(vouched[k], decoded[k]) for k in decoded), raw
    assert TaskSpec.from_dict(vouched) == verdict.task
    assert fast.vouch_id(raw) == verdict.task.task_id
    return True


# -- strategies -------------------------------------------------------------------

_chars = st.characters(blacklist_categories=["Cs"])
_text = st.text(_chars, max_size=30)
_word = st.text(st.sampled_from('abcXYZ019:"\\ \n\t\u00e9\u4e2d\U0001f600{}[],'), max_size=12)
_scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
    | _word
)
_json = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_word | _text, inner, max_size=3),
    max_leaves=8,
)
_prompt = st.one_of(
    _text,
    st.builds(lambda a, b: f"{a}\nQuestion: {b}\nAnswer:", _text, _text),
    st.builds(lambda a, b: f"{a}\n\n{b}\n\nSummary:", _word, _word),
    st.builds(lambda a, b: f"Q: {a}\nA: {b}\n\nQ: x\nA:", _word, _word),
)
_example = st.fixed_dictionaries({"prompt": _text | _word, "completion": _text | _word})


@st.composite
def tasks(draw: st.DrawFn, spec: SpecVersion) -> dict[str, Any]:
    """A task that is valid unless its random prompt or examples break a rule."""
    name = draw(st.sampled_from(sorted(spec.categories)))
    cat = spec.categories[name]
    if cat.single_target_from:
        targets = [draw(st.sampled_from(cat.single_target_from))]
    else:
        targets = draw(st.lists(_text | _word, min_size=1, max_size=3))
    task: dict[str, Any] = {
        "task_id": draw(
            st.text(st.characters(blacklist_categories=["Cs", "Zs", "Cc"]), min_size=1)
        ),
        "category": name,
        "prompt": draw(_prompt).strip() or "x",
        "targets": targets,
        "metric_name": draw(st.sampled_from(cat.metrics)),
        "post_process": draw(st.sampled_from(cat.post_processes)),
    }
    if draw(st.booleans()):
        task["few_shot_examples"] = draw(st.lists(_example, max_size=3))
    if draw(st.booleans()):
        task["metadata"] = draw(st.dictionaries(_word | _text, _json, max_size=4))
    keys = list(task)
    order = draw(st.permutations(keys))
    return {k: task[k] for k in order}


_SEPARATORS = [(",", ":"), (", ", ": "), (" , ", " : "), (",\t", "\t:\t")]


@st.composite
def serialized(draw: st.DrawFn, obj: Any) -> bytes:
    """One JSON line for ``obj`` in one of the ways people write JSON lines."""
    item, key = draw(st.sampled_from(_SEPARATORS))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(item, key))
    text = draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " ", "\r", "\t"]))
    return text.encode("utf-8") + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


# -- one way (or more) to break a valid task for every rule code ------------------------

Breaker = Callable[[dict[str, Any], SpecVersion, random.Random], "bytes | dict[str, Any] | None"]
"""``(valid task, spec, rng) -> a broken task (or its line)``; ``None`` when the
task cannot be broken this way (say, an mcq rule on a category without letters)."""


def _set(field: str, value: Any) -> Breaker:
    return lambda t, spec, rng: {**t, field: value}


def _line(edit: Callable[[bytes], bytes]) -> Breaker:
    return lambda t, spec, rng: edit(json.dumps(t, ensure_ascii=False).encode())


def _drop(field: str) -> Breaker:
    return lambda t, spec, rng: {k: v for k, v in t.items() if k != field}


def _with_metadata(body: bytes) -> Breaker:
    def f(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> bytes:
        line = json.dumps({**t, "metadata": {}}, ensure_ascii=False).encode()
        return line.replace(b'"metadata": {}', b'"metadata": ' + body)

    return f


def _other(kind: str) -> Breaker:
    """A name in force that the task's category does not allow."""

    def f(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> dict[str, Any] | None:
        cat = spec.categories[t["category"]]
        table, allowed, field = {
            "metric": (spec.metrics, cat.metrics, "metric_name"),
            "post_process": (spec.post_processes, cat.post_processes, "post_process"),
        }[kind]
        others = sorted(set(table) - set(allowed))
        return {**t, field: rng.choice(others)} if others else None

    return f


def _wrong_letter(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> Any:
    letters = spec.categories[t["category"]].single_target_from
    if not letters:
        return None
    return {**t, "targets": rng.choice([["Z"], [letters[0], letters[0]], [letters[0].lower()]])}


def _bad_field_value(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> Any:
    """An optional field with choices, in a category that may carry it, set to no choice."""
    fields = [
        f.name
        for f in spec.fields.values()
        if f.choices and (not f.categories or t["category"] in f.categories)
    ]
    return {**t, rng.choice(fields): "not one of the choices"} if fields else None


def _illegal_field(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> Any:
    """An optional field, with an allowed value, in a category that may not carry it."""
    fields = [f for f in spec.fields.values() if f.categories and t["category"] not in f.categories]
    if not fields:
        return None
    field = rng.choice(fields)
    return {**t, field.name: field.choices[0] if field.choices else "text"}


def _embed_example(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> Any:
    example = {"prompt": "Q: zq", "completion": "yy"}
    return {**t, "prompt": "Q: zq yy\n" + t["prompt"], "few_shot_examples": [example]}


def _answer_cue(t: dict[str, Any], spec: SpecVersion, rng: random.Random) -> Any:
    return {**t, "prompt": "Q: 1+1\nA: 2\n\nQ: 2+2\nA:"}


_DEEP = 100_000  # beyond any recursion limit the precise parser runs with

BREAKERS: dict[str, list[Breaker]] = {
    "invalid_json": [
        _line(lambda b: b[:-7]),
        _line(lambda b: b[:-1] + b', "n": NaN}'),
        _with_metadata(b'{"x": -Infinity}'),
        _with_metadata(b'{"x": 1e400}'),
        _with_metadata(b'{"x": 1' + b"0" * 5000 + b"}"),
        _with_metadata(b'{"x": ' + b"[" * _DEEP + b"]" * _DEEP + b"}"),
        _with_metadata(b'{"x": "\\ud800"}'),
        _with_metadata(b'{"x": "\\udc00\\ud800"}'),
        _with_metadata(b'{"x": "\xed\xa0\x80"}'),
        _with_metadata(b'{"x": "\xff"}'),
        _with_metadata(b'{"x": "a\x01b"}'),
        _line(lambda b: b"\xef\xbb\xbf" + b),  # a BOM is allowed on line 1 only
        _line(lambda b: b + b"\x0b"),
        _line(lambda b: b + b" x"),
    ],
    "duplicate_key": [
        _line(lambda b: b[:-1] + b', "task_id": "other"}'),
        _line(lambda b: b[:-1] + b', "task_id" : "other"}'),
        _line(lambda b: b[:-1] + b', "\\u0074ask_id": "other"}'),  # an escaped key name
        _line(lambda b: b"{" + b'"category": "x", ' + b[1:]),
        _with_metadata(b'{"n": 3, "n": 4}'),
        _with_metadata(b'{"a": {"b": [1, {"c": "d", "c": "e"}]}}'),  # at depth 4
        _with_metadata(b'{"n": 3, "n": 4, "s": "\\u003a"}'),  # hidden by an escaped colon
        _set("few_shot_examples", []),  # then made a repeat below
    ],
    "not_object": [
        _line(lambda b: b"[" + b + b"]"),
        _line(lambda b: b"null"),
        _line(lambda b: b'"task"'),
    ],
    "missing_field": [_drop(field) for field in REQUIRED_FIELDS],
    "unknown_field": [_set("extra", "x"), _set("Metadata", {}), _set("fewshot_examples", [])],
    "wrong_type": [
        _set("task_id", 7),
        _set("category", ["x"]),
        _set("prompt", None),
        _set("targets", "A"),
        _set("targets", [1]),
        _set("metric_name", {}),
        _set("post_process", None),
        _set("few_shot_examples", {"prompt": "q", "completion": "a"}),
        _set("few_shot_examples", [[]]),
        _set("few_shot_examples", [{"prompt": "q", "completion": 1}]),
        _set("metadata", []),
        _set("metadata", None),
    ],
    "bad_task_id": [
        _set("task_id", ""),
        _set("task_id", "a b"),
        _set("task_id", "t\u00a01"),
        _set("task_id", "t\u20281"),
        _set("task_id", "t\t1"),
    ],
    "unknown_category": [_set("category", "trivia")],
    "empty_prompt": [_set("prompt", ""), _set("prompt", " \n\t ")],
    "prompt_trailing_whitespace": [
        lambda t, spec, rng: {**t, "prompt": t["prompt"] + rng.choice([" ", "\n", "\u3000"])}
    ],
    "prompt_embedded_few_shot": [_embed_example, _answer_cue],
    "empty_targets": [_set("targets", [])],
    "unknown_metric": [_set("metric_name", "no_such_metric")],
    "too_many_few_shot": [
        _set("few_shot_examples", [{"prompt": f"q{i}", "completion": "a"} for i in range(9)])
    ],
    "few_shot_shape": [
        _set("few_shot_examples", [{"prompt": "q"}]),
        _set("few_shot_examples", [{"prompt": "q", "completion": "a", "x": 1}]),
    ],
    "unknown_post_process": [_set("post_process", "no_such_rule")],
    "combined_post_process": [
        lambda t, spec, rng: {**t, "post_process": "+".join(sorted(spec.post_processes)[:2])},
        lambda t, spec, rng: {**t, "post_process": sorted(spec.post_processes)[:2]},
    ],
    "illegal_metric": [_other("metric")],
    "illegal_post_process": [_other("post_process")],
    "mcq_target": [_wrong_letter],
    "bad_field_value": [_bad_field_value],
    "illegal_field": [_illegal_field],
}
"""Rule code -> ways to break a valid task so that the precise path reports it.
``duplicate_task_id`` (a property of a file) has its own test below."""


def _repeat_examples(line: bytes) -> bytes:
    return line.replace(
        b'"few_shot_examples": []', b'"few_shot_examples": [], "few_shot_examples": []'
    )


def test_every_rule_code_has_a_breaker() -> None:
    """A new rule code fails here until the differential test can break a task for it."""
    assert set(BREAKERS) | {"duplicate_task_id"} == set(RULES)
    assert MAX_FEW_SHOT < 9  # the too_many_few_shot breaker
    assert set(FIELDS) == set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
    # The spec's own fields, then the optional fields spec versions added (one mapping).
    assert [a.name for a in attrs.fields(TaskSpec)] == [*FIELDS, "added_fields"]
    assert EXAMPLE_FIELDS == ("prompt", "completion")


# -- the differential properties ------------------------------------------------------


@given(data=st.data())
def test_vouched_valid_tasks_decode_exactly_as_the_precise_path(
    fast: FastPath, spec: SpecVersion, data: st.DataObject
) -> None:
    task = data.draw(tasks(spec))
    assert_agree(fast, spec, data.draw(serialized(task)))


@given(data=st.data())
def test_fast_path_vouches_for_plain_valid_tasks(
    fast: FastPath, spec: SpecVersion, data: st.DataObject
) -> None:
    task = data.draw(tasks(spec))
    raw = data.draw(serialized(task))
    verdict = line_verdict(2, raw, spec)
    assume(verdict is not None and verdict.task is not None)

    def plain(v: Any) -> bool:  # what the fast path defers by design
        if isinstance(v, dict):
            return all(plain(x) for x in v.values())
        if isinstance(v, list):
            return all(plain(x) for x in v)
        if isinstance(v, float):
            return fast.parser == "msgspec" or abs(v) < 1e16
        if isinstance(v, int) and not isinstance(v, bool):
            return fast.parser != "orjson" or -(2**63) <= v < 2**63
        return True

    assume(plain(task.get("metadata")))
    assume(b"\\u003" not in raw or ":" not in json.dumps(task, ensure_ascii=False))
    assume(fast.parser == "orjson" or b"\\ud" not in raw.lower())
    assert assert_agree(fast, spec, raw)


_token = st.text(st.characters(blacklist_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]), min_size=1)
_long_token = _token | st.builds(lambda t, n: t * n, _token, st.integers(30, 80))
_space = st.text(st.sampled_from(" \n\t\r\u3000\u00a0\u2028"), min_size=1, max_size=3)


def _spaced(draw: st.DrawFn, tokens: list[str], margin: int = 0) -> str:
    """``tokens`` joined by random whitespace, up to ``margin`` more at either end."""
    joined = "".join(tok + draw(_space) for tok in tokens).rstrip()
    pad = st.text(st.sampled_from(" \n\t"), max_size=margin)
    return draw(pad) + joined + draw(pad)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_prompt_holding_one_of_its_examples_is_never_vouched_for(
    fast: FastPath, spec: SpecVersion, data: st.DataObject
) -> None:
    """Rule (a) with the fast path's example filter: long tokens, whitespace runs
    inside and around the example (beyond the 64 characters the filter reads)."""
    words = st.lists(_long_token, min_size=1, max_size=4)
    shot_prompt, completion = data.draw(words), data.draw(words)
    example = {
        "prompt": _spaced(data.draw, shot_prompt, margin=80),
        "completion": _spaced(data.draw, completion),
    }
    # The prompt holds the rendered example with other whitespace between its tokens.
    held = _spaced(data.draw, shot_prompt + completion)
    prompt = f"{data.draw(_token)} {held} {data.draw(_token)}"
    task = {
        "task_id": "t1",
        "category": "summary",
        "prompt": prompt,
        "targets": ["x"],
        "metric_name": spec.categories["summary"].metrics[0],
        "post_process": spec.categories["summary"].post_processes[0],
        "few_shot_examples": [{"prompt": "p", "completion": "c"}, example],
    }
    raw = json.dumps(task, ensure_ascii=data.draw(st.booleans())).encode() + b"\n"
    verdict = line_verdict(1, raw, spec)
    assert verdict is not None
    assert "prompt_embedded_few_shot" in [e.rule for e in verdict.errors]
    assert fast.vouch(raw) is None
    assert fast.vouch_id(raw) is None
    assert core_id(fast, raw) is None


@pytest.mark.parametrize("rule", sorted(BREAKERS))
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_fast_path_never_vouches_for_a_task_with_one_rule_broken(
    fast: FastPath, spec: SpecVersion, data: st.DataObject, rule: str, seed: int
) -> None:
    way = data.draw(st.integers(0, len(BREAKERS[rule]) - 1))
    task = data.draw(tasks(spec))
    base = line_verdict(2, json.dumps(task).encode(), spec)
    assume(base is not None and base.task is not None)  # broken in exactly one way
    broken = BREAKERS[rule][way](task, spec, random.Random(seed))
    assume(broken is not None)
    if isinstance(broken, dict):
        raw = data.draw(serialized(broken))
        if rule == "duplicate_key":
            raw = _repeat_examples(
                raw.replace(b'"few_shot_examples":[]', b'"few_shot_examples": []')
            )
            assume(b'"few_shot_examples": [], "few_shot_examples"' in raw)
    else:
        raw = broken
    verdict = line_verdict(2, raw, spec)
    assert verdict is not None and verdict.errors, raw
    assert rule in {e.rule for e in verdict.errors}, (raw, verdict.errors)
    assert fast.vouch(raw) is None, raw
    assert fast.vouch_id(raw) is None, raw
    assert core_id(fast, raw) is None, raw


@given(data=st.data())
def test_a_repeated_task_id_is_reported_the_same_with_and_without_the_fast_path(
    spec: SpecVersion, data: st.DataObject
) -> None:
    task = data.draw(tasks(spec))
    lines = [data.draw(serialized(task)).rstrip(b"\n") + b"\n" for _ in range(3)]
    fast = list(_iter_validate(lines, spec, fast=True))
    assert fast == list(_iter_validate(lines, spec, fast=False))
    if fast and fast[0].ok:
        assert [e.rule for r in fast[1:] for e in r.errors] == ["duplicate_task_id"] * 2


@pytest.mark.parametrize("raw", NASTY)
@pytest.mark.parametrize("number", [1, 2])
def test_fast_and_precise_paths_agree_on_nasty_lines(
    fast: FastPath, spec: SpecVersion, raw: bytes, number: int
) -> None:
    assert_agree(fast, spec, raw, number)


def test_fast_path_vouches_for_the_plain_valid_line(fast: FastPath, spec: SpecVersion) -> None:
    assert fast.vouch(_VALID) is not None
    assert fast.vouch_id(_VALID + b"\r") == "t1"
    big = _VALID.replace(b'"n": 3', b'"n": 12345678901234567890123')
    if fast.parser == "msgspec":  # exact big integers, and nesting up to its limit
        assert fast.vouch(big) is not None
        # metadata itself is one level: "n" holds TYPED_MAX_DEPTH - 1 more
        deep = b"[" * (TYPED_MAX_DEPTH - 1) + b"]" * (TYPED_MAX_DEPTH - 1)
        assert fast.vouch(_VALID.replace(b'"n": 3', b'"n": ' + deep)) is not None
        deeper = b"[" + deep + b"]"
        assert fast.vouch(_VALID.replace(b'"n": 3', b'"n": ' + deeper)) is None
    escaped_colon = _VALID.replace(b"d:e", b"d\\u003ae")
    if fast.ccore:  # the core decodes every key: an escaped colon hides nothing from it
        assert assert_agree(fast, spec, escaped_colon)
    else:  # it could hide a repeat from the colon accounting
        assert fast.vouch(escaped_colon) is None


@given(
    nasty=st.lists(st.sampled_from(NASTY), max_size=6),
    junk=st.lists(st.binary(max_size=40), max_size=3),
)
def test_iter_validate_is_the_same_with_and_without_the_fast_path(
    spec: SpecVersion, nasty: list[bytes], junk: list[bytes]
) -> None:
    lines = [line.rstrip(b"\n") + b"\n" for line in nasty + junk + [_VALID, _VALID]]
    fast = list(_iter_validate(lines, spec, fast=True))
    precise = list(_iter_validate(lines, spec, fast=False))
    assert fast == precise


@given(nasty=st.lists(st.sampled_from(NASTY), max_size=8))
def test_vouching_a_block_is_vouching_each_line(fast: FastPath, nasty: list[bytes]) -> None:
    """The block-wide escape search changes nothing: an escaped colon still defers."""
    lines = [line.rstrip(b"\n") for line in [*nasty, _VALID]]
    block = b"\n".join(lines)
    each = [fast.vouch_id(line) for line in lines]
    assert fast.vouch_ids(lines, block) == each
    if fast.core_block is not None and not any(b"\n" in line for line in lines):
        ids, lengths = fast.core_block(block)
        assert len(ids) == len(lines)
        ends = [len(line) + 1 for line in lines[:-1]]
        assert list(memoryview(lengths).cast("q")) == [*ends, len(lines[-1])]
        if fast.parser == "msgspec":
            assert all(got in (None, want) for got, want in zip(ids, each, strict=True))
        assert ids[-1] == "t1"  # the plain valid line, vouched for in C


def test_without_msgspec_the_fast_path_falls_back_to_orjson(
    spec: SpecVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("orjson")
    monkeypatch.setitem(sys.modules, "msgspec", None)  # as if not installed
    fast = FastPath(spec)
    assert fast.parser == "orjson"
    assert fast.vouch_id(_VALID) == "t1"
    assert FastPath(spec, use_orjson=False).parser == "json"
