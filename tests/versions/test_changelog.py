"""Which spec versions a changelog records."""

from __future__ import annotations

from pathlib import Path

from evalspec.versions.changelog import entry_line, spec_versions_in

ROOT = Path(__file__).resolve().parents[2]


def test_recognised_forms() -> None:
    text = "\n".join(
        [
            "- Spec version 1, the frozen spec",
            "  * Spec version 2: translation",
            "### Spec version 3",
            "Spec version 4",
            "+ Spec version 5 (deprecates bleu_4)",
        ]
    )
    assert spec_versions_in(text) == {1, 2, 3, 4, 5}


def test_mentions_inside_a_sentence_do_not_count() -> None:
    assert spec_versions_in("- Fixed the validator for spec version 3 tasks") == set()
    assert spec_versions_in("- Spec version 10: more") == {10}


def test_suggested_line_is_recognised() -> None:
    assert spec_versions_in(entry_line(7, "category `x`")) == {7}


def test_the_repository_changelog_records_spec_version_1() -> None:
    assert 1 in spec_versions_in((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
