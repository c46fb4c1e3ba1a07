"""Hostile task lines shared by the fast-path and lint-reading tests: one valid line
(``_VALID``) and its variants (``NASTY``) at every edge the fast path must not
vouch across (repeated keys at any depth, escapes, numbers, encodings, depth)."""

from evalspec.validation.fast import TYPED_MAX_DEPTH

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
    _VALID.replace(b'"completion": "B"', b'"completion": "B", "completion": "C"'),  # in an example
    _VALID.replace(b'"n": 3', b'"n": 3, "\\u006e": 4'),  # the repeat's name escaped
    _VALID.replace(b'"t1", ', b'"t1", "category": "mcq", '),  # the tag twice
    _VALID.replace(b'"t1", ', b'"t1", "category": "summary", '),
    _VALID.replace(b'"n": 3', b'"n": ' + b"[" * TYPED_MAX_DEPTH + b"]" * TYPED_MAX_DEPTH),
    _VALID.replace(
        b'"n": 3', b'"n": ' + b"[" * (TYPED_MAX_DEPTH + 1) + b"]" * (TYPED_MAX_DEPTH + 1)
    ),
    _VALID.replace(b'"n": 3', b'"n": ' + b'{"a": ' * 300 + b"1" + b"}" * 300),
    _VALID.replace(b'"metadata": {', b'"metadata": {"few_shot_examples": [], '),
    _VALID.replace(b'"targets": ["A"]', b'"targets": ["A", "A"]'),
    _VALID.replace(b'"targets": ["A"]', b'"targets": ["a"]'),
    _VALID.replace(b'"targets": ["A"]', b'"targets": []'),
    _VALID.replace(b'"few_shot_examples": [', b'"few_shot_examples": null, "x": ['),
    _VALID.replace(b'"Q: x"', b'"Q: \\u003a"'),
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
    # The example filter looks at no more than 64 characters at either end of the
    # example's prompt: tokens longer than that, whitespace beyond it, none at all.
    _VALID.replace(b"Pick: A or B?", b"Say " + b"q" * 100 + b"\\n\\t x B ok").replace(
        b'"Q: x"', b'"' + b"q" * 100 + b' x"'
    ),
    _VALID.replace(b"Pick: A or B?", b"Say Q:\\nx" + b"y" * 100 + b" B ok").replace(
        b'"Q: x"', b'"Q: x' + b"y" * 100 + b'"'
    ),
    _VALID.replace(b"Pick: A or B?", b"Say Q: x B ok").replace(
        b'"Q: x"', b'"Q: x' + b" " * 70 + b'"'
    ),
    _VALID.replace(b"Pick: A or B?", b"Say Q: x B ok").replace(
        b'"Q: x"', b'"' + b" " * 70 + b'Q: x"'
    ),
    _VALID.replace(b'"Q: x"', b'"  \\n "'),  # a blank example prompt: "B" alone is in it
    _VALID.replace(b'"Q: x", "completion": "B"', b'"ck: A", "completion": "or B?"'),
    _VALID.replace(b'"t1"', b'"t\\u00a01"'),  # a no-break space in the id
    _VALID.replace(b'"t1"', b'"t\\u20281"'),
    b"[" + _VALID + b"]",
    b"",
    b"   ",
    b"\x0c",
    b"null",
    b"{}",
]
