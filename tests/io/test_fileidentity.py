"""File identity: a reader that opens a file by name reads the file the command opened."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from evalspec.io.fileidentity import (
    CHANGED,
    FileChanged,
    changed,
    file_identity,
    file_signature,
    read_span,
    read_span_into,
)


def test_read_span_reads_the_bytes_of_the_file_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\nsecond\n")
    identity = file_identity(os.stat(path))
    assert read_span(path, 6, 13, identity) == b"second\n"
    assert read_span(path, 0, 6, None) == b"first\n"


def test_a_file_renamed_over_is_another_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\nsecond\n")
    identity = file_identity(os.stat(path))
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"first\nsecond\n")  # the same bytes: still not the same file
    os.replace(other, path)
    with pytest.raises(FileChanged, match=CHANGED) as caught:
        read_span(path, 0, 6, identity)
    assert caught.value.errno == errno.ESTALE


def test_a_removed_file_is_changed_only_when_its_identity_was_known(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x\n")
    identity = file_identity(os.stat(path))
    path.unlink()
    with pytest.raises(FileChanged):
        read_span(path, 0, 2, identity)
    with pytest.raises(FileNotFoundError):
        read_span(path, 0, 2, None)


def test_the_signature_changes_when_the_bytes_are_rewritten_in_place(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\n")
    with path.open("rb") as f:
        before = file_signature(f)
    with path.open("ab") as f:
        f.write(b"more\n")
    with path.open("rb") as f:
        after = file_signature(f)
    assert before[:2] == after[:2]  # the same file ...
    assert before != after  # ... with other bytes


def test_changed_says_what_it_is_told() -> None:
    error = changed("it changed while lint read it; run lint again")
    assert isinstance(error, OSError)
    assert error.errno == errno.ESTALE
    assert error.strerror == "it changed while lint read it; run lint again"


def test_read_span_into_reads_into_the_buffer_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\nsecond\n")
    identity = file_identity(os.stat(path))
    buffer = bytearray(b"#" * 16)
    view = read_span_into(path, 6, 13, identity, buffer)
    assert bytes(view) == b"second\n" and view.obj is buffer
    assert bytes(read_span_into(path, 0, 6, None, buffer)) == b"first\n"
    # At the end of the file a shorter span, as read_span gives one.
    assert bytes(read_span_into(path, 6, 16, None, buffer)) == read_span(path, 6, 16, None)
    with pytest.raises(ValueError, match="buffer of 16 bytes"):
        read_span_into(path, 0, 17, None, buffer)


def test_read_span_into_refuses_a_file_renamed_over_or_removed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\nsecond\n")
    identity = file_identity(os.stat(path))
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"first\nsecond\n")
    os.replace(other, path)
    with pytest.raises(FileChanged):
        read_span_into(path, 0, 6, identity, bytearray(8))
    path.unlink()
    with pytest.raises(FileChanged):
        read_span_into(path, 0, 6, identity, bytearray(8))
    with pytest.raises(FileNotFoundError):
        read_span_into(path, 0, 6, None, bytearray(8))
