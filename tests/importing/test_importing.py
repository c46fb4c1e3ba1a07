"""``evalspec import``: benchmark rows through a mapping file into validated tasks
(evalspec/importing, evalspec/cli/commands/import_.py). Real files, the real
validator, the real command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import git_repo
from hypothesis import given
from hypothesis import strategies as st

from evalspec.importing.mapping import MappingError, read_mapping
from evalspec.importing.rows import HEADER
from evalspec.importing.tasks import FewShotError, ImportResult, format_report, import_rows
from evalspec.validation.validator import validate_file

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "fixtures" / "benchmarks"

QA_MAPPING = """\
spec_version: 1
task_id: "qa/{id}"
category: arithmetic
metric: exact_match
post_process: strip_whitespace
prompt: "Question: {q}\\nAnswer:"
target: "{a}"
"""


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "import", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def mapping_file(tmp_path: Path, text: str = QA_MAPPING, name: str = "mapping.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def imported(tmp_path: Path, rows_file: Path, text: str = QA_MAPPING) -> ImportResult:
    return import_rows(rows_file, read_mapping(mapping_file(tmp_path, text)))


def reports(result: ImportResult) -> list[tuple[int, str, str | None]]:
    return [(p.row, p.rule, p.field) for p in result.problems]


# -- the shipped slices --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rows_file", "count"),
    [
        ("gsm8k", "test.jsonl", 12),
        ("mmlu", "high_school_computer_science_test.csv", 12),
        ("humaneval", "HumanEval.jsonl", 10),
    ],
)
def test_each_shipped_slice_imports_into_tasks_the_validator_admits(
    name: str, rows_file: str, count: int, tmp_path: Path
) -> None:
    result = import_rows(
        BENCHMARKS / name / rows_file, read_mapping(BENCHMARKS / name / "mapping.yaml")
    )
    assert result.problems == ()
    assert len(result.tasks) == count
    out = tmp_path / "tasks.jsonl"
    out.write_text(result.text(), encoding="utf-8")
    validated = validate_file(out, spec_version=1)
    assert (validated.total, validated.invalid) == (count, 0)


def test_gsm8k_targets_are_the_final_answers_after_the_four_hashes() -> None:
    result = import_rows(
        BENCHMARKS / "gsm8k" / "test.jsonl", read_mapping(BENCHMARKS / "gsm8k" / "mapping.yaml")
    )
    rows = (BENCHMARKS / "gsm8k" / "test.jsonl").read_text("utf-8").splitlines()
    for task, raw in zip(result.tasks, rows, strict=True):
        line = json.loads(task.line)
        row = json.loads(raw)
        assert line["targets"] == [row["answer"].rpartition("####")[2].strip()]
        assert line["prompt"] == f"Question: {row['question']}\nAnswer:"
    assert json.loads(result.tasks[0].line)["targets"] == ["18"]


def test_mmlu_rows_keep_their_embedded_newlines_and_take_five_dev_examples() -> None:
    result = import_rows(
        BENCHMARKS / "mmlu" / "high_school_computer_science_test.csv",
        read_mapping(BENCHMARKS / "mmlu" / "mapping.yaml"),
    )
    tasks = [json.loads(t.line) for t in result.tasks]
    assert all(len(t["few_shot_examples"]) == 5 for t in tasks)
    assert tasks[0]["few_shot_examples"][0]["completion"] == "C"
    assert (
        tasks[0]["prompt"]
        == "Let x = 1. What is x << 3 in Python 3?\nA. 1\nB. 3\nC. 8\nD. 16\nAnswer:"
    )
    multi = [t for t in tasks if "\n IF" in t["prompt"] or "\nIF" in t["prompt"]]
    assert multi, "the slice's questions with code keep their newlines"
    assert all(t["targets"][0] in "ABCD" for t in tasks)
    assert [t.row for t in result.tasks] == list(range(1, 13))


def test_humaneval_targets_run_the_published_tests_against_the_entry_point() -> None:
    result = import_rows(
        BENCHMARKS / "humaneval" / "HumanEval.jsonl",
        read_mapping(BENCHMARKS / "humaneval" / "mapping.yaml"),
    )
    rows = [
        json.loads(r)
        for r in (BENCHMARKS / "humaneval" / "HumanEval.jsonl").read_text("utf-8").splitlines()
    ]
    for task, row in zip(result.tasks, rows, strict=True):
        line = json.loads(task.line)
        assert line["task_id"] == row["task_id"]
        assert line["targets"] == [f"{row['test']}\n\ncheck({row['entry_point']})"]
        assert row["prompt"].rstrip() in line["prompt"]


def test_gzipped_jsonl_imports_as_the_published_humaneval_file_is_downloaded(
    tmp_path: Path,
) -> None:
    import gzip

    plain = BENCHMARKS / "humaneval" / "HumanEval.jsonl"
    packed = tmp_path / "HumanEval.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    mapping = read_mapping(BENCHMARKS / "humaneval" / "mapping.yaml")
    assert import_rows(packed, mapping).tasks == import_rows(plain, mapping).tasks
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(plain.read_bytes())[:-200])
    result = import_rows(broken, mapping)
    assert result.problems[-1].rule == "unreadable"
    assert "the gzip stream is broken" in result.problems[-1].message
    assert len(result.tasks) + len(result.problems) == result.rows


def test_the_slices_keep_their_licence_notices() -> None:
    for name in ("humaneval", "gsm8k", "mmlu"):
        text = (BENCHMARKS / name / "LICENSE").read_text("utf-8")
        assert "MIT License" in text.splitlines()[0] and "Copyright (c)" in text
        assert "commit" in (BENCHMARKS / name / "SOURCE.md").read_text("utf-8")


# -- rows that give no task are reported by row number -------------------------------


def test_a_missing_column_is_reported_with_its_row_and_field(tmp_path: Path) -> None:
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": 1, "q": "1+1", "a": 2}, {"id": 2, "a": 3}, {"id": 3, "q": "2+2", "a": 4}],
    )
    result = imported(tmp_path, rows)
    assert reports(result) == [(2, "missing_column", "prompt")]
    assert "no column 'q'" in result.problems[0].message
    assert [t.row for t in result.tasks] == [1, 3]


def test_a_task_the_validator_rejects_carries_the_validators_rule_and_field(tmp_path: Path) -> None:
    mapping = QA_MAPPING.replace('prompt: "Question: {q}\\nAnswer:"', 'prompt: "{q}"')
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {"id": 1, "q": "ok", "a": 1},
            {"id": 2, "q": "ends in a space ", "a": 1},
            {"id": "has space", "q": "x", "a": 1},
        ],
    )
    result = imported(tmp_path, rows, mapping)
    assert reports(result) == [
        (2, "prompt_trailing_whitespace", "prompt"),
        (3, "bad_task_id", "task_id"),
    ]
    assert result.problems[0].message == 'prompt ends in whitespace (" "); strip it'


def test_spec_v2_fields_are_rejected_per_row_at_spec_version_1(tmp_path: Path) -> None:
    # preamble and code_protocol are spec v2's; a v1 mapping cannot slip them in.
    mapping = QA_MAPPING + 'preamble: "About {id}."\n'
    rows = write_jsonl(
        tmp_path / "rows.jsonl", [{"id": 1, "q": "?", "a": 1}, {"id": 2, "q": "?", "a": 2}]
    )
    assert reports(imported(tmp_path, rows, mapping)) == [
        (1, "unknown_field", "preamble"),
        (2, "unknown_field", "preamble"),
    ]


def test_an_mcq_target_outside_the_letters_is_rejected_per_row(tmp_path: Path) -> None:
    mapping = QA_MAPPING.replace("arithmetic", "mcq").replace("strip_whitespace", "extract_letter")
    rows = write_jsonl(
        tmp_path / "rows.jsonl", [{"id": 1, "q": "?", "a": "B"}, {"id": 2, "q": "?", "a": "F"}]
    )
    assert reports(imported(tmp_path, rows, mapping)) == [(2, "mcq_target", "targets")]


def test_a_duplicate_task_id_names_the_row_that_used_it_first(tmp_path: Path) -> None:
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": 7, "q": "a", "a": 1}, {"id": 8, "q": "b", "a": 1}, {"id": 7, "q": "c", "a": 1}],
    )
    result = imported(tmp_path, rows)
    assert reports(result) == [(3, "duplicate_task_id", "task_id")]
    assert result.problems[0].message == "task_id 'qa/7' is already used by row 1"


def test_unreadable_json_rows_are_reported_and_the_rest_still_imported(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(
        b'{"id": 1, "q": "a", "a": 1}\n{not json\n\n[1, 2]\n{"id": 5, "q": "b", "a": 1, "a": 2}\n'
        b'\xff\xfe\n{"id": 7, "q": "c", "a": 1}\n'
    )
    result = imported(tmp_path, rows)
    assert reports(result) == [
        (2, "invalid_json", None),
        (4, "not_object", None),
        (5, "duplicate_key", "a"),
        (6, "invalid_json", None),
    ]
    assert [t.row for t in result.tasks] == [1, 7]


def test_csv_rows_with_embedded_newlines_are_numbered_by_record_with_their_line(
    tmp_path: Path,
) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text('id,q,a\n1,"two\nlines",1\n2,"three\nmore\n",1\n3,plain,1\n', encoding="utf-8")
    result = imported(tmp_path, rows, QA_MAPPING.replace('"Question: {q}\\nAnswer:"', '"{q}"'))
    tasks = {t.row: json.loads(t.line) for t in result.tasks}
    assert tasks[1]["prompt"] == "two\nlines"
    assert tasks[3]["prompt"] == "plain"
    assert reports(result) == [(2, "prompt_trailing_whitespace", "prompt")]
    assert result.problems[0].line == 4
    assert format_report("rows.csv", result.problems[0]).startswith(
        "rows.csv: row 2 (line 4): prompt_trailing_whitespace prompt — "
    )


def test_a_csv_row_of_the_wrong_width_is_reported(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("id,q,a\n1,x,1\n2,y\n3,z,1,extra\n", encoding="utf-8")
    assert reports(imported(tmp_path, rows)) == [(2, "row_shape", None), (3, "row_shape", None)]


def test_a_bom_does_not_become_part_of_the_first_column_name(tmp_path: Path) -> None:
    csv_rows = tmp_path / "rows.csv"
    csv_rows.write_bytes(b"\xef\xbb\xbfid,q,a\r\n1,x,1\r\n")
    result = imported(tmp_path, csv_rows)
    assert result.problems == ()
    assert json.loads(result.tasks[0].line)["task_id"] == "qa/1"
    jsonl_rows = tmp_path / "rows.jsonl"
    jsonl_rows.write_bytes(b'\xef\xbb\xbf{"id": 1, "q": "x", "a": 1}\r\n')
    result = imported(tmp_path, jsonl_rows)
    assert result.problems == () and len(result.tasks) == 1


def test_a_duplicated_header_column_is_reported_as_the_header(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("id,q,q\n1,x,1\n", encoding="utf-8")
    result = imported(tmp_path, rows)
    assert reports(result) == [(HEADER, "bad_header", "q")]
    assert format_report("rows.csv", result.problems[0]).startswith(
        "rows.csv: header: bad_header q"
    )


def test_headerless_csv_takes_the_mappings_columns(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("1,x,1\n2,y,2\n", encoding="utf-8")
    result = imported(tmp_path, rows, QA_MAPPING + "columns: [id, q, a]\n")
    assert result.problems == () and [t.task_id for t in result.tasks] == ["qa/1", "qa/2"]


def test_a_template_filter_that_cannot_apply_is_a_bad_value_of_that_row(tmp_path: Path) -> None:
    mapping = QA_MAPPING.replace('target: "{a}"', 'target: "{a|after:####|strip}"')
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": 1, "q": "x", "a": "work\n#### 5"}, {"id": 2, "q": "y", "a": "5"}],
    )
    result = imported(tmp_path, rows, mapping)
    assert reports(result) == [(2, "bad_value", "targets")]
    assert json.loads(result.tasks[0].line)["targets"] == ["5"]


# -- the mapping file ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('prompt: "Question: {q}\\nAnswer:"', 'prompt: "Question: {q"'),
            "prompt: the brace at character 11 is never closed",
        ),
        (('target: "{a}"', 'target: "{a|strp}"'), "target: {a|strp}: unknown filter 'strp'"),
        (('target: "{a}"', 'target: "{@nope}"'), "target: {@nope}: unknown name '@nope'"),
        (
            ('target: "{a}"', 'target: "{a.__class__()}"'),
            "target: {a.__class__()}: cannot read '()'",
        ),
        (("spec_version: 1\n", ""), "spec_version: is required"),
        (
            ("category: arithmetic\n", "category: arithmetic\ncategroy: x\n"),
            "categroy: unknown key",
        ),
    ],
)
def test_a_bad_mapping_is_one_line_naming_the_key(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    path = mapping_file(tmp_path, QA_MAPPING.replace(*change))
    with pytest.raises(MappingError) as info:
        read_mapping(path)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("category: arithmetic", "category: arithmetc"),
            "category: 'arithmetc' is not in spec version 1 (known: arithmetic, mcq, ",
        ),
        (
            ("metric: exact_match", "metric: rouge_l"),
            "metric: 'rouge_l' is not allowed for category 'arithmetic' at spec version 1 "
            "(allowed: exact_match, accuracy)",
        ),
        (
            ("post_process: strip_whitespace", "post_process: extract_letter"),
            "post_process: 'extract_letter' is not allowed for category 'arithmetic'",
        ),
    ],
)
def test_names_the_spec_version_lacks_are_one_mapping_error_not_one_per_row(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": i, "q": "x", "a": 1} for i in range(50)])
    with pytest.raises(MappingError) as info:
        imported(tmp_path, rows, QA_MAPPING.replace(*change))
    assert expected in str(info.value)


def test_a_toml_mapping_reads_like_the_yaml_one(tmp_path: Path) -> None:
    toml = (
        'spec_version = 1\ntask_id = "qa/{id}"\ncategory = "arithmetic"\nmetric = "exact_match"\n'
        'post_process = "strip_whitespace"\nprompt = "Question: {q}\\nAnswer:"\ntarget = "{a}"\n'
    )
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "x", "a": 1}])
    yaml_result = imported(tmp_path, rows)
    toml_result = import_rows(rows, read_mapping(mapping_file(tmp_path, toml, "mapping.toml")))
    assert toml_result.tasks == yaml_result.tasks


def test_a_few_shot_source_outside_the_mappings_directory_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.jsonl"
    write_jsonl(secret, [{"q": "private", "a": 1}])
    inner = tmp_path / "pr"
    inner.mkdir()
    few = '\nfew_shot:\n  path: {path}\n  count: 1\n  prompt: "{{q}}"\n  completion: "{{a}}"\n'
    for path in ("../secret.jsonl", str(secret)):
        with pytest.raises(MappingError, match="leads outside the mapping's directory"):
            read_mapping(mapping_file(inner, QA_MAPPING + few.format(path=path)))
    (inner / "link.jsonl").symlink_to(secret)
    with pytest.raises(MappingError, match="leads outside"):
        read_mapping(mapping_file(inner, QA_MAPPING + few.format(path="link.jsonl")))


# -- Parquet -------------------------------------------------------------------------


HF_MMLU = """\
spec_version: 1
task_id: "mmlu/{subject}/{@row}"
category: mcq
metric: exact_match
post_process: extract_letter
choices: "{choices}"
prompt: "{question|strip}\\n{@choices|lettered}\\nAnswer:"
target: "{answer|letter}"
"""


def test_parquet_rows_in_the_hugging_face_mmlu_shape(tmp_path: Path) -> None:
    import pyarrow as pa  # the test extra installs the parquet extra
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "question": ["2 + 2 = ?", "Capital of France?"],
            "subject": ["math", "geo"],
            "choices": [["3", "4", "5", "6"], ["Rome", "Paris", "Oslo", "Bern"]],
            "answer": [1, 7],
        }
    )
    pq.write_table(table, tmp_path / "test.parquet")
    result = imported(tmp_path, tmp_path / "test.parquet", HF_MMLU)
    first = json.loads(result.tasks[0].line)
    assert first["prompt"] == "2 + 2 = ?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:"
    assert first["targets"] == ["B"] and first["task_id"] == "mmlu/math/1"
    # Answer 7 is "H": a letter the validator refuses for an mcq task.
    assert reports(result) == [(2, "mcq_target", "targets")]


def test_parquet_without_pyarrow_says_which_extra_to_install(tmp_path: Path) -> None:
    (tmp_path / "rows.parquet").write_bytes(b"PAR1")
    mapping_file(tmp_path, HF_MMLU)
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None\n"
        "from evalspec.cli.dispatch import main\n"
        "sys.exit(main(['import', 'rows.parquet', '-m', 'mapping.yaml', '-o', 'out.jsonl']))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "evalspec: error: reading Parquet needs the 'pyarrow' package, which is not installed: "
        "pip install 'evalspec-contract[parquet]'"
    ]
    assert not (tmp_path / "out.jsonl").exists()


def test_a_broken_parquet_file_is_a_reported_row_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "rows.parquet").write_bytes(b"PAR1")
    result = imported(tmp_path, tmp_path / "rows.parquet", HF_MMLU)
    assert reports(result) == [(1, "unreadable", None)]
    assert result.problems[0].message.startswith("not a Parquet file: ")


def test_csv_fields_longer_than_the_csv_modules_default_limit_are_read(tmp_path: Path) -> None:
    import csv

    long = "x" * 300_000  # csv's own default limit is 131072 characters
    rows = tmp_path / "rows.csv"
    rows.write_text(f"id,q,a\n1,{long},1\n", encoding="utf-8")
    before = csv.field_size_limit()
    result = imported(tmp_path, rows)
    assert result.problems == ()
    assert long in json.loads(result.tasks[0].line)["prompt"]
    assert csv.field_size_limit() == before


def test_an_overlong_jsonl_line_stops_the_read_and_says_so(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {"id": 1, "q": "x", "a": 1},
            {"id": 2, "q": "y" * 500, "a": 1},
            {"id": 3, "q": "z", "a": 1},
        ],
    )
    mapping_file(tmp_path)
    r = run(
        tmp_path,
        "rows.jsonl",
        "-m",
        "mapping.yaml",
        "-o",
        "t.jsonl",
        env={"EVALSPEC_MAX_LINE_BYTES": "200"},
    )
    assert r.returncode == 1
    assert r.stderr.splitlines()[0].startswith(
        "rows.jsonl: row 2: invalid_json — the line is longer than the maximum of 200 bytes"
    )
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_endless_input_without_newlines_ends_in_one_reported_row(
    tmp_path: Path, fmt: str
) -> None:
    # csv reads a line at a time: /dev/zero would be read into memory forever.
    mapping_file(tmp_path, QA_MAPPING + f"format: {fmt}\n")
    r = run(
        tmp_path,
        "/dev/zero",
        "-m",
        "mapping.yaml",
        "-o",
        "t.jsonl",
        env={"EVALSPEC_MAX_LINE_BYTES": "1000"},
    )
    assert r.returncode == 1
    first = r.stderr.splitlines()[0]
    assert (
        first.startswith("/dev/zero: row 1: ") and "longer than the maximum of 1000 bytes" in first
    )


def test_bytes_that_are_not_utf8_in_a_csv_stop_the_read_at_their_row(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_bytes(b"id,q,a\n1,x,1\n2,\xff,1\n3,z,1\n")
    result = imported(tmp_path, rows)
    assert reports(result) == [(2, "unreadable", None)]
    assert [t.row for t in result.tasks] == [1]


def test_a_few_shot_count_past_the_spec_limit_is_a_mapping_error(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "dev.jsonl", [{"q": "x", "a": 1}])
    few = '\nfew_shot:\n  path: dev.jsonl\n  count: 9\n  prompt: "{q}"\n  completion: "{a}"\n'
    with pytest.raises(
        MappingError, match=r"few_shot\.count: must be a whole number of examples from 1 to 8"
    ):
        read_mapping(mapping_file(tmp_path, QA_MAPPING + few))


def test_a_few_shot_row_that_does_not_map_names_its_file_row_and_field(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "dev.jsonl", [{"q": "x", "a": 1, "c": ["p"]}, {"q": "y", "a": 2}])
    write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "y", "a": 2, "c": ["r"]}])
    few = (
        'choices: "{c}"\nfew_shot:\n  path: dev.jsonl\n  count: 2\n'
        '  prompt: "{q} {@choices|lettered}"\n  completion: "{a}"\n'
    )
    with pytest.raises(FewShotError) as info:
        imported(tmp_path, tmp_path / "rows.jsonl", QA_MAPPING + few)
    assert str(info.value) == (
        f"few-shot source {tmp_path / 'dev.jsonl'}: row 2: missing_column choices — "
        "the row has no column 'c' (columns: a, q)"
    )


def test_a_short_few_shot_source_is_an_error_not_fewer_examples(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "dev.jsonl", [{"q": "x", "a": 1}])
    write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "y", "a": 2}])
    few = '\nfew_shot:\n  path: dev.jsonl\n  count: 2\n  prompt: "{q}"\n  completion: "{a}"\n'
    with pytest.raises(FewShotError, match="has 1 row; the mapping asks for 2"):
        imported(tmp_path, tmp_path / "rows.jsonl", QA_MAPPING + few)


# -- the command ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "rows.jsonl",
            '{"id": 1, "q": "x", "a": 1}\n{"id": 2, "a": 1}\n',
            [
                "rows.jsonl: row 2: missing_column prompt — the row has no column 'q' "
                "(columns: a, id)",
                "evalspec: 1 of 2 rows cannot be imported; nothing written",
            ],
        ),
        (
            "rows.csv",
            "id,q,\n1,x,1\n",
            [
                "rows.csv: header: bad_header — the header has an empty column name",
                "evalspec: the header cannot be read; nothing written",
            ],
        ),
    ],
)
def test_the_command_writes_nothing_when_rows_are_reported(
    tmp_path: Path, name: str, content: str, expected: list[str]
) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    mapping_file(tmp_path)
    r = run(tmp_path, name, "-m", "mapping.yaml", "-o", "tasks.jsonl")
    assert r.returncode == 1
    assert r.stderr.splitlines() == expected
    assert not (tmp_path / "tasks.jsonl").exists()


def test_the_command_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "x", "a": 1}])
    mapping_file(tmp_path)
    (tmp_path / "tasks.jsonl").write_text("keep me\n")
    r = run(tmp_path, "rows.jsonl", "-m", "mapping.yaml", "-o", "tasks.jsonl")
    assert r.returncode == 2
    assert (
        r.stderr == "evalspec: error: refusing to overwrite tasks.jsonl: it exists (pass --force)\n"
    )
    assert (tmp_path / "tasks.jsonl").read_text() == "keep me\n"
    r = run(tmp_path, "rows.jsonl", "-m", "mapping.yaml", "-o", "tasks.jsonl", "--force")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "tasks.jsonl").read_text())["task_id"] == "qa/1"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_command_never_writes_through_a_symlink_out_of_the_repository(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (tmp_path / "outside").mkdir()
    write_jsonl(repo / "rows.jsonl", [{"id": 1, "q": "x", "a": 1}])
    mapping_file(repo)
    (repo / "out.jsonl").symlink_to(tmp_path / "outside" / "stolen.jsonl")
    r = run(repo, "rows.jsonl", "-m", "mapping.yaml", "-o", "out.jsonl", "--force")
    assert r.returncode == 2
    assert r.stderr.startswith("evalspec: error: refusing to write out.jsonl: it is a symlink to ")
    assert list((tmp_path / "outside").iterdir()) == []


def test_the_json_report_lists_every_reported_row(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "x", "a": 1}, {"id": 1, "q": "y", "a": 2}])
    mapping_file(tmp_path)
    r = run(tmp_path, "rows.jsonl", "-m", "mapping.yaml", "-o", "t.jsonl", "--format", "json")
    assert (r.returncode, r.stderr) == (1, "")
    doc = json.loads(r.stdout)
    assert {k: doc[k] for k in ("rows", "tasks", "written", "spec_version")} == {
        "rows": 2,
        "tasks": 1,
        "written": False,
        "spec_version": 1,
    }
    assert doc["problems"] == [
        {
            "row": 2,
            "line": 2,
            "rule": "duplicate_task_id",
            "field": "task_id",
            "message": "task_id 'qa/1' is already used by row 1",
            "task_id": "qa/1",
        }
    ]
    assert not (tmp_path / "t.jsonl").exists()
    r = run(tmp_path, "rows.jsonl", "-m", "mapping.yaml", "-o", "-", "--format", "json")
    assert r.returncode == 2 and "name an --output file" in r.stderr


def test_the_command_writes_standard_output_for_a_dash(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "x", "a": 1}])
    mapping_file(tmp_path)
    r = run(tmp_path, "rows.jsonl", "-m", "mapping.yaml", "-o", "-", "-q")
    assert (r.returncode, r.stderr) == (0, "")
    assert json.loads(r.stdout)["targets"] == ["1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["missing.jsonl", "-m", "mapping.yaml", "-o", "t.jsonl"],
            "evalspec: error: cannot read missing.jsonl: No such file or directory",
        ),
        (
            ["rows.jsonl", "-m", "nope.yaml", "-o", "t.jsonl"],
            "evalspec: error: cannot read nope.yaml: No such file or directory",
        ),
        (
            ["rows.jsonl", "-m", "bad.yaml", "-o", "t.jsonl"],
            "evalspec: error: bad.yaml: prompt: the brace at character 1 is never closed",
        ),
    ],
)
def test_usage_and_io_errors_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    write_jsonl(tmp_path / "rows.jsonl", [{"id": 1, "q": "x", "a": 1}])
    mapping_file(tmp_path)
    mapping_file(tmp_path, QA_MAPPING.replace('"Question: {q}\\nAnswer:"', '"{q"'), "bad.yaml")
    r = run(tmp_path, *args)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [message]
    assert "Traceback" not in r.stderr


# -- nothing is dropped --------------------------------------------------------------

_cell = st.one_of(
    st.none(), st.integers(-5, 5), st.text(max_size=6), st.lists(st.integers(), max_size=2)
)
# Mostly mappable rows (a few ids, so duplicates; ids with a space or empty, which the
# validator rejects), then rows missing a column, odd values, and rows that are not objects.
_mappable = st.fixed_dictionaries(
    {
        "id": st.one_of(st.integers(0, 4), st.sampled_from(["a b", ""])),
        "q": st.text(max_size=5),
        "a": st.one_of(st.integers(-3, 3), st.text(min_size=1, max_size=3)),
    }
)
_row = st.one_of(
    _mappable,
    _mappable,
    st.dictionaries(st.sampled_from(["id", "q", "a", "x"]), _cell, max_size=4),
    st.lists(st.integers(), max_size=2),
    st.just("not an object"),
)


@given(rows=st.lists(_row, max_size=12), blank_after=st.sets(st.integers(0, 12), max_size=3))
def test_every_row_is_a_task_or_a_reported_row_number(
    tmp_path_factory: pytest.TempPathFactory, rows: list[Any], blank_after: set[int]
) -> None:
    tmp = tmp_path_factory.mktemp("rows")
    lines: list[str] = []
    numbers: list[int] = []
    for i, row in enumerate(rows):
        lines.append(json.dumps(row))
        numbers.append(len(lines))
        if i in blank_after:
            lines.append("")
    (tmp / "rows.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = imported(tmp, tmp / "rows.jsonl")
    produced = [t.row for t in result.tasks]
    reported = {p.row for p in result.problems}
    assert not set(produced) & reported
    assert sorted([*produced, *reported]) == numbers
    assert len(set(produced)) == len(produced)
    out = tmp / "out.jsonl"
    out.write_text(result.text(), encoding="utf-8")
    assert validate_file(out, spec_version=1).invalid == 0


_field = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8
)


@given(
    rows=st.lists(st.tuples(_field, _field), max_size=10),
    terminator=st.sampled_from(["\n", "\r\n"]),
)
def test_every_csv_record_is_a_task_or_a_reported_row_and_fields_round_trip(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str]], terminator: str
) -> None:
    import csv
    import io

    if terminator == "\n":
        # csv.writer quotes a field holding a character of the line terminator only, so an
        # unquoted "\r" would end the record for every CSV reader, csv.reader included.
        rows = [(q.replace("\r", "\n"), a.replace("\r", "\n")) for q, a in rows]
    tmp = tmp_path_factory.mktemp("csv")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=terminator)
    writer.writerow(["id", "q", "a"])
    for i, (q, a) in enumerate(rows, start=1):
        writer.writerow([i, q, a])
    (tmp / "rows.csv").write_text(out.getvalue(), encoding="utf-8", newline="")
    result = imported(
        tmp, tmp / "rows.csv", QA_MAPPING.replace('"Question: {q}\\nAnswer:"', '"{q}"')
    )
    produced = {t.row: json.loads(t.line) for t in result.tasks}
    reported = {p.row for p in result.problems}
    assert not set(produced) & reported
    assert sorted([*produced, *reported]) == list(range(1, len(rows) + 1))
    for row, task in produced.items():
        assert (task["prompt"], task["targets"]) == (rows[row - 1][0], [rows[row - 1][1]])


def test_the_import_module_is_not_loaded_by_import_evalspec() -> None:
    code = (
        "import sys, evalspec; print(any(m.startswith('evalspec.importing') for m in sys.modules))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ},
    )
    assert r.stdout.strip() == "False"
