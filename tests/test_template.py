"""The import mapping's template language (evalspec/template.py): holes,
indexes, filters and escapes, and the errors of a template that cannot be read or filled."""

from __future__ import annotations

from typing import Any

import pytest

from evalspec.template import (
    TemplateSyntaxError,
    TemplateValueError,
    compile_template,
)

ROW: dict[str, Any] = {
    "question": "  What is 2+2?  ",
    "choices": ["3", "4", "5"],
    "answer": 1,
    "meta": {"subject": "math", "n": 3},
    "solution": "2 + 2 = 4\n#### 4",
    "flag": True,
}
SPECIALS = {"@row": 7, "@stem": "test", "@choices": ["x", "y"]}


def fill(source: str) -> str:
    return compile_template(source, tuple(SPECIALS)).render(ROW, SPECIALS)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Q: {question|strip}", "Q: What is 2+2?"),
        ("{choices[0]}/{choices[-1]}", "3/5"),
        ("{meta.subject} {meta.n}", "math 3"),
        ("{answer|letter}", "B"),
        ("{choices|lettered}", "A. 3\nB. 4\nC. 5"),
        ("{choices|lettered:; }", "A. 3; B. 4; C. 5"),
        ("{choices|join:, }", "3, 4, 5"),
        ("{choices|join:\\n}", "3\n4\n5"),
        ("{solution|after:####|strip}", "4"),
        ("{solution|before:\\n}", "2 + 2 = 4"),
        ("{meta.subject|upper}", "MATH"),
        ("{{literal}} {@row}-{@stem}", "{literal} 7-test"),
        ("{@choices|lettered}", "A. x\nB. y"),
        ("{flag}", "true"),
        ("{choices|join:a\\|b}", "3a|b4a|b5"),
        ("{@row|plus:1}", "8"),
        ("{meta.n|plus:-3}", "0"),
        ("{answer|plus:10}", "11"),
    ],
)
def test_templates_fill_from_the_row(source: str, expected: str) -> None:
    assert fill(source) == expected


@pytest.mark.parametrize(
    ("source", "rule", "message"),
    [
        ("{nope}", "missing_column", "the row has no column 'nope'"),
        ("{choices[3]}", "missing_column", "choices[3]: choices is a list of 3"),
        ("{meta.missing}", "missing_column", "meta has no key 'missing'"),
        ("{question.x}", "missing_column", "question is not an object, so no 'x'"),
        ("{choices}", "bad_value", "{choices} is a list; pick one item"),
        ("{meta}", "bad_value", "{meta} is an object"),
        ("{question|letter}", "bad_value", "|letter needs an index from 0 to 25"),
        ("{solution|after:%%}", "bad_value", "|after:%% found no '%%'"),
        ("{answer|join:,}", "bad_value", "|join needs a list"),
        ("{question|plus:1}", "bad_value", "|plus needs an integer, and {question|plus:1} is"),
        ("{flag|plus:1}", "bad_value", "|plus needs an integer"),
        ("{choices|plus:1}", "bad_value", "|plus needs an integer"),
    ],
)
def test_a_row_that_cannot_fill_the_template_is_a_value_error(
    source: str, rule: str, message: str
) -> None:
    with pytest.raises(TemplateValueError) as info:
        fill(source)
    assert info.value.rule == rule
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{question", "the brace at character 1 is never closed"),
        ("a } b", "a lone } at character 3"),
        ("{}", "does not start with a column name"),
        ("{question|eval}", "unknown filter 'eval'"),
        ("{question|after}", "|after needs an argument"),
        ("{question|strip:x}", "|strip takes no argument"),
        ("{question()}", "cannot read '()'"),
        ("{question.__class__.__mro__[1].__subclasses__()}", "cannot read '()'"),
        ("{@secret}", "unknown name '@secret'"),
        ("{question|}", "unknown filter ''"),
        ("{answer|plus:x}", "|plus needs an integer (|plus:1)"),
        ("{answer|plus}", "|plus needs an argument"),
    ],
)
def test_a_template_that_cannot_be_read_is_a_syntax_error(source: str, message: str) -> None:
    with pytest.raises(TemplateSyntaxError, match=None) as info:
        compile_template(source, tuple(SPECIALS))
    assert message in str(info.value)


def test_dunder_names_read_only_the_row_never_python_attributes() -> None:
    # `.key` is a key of a JSON object; on a string it is a missing key, not an attribute.
    template = compile_template("{question.__class__}")
    with pytest.raises(TemplateValueError, match="not an object"):
        template.render(ROW, SPECIALS)


def test_a_single_hole_naming_a_list_gives_its_items() -> None:
    assert compile_template("{choices}").values(ROW, SPECIALS) == ["3", "4", "5"]
    assert compile_template("{answer}").values(ROW, SPECIALS) == ["1"]
    assert compile_template("x{choices[0]}").values(ROW, SPECIALS) == ["x3"]


def test_a_column_whose_name_is_not_a_word_is_named_in_quotes() -> None:
    row = {"Unnamed: 0": 5, "meta": {"a key": "v", 'say "hi"': "q"}}
    assert compile_template('{["Unnamed: 0"]}').render(row, {}) == "5"
    assert compile_template('{meta["a key"]|upper}').render(row, {}) == "V"
    assert compile_template('{meta["say \\"hi\\""]}').render(row, {}) == "q"
    # Quoted, an @name is a column like any other, never a special name.
    assert compile_template('{["@row"]}').render({"@row": "col"}, {"@row": 1}) == "col"


def test_a_value_that_is_not_text_is_named_by_its_type() -> None:
    import datetime

    with pytest.raises(TemplateValueError, match="is a date value, not text"):
        compile_template("{d}").render({"d": datetime.date(2020, 1, 1)}, {})
    with pytest.raises(TemplateValueError, match="is a bytes value, not text"):
        compile_template("{b}").render({"b": b"\x00"}, {})
