"""One approach to checking a task file, run as its own process by ``bench.py``.

``python benchmarks/peers.py APPROACH FILE [MAX_LINES]`` checks up to
MAX_LINES lines of FILE and prints ``lines invalid``. The peers check the
task schema (fields, types, the closed vocabularies, at most 8 few-shot
examples) but none of evalspec's cross-field rules, and every one of them
silently accepts duplicate keys.
"""

# No `from __future__ import annotations`: msgspec and pydantic read the local
# classes' annotations at run time.

import sys
from collections.abc import Callable, Iterator
from typing import Any, Literal

CATEGORIES = ["arithmetic", "mcq", "code_exec", "classification", "summary"]
METRICS = ["exact_match", "f1", "bleu_4", "rouge_l", "accuracy", "code_exec"]
RULES = [
    "none",
    "strip_whitespace",
    "lower",
    "extract_letter",
    "extract_code_block",
    "extract_first_line",
]

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["task_id", "category", "prompt", "targets", "metric_name", "post_process"],
    "properties": {
        "task_id": {"type": "string", "minLength": 1, "pattern": "^\\S+$"},
        "category": {"enum": CATEGORIES},
        "prompt": {"type": "string", "minLength": 1},
        "targets": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "metric_name": {"enum": METRICS},
        "post_process": {"enum": RULES},
        "few_shot_examples": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["prompt", "completion"],
                "properties": {"prompt": {"type": "string"}, "completion": {"type": "string"}},
            },
        },
        "metadata": {"type": "object"},
    },
}


def _lines(path: str, limit: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            if n >= limit:
                return
            yield line


def floor() -> Callable[[bytes], bool]:
    """``orjson.loads`` and nothing else: the parse floor."""
    import orjson

    loads = orjson.loads

    def check(line: bytes) -> bool:
        try:
            loads(line)
        except orjson.JSONDecodeError:
            return False
        return True

    return check


def msgspec_struct() -> Callable[[bytes], bool]:
    """A msgspec Struct with a typed decoder (first error only)."""
    import msgspec

    class Example(msgspec.Struct, forbid_unknown_fields=True):
        prompt: str
        completion: str

    class Task(msgspec.Struct, forbid_unknown_fields=True):
        task_id: str
        category: Literal["arithmetic", "mcq", "code_exec", "classification", "summary"]
        prompt: str
        targets: list[str]
        metric_name: Literal["exact_match", "f1", "bleu_4", "rouge_l", "accuracy", "code_exec"]
        post_process: Literal[
            "none",
            "strip_whitespace",
            "lower",
            "extract_letter",
            "extract_code_block",
            "extract_first_line",
        ]
        few_shot_examples: list[Example] = []
        metadata: dict[str, Any] = {}

    decode = msgspec.json.Decoder(Task).decode

    def check(line: bytes) -> bool:
        try:
            task = decode(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return False
        return bool(task.targets) and len(task.few_shot_examples) <= 8

    return check


def pydantic_model() -> Callable[[bytes], bool]:
    """pydantic v2 ``model_validate_json`` (field errors only)."""
    import pydantic

    class Example(pydantic.BaseModel, extra="forbid", strict=True):
        prompt: str
        completion: str

    class Task(pydantic.BaseModel, extra="forbid", strict=True):
        task_id: str = pydantic.Field(min_length=1, pattern=r"^\S+$")
        category: Literal["arithmetic", "mcq", "code_exec", "classification", "summary"]
        prompt: str = pydantic.Field(min_length=1)
        targets: list[str] = pydantic.Field(min_length=1)
        metric_name: Literal["exact_match", "f1", "bleu_4", "rouge_l", "accuracy", "code_exec"]
        post_process: Literal[
            "none",
            "strip_whitespace",
            "lower",
            "extract_letter",
            "extract_code_block",
            "extract_first_line",
        ]
        few_shot_examples: list[Example] = pydantic.Field(default=[], max_length=8)
        metadata: dict[str, Any] = {}

    validate = Task.model_validate_json

    def check(line: bytes) -> bool:
        try:
            validate(line)
        except pydantic.ValidationError:
            return False
        return True

    return check


def fastjsonschema_check() -> Callable[[bytes], bool]:
    """fastjsonschema on orjson-decoded lines (first error only)."""
    import fastjsonschema
    import orjson

    schema = dict(SCHEMA)
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    validate = fastjsonschema.compile(schema)

    def check(line: bytes) -> bool:
        try:
            validate(orjson.loads(line))
        except (orjson.JSONDecodeError, fastjsonschema.JsonSchemaException):
            return False
        return True

    return check


def jsonschema_check() -> Callable[[bytes], bool]:
    """jsonschema Draft 2020-12 ``iter_errors`` on orjson-decoded lines (all errors)."""
    import importlib

    import orjson

    jsonschema = importlib.import_module("jsonschema")  # ships no type information

    validator = jsonschema.Draft202012Validator(SCHEMA)

    def check(line: bytes) -> bool:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return False
        return not list(validator.iter_errors(obj))

    return check


APPROACHES: dict[str, Callable[[], Callable[[bytes], bool]]] = {
    "floor": floor,
    "msgspec": msgspec_struct,
    "pydantic": pydantic_model,
    "fastjsonschema": fastjsonschema_check,
    "jsonschema": jsonschema_check,
}


def main() -> None:
    approach, path = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else sys.maxsize
    check = APPROACHES[approach]()
    lines = invalid = 0
    for line in _lines(path, limit):
        lines += 1
        if not check(line):
            invalid += 1
    print(lines, invalid)


if __name__ == "__main__":
    main()
