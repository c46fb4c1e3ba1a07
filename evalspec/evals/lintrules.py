"""The closed vocabulary of ``evalspec lint`` rule codes.

Lint reports these codes and, for task-spec problems, the validator's own
codes (:data:`evalspec.rules.RULES`). The README's "Evals as code" section
carries the same table; a test pins that the two agree.
"""

from __future__ import annotations

from types import MappingProxyType

LINT_RULES: MappingProxyType[str, str] = MappingProxyType(
    {
        # the file itself
        "lfs_pointer": "the dataset file is a Git LFS pointer, not the data (run `git lfs pull`)",
        # the data card
        "card_missing": "no NAME.card.md beside NAME.jsonl",
        "card_syntax": "the card has no front-matter block, or it is not a YAML mapping",
        "card_field": "a card declaration is missing or malformed (spec_version, sources, "
        "owner, or a version/seed of the wrong type)",
        "version_missing": "the card declares no dataset version",
        "seed_missing": "the card declares no random seed",
        "version_not_bumped": "the dataset differs from the base revision but its card's "
        "version did not change",
        # config
        "labels_missing": "the layout has no config/labels.yaml declaring legal label values",
        "config_invalid": "config/labels.yaml is malformed",
        # stratification labels
        "missing_label": "a task's metadata lacks a required stratification label",
        "illegal_label": "a task's label value is not one the labels file allows",
        # what silently corrupts scores
        "conflicting_targets": "the same rendered prompt appears on two lines with different "
        "targets",
        "duplicate_prompt": "the same rendered prompt with the same targets appears twice "
        "(the sample is scored twice)",
        "few_shot_leak": "a few-shot example's prompt is an evaluated prompt of the same dataset",
        "mcq_option_missing": "a single-letter target is not among the lettered options the "
        "prompt offers",
        "id_collision": "two task ids are equal after NFKC normalisation and case folding",
        "id_control_character": "a task id holds a control character (NUL, ESC, DEL, ...) "
        "or a bidirectional-text control, which terminals, logs and file names mangle",
        "test_never_calls_program": "a target test program of a code-executing metric "
        "(code_exec) names nothing it does not define itself, so it never calls the program "
        "and no run of it tests anything",
        "unused_suppression": "a suppress entry of the data card matches no problem of its task "
        "(the problem was fixed, or the id or rule is wrong): remove it",
        # review
        "owner_not_codeowner": "the card's owner is not a code owner of the dataset's path",
    }
)
"""Lint rule code -> one-line description."""
