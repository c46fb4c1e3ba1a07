"""Finding evals layouts: above a path (:func:`find_layout`) and below a directory
outside any layout (:func:`layouts_below`, what ``evalspec lint`` at a repository's
root uses)."""

from __future__ import annotations

from pathlib import Path

from evalspec.evals.layout import MAX_DEPTH_BELOW, find_layout, layouts_below


def make_layout(root: Path) -> Path:
    (root / "datasets").mkdir(parents=True)
    (root / "config").mkdir()
    return root


def test_find_layout_walks_up_from_a_file_or_directory(tmp_path: Path) -> None:
    root = make_layout(tmp_path / "evals")
    (root / "datasets" / "sub").mkdir()
    task_file = root / "datasets" / "sub" / "x.jsonl"
    task_file.write_text("{}\n")
    for start in (root, root / "datasets", task_file):
        found = find_layout(start)
        assert found is not None and found.root == root.resolve()
    assert find_layout(tmp_path) is None


def test_layouts_below_finds_each_layout_once_in_order(tmp_path: Path) -> None:
    second = make_layout(tmp_path / "b" / "evals")
    first = make_layout(tmp_path / "a")
    make_layout(first / "nested")  # inside a layout: that layout's business
    assert [lay.root for lay in layouts_below(tmp_path)] == [first.resolve(), second.resolve()]


def test_layouts_below_skips_packages_hidden_dirs_virtualenvs_and_symlinks(
    tmp_path: Path,
) -> None:
    (tmp_path / "pkg" / "datasets").mkdir(parents=True)  # a package module, no config/
    make_layout(tmp_path / ".git" / "evals")
    make_layout(tmp_path / "node_modules" / "x")
    venv = tmp_path / "venv"
    make_layout(venv / "lib" / "evals")
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    elsewhere = make_layout(tmp_path.parent / f"{tmp_path.name}-elsewhere")
    (tmp_path / "link").symlink_to(elsewhere, target_is_directory=True)
    assert layouts_below(tmp_path) == []


def test_layouts_below_stops_at_its_depth(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * (MAX_DEPTH_BELOW + 1))
    make_layout(deep)
    assert layouts_below(tmp_path) == []
    assert [lay.root for lay in layouts_below(tmp_path / "d")] == [deep.resolve()]
