"""YAML reading: line numbers, duplicate keys, and a clear message without PyYAML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalspec.evals.scaffold import scaffold
from evalspec.evals.yamlfile import YamlSyntaxError, load_mapping


def test_nested_key_lines() -> None:
    m = load_mapping("a: 1\nb:\n  c:\n    d: 2\n")
    assert m.line_of("b") == 2
    assert m.line_at("b", "c", "d") == 4
    assert m.line_at("b", "nope") == 2


def test_nested_duplicate_key_is_an_error() -> None:
    with pytest.raises(YamlSyntaxError) as info:
        load_mapping("a:\n  x: 1\n  x: 2\n")
    assert info.value.line == 3


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(YamlSyntaxError, match="mapping"):
        load_mapping("- 1\n- 2\n")
    assert load_mapping("").data == {}


def test_without_pyyaml_the_commands_name_the_extra(tmp_path: Path) -> None:
    scaffold(tmp_path)
    code = (
        "import sys; sys.modules['yaml'] = None; from evalspec.cli.dispatch import main; "
        "sys.exit(main(['lint']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "evalspec: error: reading YAML needs PyYAML: pip install 'evalspec-contract[evals]'"
    )
