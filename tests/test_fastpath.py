"""The fast path never changes a verdict: a differential test against the precise path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from evalspec.fastpath import FastPath
from evalspec.jsonline import parse_line
from evalspec.model import TaskSpec
from evalspec.registry import Registry
from evalspec.validate import _iter_validate, line_verdict
from evalspec.versions import SpecVersion

PARSERS = ("orjson", "json")


@pytest.fixture(scope="module")
def spec(registry: Registry) -> SpecVersion:
    return registry.spec


@pytest.fixture(scope="module", params=PARSERS)
def fast(request: pytest.FixtureRequest, registry: Registry) -> FastPath:
    fp = FastPath(registry.spec, use_orjson=request.param == "orjson")
    assert fp.parser == request.param
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


def assert_agree(fast: FastPath, spec: SpecVersion, raw: bytes, number: int = 2) -> bool:
    """If the fast path vouches for ``raw``, the precise path admits it with the same task."""
    vouched = fast.vouch(raw)
    if vouched is None:
        return False
    verdict = line_verdict(number, raw, spec)
    assert verdict is not None, raw
    assert verdict.errors == (), (raw, verdict.errors)
    text = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8")
    decoded, problems = parse_line(text)
    assert problems == []
    assert _same(vouched, decoded), raw
    assert TaskSpec.from_dict(vouched) == verdict.task
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


def _broken(task: dict[str, Any], how: str) -> dict[str, Any]:
    t = dict(task)
    value: Any
    if how.startswith("drop:"):
        t.pop(how[5:], None)
        return t
    field, _, literal = how.partition("=")
    value = json.loads(literal)
    if field == "prompt+":
        t["prompt"] = t["prompt"] + value
    else:
        t[field] = value
    return t


BREAKS = [
    "drop:task_id",
    "drop:targets",
    "drop:post_process",
    'extra="x"',
    'task_id=""',
    'task_id="a b"',
    "task_id=7",
    'category="trivia"',
    "category=[1]",
    'prompt=""',
    'prompt="   "',
    'prompt+=" "',
    'prompt+="\\n"',
    "targets=[]",
    'targets="A"',
    "targets=[1]",
    'metric_name="bleu"',
    'metric_name="code_exec"',
    'post_process="lower+none"',
    'post_process=["lower", "none"]',
    'post_process="extract_letter"',
    "post_process=null",
    'few_shot_examples=[{"prompt": "q"}]',
    'few_shot_examples=[{"prompt": "q", "completion": "a", "x": 1}]',
    'few_shot_examples=[{"prompt": "q", "completion": 1}]',
    "few_shot_examples=[[]]",
    'few_shot_examples={"prompt": "q"}',
    "metadata=[]",
    "metadata=null",
]


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
            return abs(v) < 1e16
        if isinstance(v, int) and not isinstance(v, bool):
            return fast.parser == "json" or -(2**63) <= v < 2**63
        return True

    assume(plain(task.get("metadata")))
    assume(b"\\u003" not in raw or ":" not in json.dumps(task, ensure_ascii=False))
    assume(fast.parser == "orjson" or b"\\ud" not in raw.lower())
    assert assert_agree(fast, spec, raw)


@given(data=st.data(), how=st.sampled_from(BREAKS))
def test_fast_path_never_vouches_for_a_task_with_one_rule_broken(
    fast: FastPath, spec: SpecVersion, data: st.DataObject, how: str
) -> None:
    task = _broken(data.draw(tasks(spec)), how)
    raw = data.draw(serialized(task))
    verdict = line_verdict(2, raw, spec)
    assert verdict is not None and verdict.errors
    assert fast.vouch(raw) is None


_VALID = (
    b'{"task_id": "t1", "category": "mcq", "prompt": "Pick: A or B?", "targets": ["A"], '
    b'"metric_name": "exact_match", "post_process": "extract_letter", '
    b'"few_shot_examples": [{"prompt": "Q: x", "completion": "B"}], '
    b'"metadata": {"a": {"b": [1, {"c": "d:e"}]}, "n": 3}}'
)

NASTY = [
    _VALID,
    _VALID.replace(b'"n": 3', b'"n": 3, "n": 4'),  # duplicate in metadata
    _VALID.replace(b'"c": "d:e"', b'"c": "d:e", "c": "x"'),  # duplicate at depth 4
    _VALID.replace(b'{"prompt": "Q: x",', b'{"prompt": "Q: x", "prompt": "Q: y",'),
    _VALID.replace(b'"t1", ', b'"t1", "task_id": "t2", '),  # top-level duplicate
    _VALID.replace(b'"t1", ', b'"t1", "task_id" : "t2", '),  # with a space before ':'
    # A duplicate hidden by an escaped colon elsewhere (\u003a decodes to ':').
    _VALID.replace(b'"n": 3', b'"n": 3, "n": 4').replace(b"d:e", b"d\\u003a\\u003ae"),
    _VALID.replace(b"d:e", b"d\\u003ae"),  # an escaped colon alone is fine
    _VALID.replace(b'"n": 3', b'"n": 12345678901234567890123'),  # big integer
    _VALID.replace(b'"n": 3', b'"n": 18446744073709551616'),  # 2**64: a float in orjson
    _VALID.replace(b'"n": 3', b'"n": -9223372036854775809'),
    _VALID.replace(b'"n": 3', b'"n": 9223372036854775807'),
    _VALID.replace(b'"n": 3', b'"n": 1' + b"0" * 5000),  # beyond int max str digits
    _VALID.replace(b'"n": 3', b'"n": 1e18'),
    _VALID.replace(b'"n": 3', b'"n": 1e19'),
    _VALID.replace(b'"n": 3', b'"n": NaN'),
    _VALID.replace(b'"n": 3', b'"n": -Infinity'),
    _VALID.replace(b'"n": 3', b'"n": 1e400'),
    _VALID.replace(b'"n": 3', b'"n": 1e-400'),
    _VALID.replace(b'"n": 3', b'"n": -0.0'),
    _VALID.replace(b'"d:e"', b'"\\ud800"'),  # lone surrogate
    _VALID.replace(b'"d:e"', b'"\\udc00\\ud800"'),
    _VALID.replace(b'"d:e"', b'"\\ud83d\\ude00"'),  # a proper pair
    _VALID.replace(b'"d:e"', b'"\xed\xa0\x80"'),  # a surrogate in UTF-8 bytes
    _VALID.replace(b'"d:e"', b'"\xff"'),  # invalid UTF-8
    _VALID.replace(b'"d:e"', b'"\xc3"'),
    _VALID.replace(b'"n": 3', b'"n": ' + b"[" * 900 + b"]" * 900),  # deep
    _VALID.replace(b'"n": 3', b'"n": ' + b"[" * 60 + b"]" * 60),
    _VALID.replace(b'"n": 3', b'"n": ' + b"[" * 70 + b"]" * 70),
    b"\xef\xbb\xbf" + _VALID,  # BOM (allowed only on line 1)
    _VALID + b"\r\n",
    _VALID + b"\r\r\n",
    _VALID + b"\x0b",
    _VALID + b" x",
    _VALID.replace(b'"d:e"', b'"a\x01b"'),  # raw control character
    _VALID.replace(b'"d:e"', b'"a\x7fb"'),
    _VALID.replace(b"Pick: A or B?", b"Pick: A or B? "),
    _VALID.replace(b"Pick: A or B?", b"Q: x B\\n\\nPick:"),  # answered cue
    _VALID.replace(b"Pick: A or B?", b"Say Q: x B please"),  # contains the example
    _VALID.replace(b'"t1"', b'"t\\u00a01"'),  # a no-break space in the id
    _VALID.replace(b'"t1"', b'"t\\u20281"'),
    b"[" + _VALID + b"]",
    b"",
    b"   ",
    b"\x0c",
    b"null",
    b"{}",
]


@pytest.mark.parametrize("raw", NASTY)
@pytest.mark.parametrize("number", [1, 2])
def test_fast_and_precise_paths_agree_on_nasty_lines(
    fast: FastPath, spec: SpecVersion, raw: bytes, number: int
) -> None:
    assert_agree(fast, spec, raw, number)


def test_fast_path_vouches_for_the_plain_valid_line(fast: FastPath) -> None:
    assert fast.vouch(_VALID) is not None
    assert fast.vouch(_VALID.replace(b"d:e", b"d\\u003ae")) is None  # could hide a repeat


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
