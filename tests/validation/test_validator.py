"""Every validation rule, stage ordering, and hostile input."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from evalspec import Registry, TaskSpec, iter_validate, validate_file, validate_task
from evalspec.rules import RULES


def task(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "task_id": "t1",
        "category": "arithmetic",
        "prompt": "Question: 17 + 24\nAnswer:",
        "targets": ["41"],
        "metric_name": "exact_match",
        "post_process": "strip_whitespace",
    }
    for key, value in changes.items():
        if value is ...:
            base.pop(key)
        else:
            base[key] = value
    return base


def rules_of(obj: Any, registry: Registry) -> list[tuple[str, str | None]]:
    _, errors = validate_task(obj, registry=registry)
    return [(e.rule, e.field) for e in errors]


def lines(*objs: Any) -> io.BytesIO:
    out = b""
    for o in objs:
        out += (o if isinstance(o, bytes) else json.dumps(o).encode()) + b"\n"
    return io.BytesIO(out)


def test_valid_task_gives_a_taskspec(registry: Registry) -> None:
    t, errors = validate_task(task(metadata={"difficulty": "easy"}), registry=registry)
    assert errors == []
    assert isinstance(t, TaskSpec)
    assert t.targets == ("41",)
    assert t.few_shot_examples == ()
    assert t.metadata == {"difficulty": "easy"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (task(task_id=""), [("bad_task_id", "task_id")]),
        (task(task_id="a b"), [("bad_task_id", "task_id")]),
        (task(task_id="a\u3000b"), [("bad_task_id", "task_id")]),
        (task(task_id="a\u00a0"), [("bad_task_id", "task_id")]),
        (task(category="arith"), [("unknown_category", "category")]),
        (task(prompt=""), [("empty_prompt", "prompt")]),
        (task(prompt=" \u2003\n "), [("empty_prompt", "prompt")]),
        (task(prompt="Answer: \u3000"), [("prompt_trailing_whitespace", "prompt")]),
        (task(prompt="Q?\n"), [("prompt_trailing_whitespace", "prompt")]),
        (task(targets=[]), [("empty_targets", "targets")]),
        (task(metric_name="bleu"), [("unknown_metric", "metric_name")]),
        (task(post_process="strip"), [("unknown_post_process", "post_process")]),
        (task(post_process="lower+strip_whitespace"), [("combined_post_process", "post_process")]),
        (task(post_process="none | lower"), [("combined_post_process", "post_process")]),
        (task(post_process="none lower"), [("combined_post_process", "post_process")]),
        (
            task(post_process="lower;none>strip_whitespace"),
            [("combined_post_process", "post_process")],
        ),
        (task(post_process=["lower", "none"]), [("combined_post_process", "post_process")]),
        (task(metric_name="f1"), [("illegal_metric", "metric_name")]),
        (task(post_process="lower"), [("illegal_post_process", "post_process")]),
        (
            task(metric_name="f1", post_process="lower"),
            [("illegal_metric", "metric_name"), ("illegal_post_process", "post_process")],
        ),
    ],
)
def test_each_rule_is_reported_with_its_field(
    registry: Registry, obj: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert rules_of(obj, registry) == expected


def test_targets_may_hold_an_empty_string(registry: Registry) -> None:
    assert rules_of(task(targets=[""]), registry) == []


def test_missing_and_unknown_fields_one_error_each(registry: Registry) -> None:
    got = rules_of(task(targets=..., prompt=..., extra=1, other=2), registry)
    assert sorted(got) == [
        ("missing_field", "prompt"),
        ("missing_field", "targets"),
        ("unknown_field", "extra"),
        ("unknown_field", "other"),
    ]


def test_misspelt_key_gives_unknown_and_missing_with_suggestion(registry: Registry) -> None:
    _, errors = validate_task(task(targets=..., target=["41"]), registry=registry)
    assert sorted((e.rule, e.field) for e in errors) == [
        ("missing_field", "targets"),
        ("unknown_field", "target"),
    ]
    unknown = next(e for e in errors if e.rule == "unknown_field")
    assert "did you mean 'targets'?" in unknown.message


def test_unknown_category_suggests_a_close_name(registry: Registry) -> None:
    _, errors = validate_task(task(category="arithmatic"), registry=registry)
    assert "did you mean 'arithmetic'?" in errors[0].message


def test_suggestions_are_the_same_for_a_name_seen_again_and_for_a_very_long_one(
    registry: Registry,
) -> None:
    from evalspec.validation import precise as linecheck

    for _ in range(2):  # the second time from the cache
        _, errors = validate_task(task(category="arithmatic"), registry=registry)
        assert "did you mean 'arithmetic'?" in errors[0].message
        _, errors = validate_task(task(targets=..., target=["41"]), registry=registry)
        missing = next(e for e in errors if e.rule == "missing_field")
        assert "(found 'target'; did you mean 'targets'?)" in missing.message
    # A hostile file's long names are matched, but never kept by the cache.
    long_name = "arithmetic" + "x" * 5000
    before = linecheck._closest_cached.cache_info().currsize
    for i in range(3):
        _, errors = validate_task(task(category=long_name + str(i)), registry=registry)
        assert [e.rule for e in errors] == ["unknown_category"]
        _, errors = validate_task(task(targets=..., **{long_name + str(i): 1}), registry=registry)
        assert sorted(e.rule for e in errors) == ["missing_field", "unknown_field"]
    assert linecheck._closest_cached.cache_info().currsize == before


def test_duplicate_keys_are_found_while_other_threads_parse(registry: Registry) -> None:
    # The parser skips its walk for repeated keys when no object repeated one
    # during the parse, counted across threads: no thread may miss its own.
    import threading

    from evalspec.io.jsonline import parse_line

    plain = json.dumps({"a": {"b": [1, {"c": 2}]}, "d": 3})
    repeated = '{"a": {"b": [1, {"c": 2, "c": 3}]}, "d": 3}'
    failures: list[str] = []

    def parse(text: str, want: list[str]) -> None:
        for _ in range(2000):
            _, problems = parse_line(text)
            if [p.field for p in problems] != want:
                failures.append(text)
                return

    threads = [
        threading.Thread(target=parse, args=(plain, [])),
        threading.Thread(target=parse, args=(repeated, ["a.b[1].c"])),
        threading.Thread(target=parse, args=(plain, [])),
        threading.Thread(target=parse, args=(repeated, ["a.b[1].c"])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("task_id", 7, "task_id"),
        ("task_id", True, "task_id"),
        ("category", None, "category"),
        ("prompt", ["x"], "prompt"),
        ("targets", "41", "targets"),
        ("targets", ["41", 41], "targets[1]"),
        ("targets", [False], "targets[0]"),
        ("metric_name", 1.5, "metric_name"),
        ("post_process", {"rule": "none"}, "post_process"),
        ("post_process", [], "post_process"),
        ("post_process", ["none", 1], "post_process"),
        ("few_shot_examples", {}, "few_shot_examples"),
        ("few_shot_examples", ["x"], "few_shot_examples[0]"),
        (
            "few_shot_examples",
            [{"prompt": "p", "completion": 4}],
            "few_shot_examples[0].completion",
        ),
        ("metadata", [], "metadata"),
    ],
)
def test_wrong_type_names_the_path(registry: Registry, field: str, value: Any, path: str) -> None:
    assert rules_of(task(**{field: value}), registry) == [("wrong_type", path)]


def test_all_wrong_types_in_the_stage_are_reported(registry: Registry) -> None:
    got = rules_of(task(task_id=1, targets=[1, 2], metadata=3), registry)
    assert got == [
        ("wrong_type", "task_id"),
        ("wrong_type", "targets[0]"),
        ("wrong_type", "targets[1]"),
        ("wrong_type", "metadata"),
    ]


def test_first_failing_stage_stops_the_line(registry: Registry) -> None:
    # Missing field (stage 2) hides the bad type (stage 3) and the bad category (stage 4).
    assert rules_of(task(post_process=..., targets="x", category="nope"), registry) == [
        ("missing_field", "post_process")
    ]
    # Bad type (stage 3) hides the field rules (stage 4).
    assert rules_of(task(targets="x", category="nope"), registry) == [("wrong_type", "targets")]
    # Field rules (stage 4) hide the pair rules (stage 5).
    assert rules_of(task(prompt="Q ", metric_name="f1"), registry) == [
        ("prompt_trailing_whitespace", "prompt")
    ]


def test_every_field_rule_in_a_stage_is_reported(registry: Registry) -> None:
    got = rules_of(
        task(task_id="a b", category="x", targets=[], metric_name="m", post_process="p"),
        registry,
    )
    assert got == [
        ("bad_task_id", "task_id"),
        ("unknown_category", "category"),
        ("empty_targets", "targets"),
        ("unknown_metric", "metric_name"),
        ("unknown_post_process", "post_process"),
    ]


def test_empty_prompt_hides_the_other_prompt_rules(registry: Registry) -> None:
    assert rules_of(task(prompt="   "), registry) == [("empty_prompt", "prompt")]


def test_few_shot_limit_and_shape(registry: Registry) -> None:
    ok = [{"prompt": f"Question: {i}\nAnswer:", "completion": str(i)} for i in range(8)]
    assert rules_of(task(few_shot_examples=ok), registry) == []
    too_many = [*ok, {"prompt": "Question: 9\nAnswer:", "completion": "9"}]
    assert rules_of(task(few_shot_examples=too_many), registry) == [
        ("too_many_few_shot", "few_shot_examples")
    ]
    bad = [{"prompt": "p"}, {"prompt": "p", "completion": "c", "x": 1}, {"completion": "c"}]
    assert rules_of(task(few_shot_examples=bad), registry) == [
        ("few_shot_shape", "few_shot_examples[0]"),
        ("few_shot_shape", "few_shot_examples[1]"),
        ("few_shot_shape", "few_shot_examples[2]"),
    ]


@pytest.mark.parametrize("targets", [["b"], ["B", "C"], ["F"], ["AB"], [""], ["\uff21"], [" A"]])
def test_mcq_target_is_one_letter_a_to_e(registry: Registry, targets: list[str]) -> None:
    obj = task(
        category="mcq",
        prompt="Pick.\nA. x\nB. y\nAnswer:",
        targets=targets,
        post_process="extract_letter",
    )
    assert rules_of(obj, registry) == [("mcq_target", "targets")]


def test_mcq_with_a_single_letter_is_valid(registry: Registry) -> None:
    for letter in "ABCDE":
        obj = task(
            category="mcq", prompt="Pick.\nAnswer:", targets=[letter], post_process="extract_letter"
        )
        assert rules_of(obj, registry) == []


def test_pair_table_of_spec_v1(registry: Registry) -> None:
    table = {
        "arithmetic": (
            {"exact_match", "accuracy"},
            {"none", "strip_whitespace", "extract_first_line"},
        ),
        "mcq": ({"exact_match"}, {"extract_letter", "strip_whitespace", "none"}),
        "code_exec": ({"code_exec"}, {"extract_code_block", "none"}),
        "classification": (
            {"exact_match", "accuracy", "f1"},
            {"none", "strip_whitespace", "lower", "extract_first_line"},
        ),
        "summary": (
            {"rouge_l", "bleu_4", "f1"},
            {"none", "strip_whitespace", "extract_first_line"},
        ),
    }
    spec = registry.at_version(1).spec
    for category in spec.categories:
        for metric in spec.metrics:
            for rule in spec.post_processes:
                obj = task(category=category, metric_name=metric, post_process=rule, targets=["A"])
                got = {r for r, _ in rules_of(obj, registry)}
                metrics, rules = table[category]
                assert ("illegal_metric" in got) == (metric not in metrics), (category, metric)
                assert ("illegal_post_process" in got) == (rule not in rules), (category, rule)


# -- embedded few-shot ----------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "Question: 2 + 2\nAnswer: 4\n\nQuestion: 17 + 24\nAnswer:",
        "Q: 1+1\nA: 2\n\nQ: 3+3\nA: 6\n\nQ: 5+5\nA:",
        "Input: cat\nOutput:\ndog\n\nInput: sun\nOutput:",
        "Question: 2 + 2\nAnswer: 4\n \t\nQuestion: 17 + 24\nAnswer:",
        "\u95ee\u9898\uff1a2+2\n\u7b54\u6848\uff1a 4\n\n\u95ee\u9898\uff1a3+3\n\u7b54\u6848\uff1a",
    ],
)
def test_prompt_with_an_answered_cue_is_rejected(registry: Registry, prompt: str) -> None:
    assert rules_of(task(prompt=prompt), registry) == [("prompt_embedded_few_shot", "prompt")]


@pytest.mark.parametrize(
    "prompt",
    [
        "Summarize.\n\nThe council met on Tuesday.\n\nIt voted yes.\n\nSummary:",
        "Context: a long passage.\n\nMore context here.\n\nQuestion: what?\nAnswer:",
        "Answer:\n\nQuestion: 17 + 24\nAnswer:",
        "The Answer: is that\n\nQuestion: 1\nAnsweri:",
        "Question: 17 + 24\nAnswer:",
        "Para one.\n\nPara two, no cue at the end.",
        "Reply: x\n\nAnswer:",
    ],
)
def test_prompt_without_an_answered_cue_is_accepted(registry: Registry, prompt: str) -> None:
    assert rules_of(task(prompt=prompt), registry) == []


def test_own_few_shot_example_inside_the_prompt_is_rejected(registry: Registry) -> None:
    examples = [{"prompt": "Question: 2 + 2\nAnswer:", "completion": "4"}]
    inside = "Solve.\nQuestion: 2 + 2\nAnswer: 4\nQuestion: 17 + 24\nAnswer:"
    assert rules_of(task(prompt=inside, few_shot_examples=examples), registry) == [
        ("prompt_embedded_few_shot", "prompt")
    ]
    reflowed = "Solve. Question: 2 + 2 Answer:\n4 then Question: 17 + 24\nAnswer:"
    assert rules_of(task(prompt=reflowed, few_shot_examples=examples), registry) == [
        ("prompt_embedded_few_shot", "prompt")
    ]
    assert rules_of(task(few_shot_examples=examples), registry) == []


def test_prompt_can_break_two_prompt_rules_at_once(registry: Registry) -> None:
    got = rules_of(task(prompt="Question: 2\nAnswer: 2\n\nQuestion: 3\nAnswer: "), registry)
    assert got == [
        ("prompt_trailing_whitespace", "prompt"),
        ("prompt_embedded_few_shot", "prompt"),
    ]


# -- parse stage ------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"task_id": "x",}',
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1e400}',
        b'{"a": "\\ud800"}',
        b'{"a": "\\udfff x"}',
        b'{"a": ' + b"1" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": "x\x00"}',
        b'{"a": 1}\x00',
        b'{"a": 1}{"b": 2}',
        b'{"a": 1}\r{"b": 2}',
        b'{"a": "\xff"}',
        b"\xef\xbb\xbf{}",  # a BOM anywhere but the start of the file
        b"{'a': 1}",
    ],
)
def test_unparseable_lines_are_invalid_json(raw: bytes, registry: Registry) -> None:
    result = list(
        iter_validate(lines(task(task_id="first"), raw, task(task_id="last")), registry=registry)
    )
    assert [r.line for r in result] == [1, 2, 3]
    assert result[0].ok and result[2].ok
    assert [e.rule for e in result[1].errors] == ["invalid_json"]
    assert result[1].errors[0].line == 2


def test_duplicate_keys_at_any_depth(registry: Registry) -> None:
    raw = (
        b'{"task_id": "t", "task_id": "u", "category": "arithmetic", "prompt": "Q:",'
        b' "targets": ["1"], "metric_name": "exact_match", "post_process": "none",'
        b' "metadata": {"x": 1, "x": 2, "y": {"z": 1, "z": 1}}}'
    )
    _, errors = validate_task(raw, registry=registry)
    assert [(e.rule, e.field) for e in errors] == [
        ("duplicate_key", "task_id"),
        ("duplicate_key", "metadata.x"),
        ("duplicate_key", "metadata.y.z"),
    ]


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"null", b"42", b"true"])
def test_json_that_is_not_an_object(raw: bytes, registry: Registry) -> None:
    _, errors = validate_task(raw, registry=registry)
    assert [e.rule for e in errors] == ["not_object"]


def test_paired_surrogate_escape_is_fine(registry: Registry) -> None:
    raw = json.dumps(task(prompt="smile \\ud83d\\ude00 Q:")).replace("\\\\", "\\").encode()
    t, errors = validate_task(raw, registry=registry)
    assert errors == []
    assert t is not None and "\U0001f600" in t.prompt


# -- file framing ------------------------------------------------------------------


def test_bom_crlf_and_missing_final_newline_are_accepted(registry: Registry) -> None:
    a, b = json.dumps(task(task_id="a")).encode(), json.dumps(task(task_id="b")).encode()
    data = b"\xef\xbb\xbf" + a + b"\r\n" + b
    validated, errors = validate_file(io.BytesIO(data), registry=registry)
    assert errors == []
    assert [t.task_id for t in validated] == ["a", "b"]


def test_blank_lines_are_skipped_but_keep_line_numbers(registry: Registry) -> None:
    data = b"\n   \n" + json.dumps(task(task_id="a")).encode() + b"\n\t\r\n\xc2\xa0\n{\n"
    result = validate_file(io.BytesIO(data), registry=registry)
    assert result.total == 2 and result.valid == 1 and result.invalid == 1
    assert [e.line for e in result.errors] == [6]


def test_line_separators_inside_a_line_do_not_end_it(registry: Registry) -> None:
    prompt = "Question:\u2028 17\u2029 + 24\u0085\x0b\x0c\x1c\nAnswer:"
    result = validate_file(lines(task(prompt=prompt)), registry=registry)
    assert result.total == 1 and result.errors == []
    assert result.validated[0].prompt == prompt


def test_every_non_blank_line_is_accounted_for(registry: Registry) -> None:
    data = lines(task(task_id="a"), b"{", task(task_id="b"), task(task_id="a"), b"[]", b"")
    result = validate_file(data, registry=registry)
    assert result.total == 5
    assert result.valid + result.invalid == result.total
    assert {e.line for e in result.errors} == {2, 4, 5}


def test_duplicate_task_id_names_the_first_line(registry: Registry) -> None:
    data = lines(task(task_id="a"), task(task_id="b"), task(task_id="a"), task(task_id="a"))
    result = validate_file(data, registry=registry)
    assert [t.task_id for t in result.validated] == ["a", "b"]
    assert [(e.line, e.rule) for e in result.errors] == [
        (3, "duplicate_task_id"),
        (4, "duplicate_task_id"),
    ]
    assert "line 1" in result.errors[0].message


def test_a_rejected_line_never_blocks_a_later_id(registry: Registry) -> None:
    data = lines(task(task_id="a", category="nope"), task(task_id="a"))
    result = validate_file(data, registry=registry)
    assert [t.task_id for t in result.validated] == ["a"]
    assert [(e.line, e.rule) for e in result.errors] == [(1, "unknown_category")]


def test_huge_line_is_validated_and_the_rest_continues(registry: Registry) -> None:
    big = task(task_id="big", metadata={"blob": "x" * (50 * 1024 * 1024)})
    data = lines(big, b"{", task(task_id="after"))
    result = validate_file(data, registry=registry)
    assert [t.task_id for t in result.validated] == ["big", "after"]
    assert len(result.errors) == 1
    assert len(result.errors[0].text) < 2000


def test_error_record_carries_line_text_and_task_id(registry: Registry) -> None:
    raw = json.dumps(task(task_id="x1", category="nope"))
    result = validate_file(lines(b"", raw.encode()), registry=registry)
    (e,) = result.errors
    assert (e.line, e.rule, e.field, e.task_id, e.text) == (
        2,
        "unknown_category",
        "category",
        "x1",
        raw,
    )
    assert e.to_dict() == {
        "line": 2,
        "rule": "unknown_category",
        "field": "category",
        "message": e.message,
        "task_id": "x1",
        "text": raw,
    }


def test_result_unpacks_as_validated_and_errors(registry: Registry) -> None:
    result = validate_file(lines(task()), registry=registry)
    validated, errors = result
    assert validated == result.validated and errors == result.errors == []


def test_validate_file_reads_a_path(tmp_path: Any, registry: Registry) -> None:
    p = tmp_path / "tasks.jsonl"
    p.write_bytes(lines(task(), b"oops").getvalue())
    result = validate_file(p, registry=registry)
    assert result.path == str(p)
    assert (result.total, result.valid, result.invalid) == (2, 1, 1)


def test_validate_file_raises_oserror_for_a_missing_file(tmp_path: Any) -> None:
    with pytest.raises(OSError):
        validate_file(tmp_path / "absent.jsonl")


def test_rule_vocabulary_is_the_documented_one() -> None:
    assert list(RULES) == [
        "invalid_json", "duplicate_key", "not_object", "missing_field", "unknown_field",
        "wrong_type", "bad_task_id", "unknown_category", "empty_prompt",
        "prompt_trailing_whitespace", "prompt_embedded_few_shot", "empty_targets",
        "unknown_metric", "too_many_few_shot", "few_shot_shape", "unknown_post_process",
        "bad_field_value", "combined_post_process", "illegal_metric", "illegal_post_process",
        "mcq_target", "illegal_field", "duplicate_task_id",
    ]  # fmt: skip


def test_every_reported_rule_is_in_the_vocabulary(registry: Registry) -> None:
    data = io.BytesIO(b"\n".join([b"{", b"[]", b'{"a": 1}']))
    for verdict in iter_validate(data, registry=registry):
        assert all(e.rule in RULES for e in verdict.errors)


def test_line_outcomes_is_one_loop_for_the_fast_and_the_precise_path(registry: Registry) -> None:
    # The loop validate's line iterator and lint's reader share: a vouched line comes
    # decoded, any other with its verdict; a valid task names the first line of its id.
    from operator import itemgetter

    from evalspec.validation.fast import FastPath
    from evalspec.validation.validator import line_outcomes

    raw = lines(task(task_id="a"), task(task_id="b"), task(task_id="a")).read().splitlines(True)
    raw.insert(1, b"\n")  # a blank line keeps its number
    raw.append(b"{not json\n")
    spec = registry.spec
    for vouch in (None, FastPath(spec).vouch):
        first_seen: dict[str, int] = {}
        got = list(line_outcomes(raw, spec, vouch, itemgetter("task_id"), first_seen))
        assert [(n, first) for n, _, _, _, first in got] == [(1, 1), (2, 0), (3, 3), (4, 1), (5, 0)]
        assert first_seen == {"a": 1, "b": 3}
        blank, broken = got[1][3], got[4][3]
        assert blank is None and broken is not None and broken.errors
        for _, _, vouched, verdict, _ in (got[0], got[2], got[3]):
            if vouch is None:
                assert vouched is None and verdict is not None and verdict.task is not None
            else:
                assert vouched is not None and verdict is None
