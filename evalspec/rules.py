"""The closed vocabulary of validation rule codes.

Every :class:`evalspec.ErrorRecord` carries exactly one of these codes. The
order is the validator's stage order; ``fixtures/tasks_bad.jsonl`` holds one
line per code, and a test pins that the two stay in step.
"""

from __future__ import annotations

from types import MappingProxyType

RULES: MappingProxyType[str, str] = MappingProxyType(
    {
        # stage 1: parse
        "invalid_json": "the line is not parseable JSON: syntax, invalid UTF-8, NaN/Infinity, "
        "a number that overflows to infinity, a lone surrogate escape, nesting or an integer "
        "Python cannot take",
        "duplicate_key": "a JSON object repeats a key (json's last-wins would hide it)",
        "not_object": "the line is valid JSON but not an object",
        # stage 2: fields present
        "missing_field": "a required field is absent (one error per field)",
        "unknown_field": "a top-level key outside the schema (one error per key)",
        # stage 3: types
        "wrong_type": "a field or nested element has the wrong JSON type",
        # stage 4: field rules
        "bad_task_id": "task_id is empty or contains whitespace",
        "unknown_category": "category is not in the spec version's table",
        "empty_prompt": "prompt is empty or whitespace only",
        "prompt_trailing_whitespace": "prompt ends in whitespace",
        "prompt_embedded_few_shot": "the prompt body already holds a few-shot block",
        "empty_targets": "targets is an empty list",
        "unknown_metric": "metric_name is not in the spec version's table",
        "too_many_few_shot": "more than 8 few-shot examples",
        "few_shot_shape": "a few-shot example is not exactly {prompt, completion}",
        "unknown_post_process": "post_process is not in the spec version's table",
        "bad_field_value": "an optional field a spec version added holds a value it does not allow",
        "combined_post_process": "an attempt to combine post-process rules",
        # stage 5: category pairs
        "illegal_metric": "the category does not allow this metric",
        "illegal_post_process": "the category does not allow this post-process rule",
        "mcq_target": "an mcq task whose targets is not exactly one letter A-E",
        "illegal_field": "the category may not carry this optional field",
        # stage 6: uniqueness
        "duplicate_task_id": "a task_id already used on an earlier line",
    }
)
"""Rule code -> one-line description, in stage order."""

MAX_FEW_SHOT = 8
"""The most few-shot examples a task may carry, keeping prompts bounded."""

WAIVABLE = ("prompt_trailing_whitespace",)
"""The field rules a migration may lift for some tasks (``WaiveFieldRule``).

Only rules whose waiver leaves every other guarantee standing: the prompt
is still a non-blank string, still rendered by the one rendering path."""
