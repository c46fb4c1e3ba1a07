"""Every ``pip install`` line a person can read installs our distribution.

``evalspec`` on the package index is another project: a README, doc, CI example
or error message that says ``pip install 'evalspec[evals]'`` installs it. This
scans what people read and copy (README, docs, messages in the code, the
pre-commit hooks, CI) and fails on any name that is not ours or a known
third-party package, and on any extra pyproject does not define.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "evalspec-contract"

# Third-party packages the docs and messages may tell people to install.
THIRD_PARTY = frozenset(
    {"pip", "pytest", "pre-commit", "tomli", "pyyaml", "gcsfs", "adlfs", "s3fs", "ray", "orjson"}
)

# One argument of `pip install`: an option, a quoted requirement or a bare one.
_ARG = r"""(?:-{1,2}[A-Za-z][\w-]*|'[^'\s]*'|"[^"\s]*"|[\w.{}\[\],<>=!~/-]+)"""
_INSTALL = re.compile(rf"\bpip install((?:[ \t]+{_ARG})+)")
_REQUIREMENT = re.compile(r"^(?P<name>[\w.{}-]+)(?:\[(?P<extras>[^\]]*)\])?(?P<spec>[<>=!~].*)?$")


def _scanned_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / ".pre-commit-hooks.yaml"]
    files += sorted((ROOT / "docs").glob("*.md"))
    files += sorted((ROOT / "evalspec").rglob("*.py"))
    files += sorted(p for p in (ROOT / "plugins").rglob("*") if p.is_file() and p.suffix != ".pyc")
    ci = ROOT / ".ci" / "run"
    if ci.exists():
        files.append(ci)
    return [p for p in files if p.exists()]


def _extras() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def install_problems(text: str, extras: set[str]) -> list[str]:
    """What is wrong with each ``pip install`` in ``text`` (empty when all are ours)."""
    problems = []
    for match in _INSTALL.finditer(text):
        try:
            words = shlex.split(match.group(1))
        except ValueError:
            words = match.group(1).split()
        after_r = False
        for word in words:
            if after_r:
                after_r = False
                # A requirements file of the repository (exact pins of others' packages).
                if not (ROOT / word).is_file():
                    problems.append(f"no requirements file {word!r} in {match.group(0)!r}")
                continue
            if word in ("-r", "--requirement"):
                after_r = True
                continue
            if word.startswith("-"):
                continue
            if word.startswith(("../", "/")) or (word.startswith("./") and "[" not in word):
                continue  # a local project directory (a plugin package beside the project)
            req = _REQUIREMENT.match(word)
            if req is None:
                problems.append(f"cannot read requirement {word!r} in {match.group(0)!r}")
                continue
            name = req["name"]
            named = [e.strip() for e in (req["extras"] or "").split(",") if e.strip()]
            if name in (".", "./") or name == DISTRIBUTION:
                for extra in named:
                    # {extra} in an f-string and EXTRA in prose are placeholders.
                    placeholder = extra.startswith("{") or extra.isupper()
                    if extra not in extras and not placeholder:
                        problems.append(f"extra {extra!r} is not in pyproject: {match.group(0)!r}")
            elif name.lower() not in THIRD_PARTY:
                problems.append(f"installs {name!r}, not {DISTRIBUTION!r}: {match.group(0)!r}")
    return problems


@pytest.mark.parametrize(
    "path", _scanned_files(), ids=lambda p: str(p.relative_to(ROOT)).replace("/", ".")
)
def test_every_install_line_names_our_distribution(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    problems = install_problems(text, _extras())
    assert not problems, "\n".join(f"{path.relative_to(ROOT)}: {p}" for p in problems)


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("pip install 'evalspec[evals]'", "installs 'evalspec'"),
        ("pip install evalspec", "installs 'evalspec'"),
        ('"run: pip install -q evalspec[manifest]"', "installs 'evalspec'"),
        ("pip install 'evalspec-contract[toml]'", "extra 'toml'"),
        ("pip install '.[nope]' && pytest", "extra 'nope'"),
        ("pip install -U '.[test,made-up]'", "extra 'made-up'"),
    ],
)
def test_the_scanner_catches_a_foreign_name_or_extra(line: str, bad: str) -> None:
    problems = install_problems(line, {"test", "evals", "manifest"})
    assert len(problems) == 1 and bad in problems[0], problems


@pytest.mark.parametrize(
    "line",
    [
        "pip install . && evalspec validate fixtures/tasks.jsonl",
        "pip install '.[test]' && python -m pytest",
        "`pip install 'evalspec-contract[evals]'` (adds PyYAML)",
        "f\"pip install 'evalspec-contract[{extra}]'\"",
        "pip install -e '.[evals,test]'   # a checkout",
        "pip install gcsfs",
        "outside a checkout, `pip install 'evalspec-contract[EXTRA]'`",
    ],
)
def test_the_scanner_accepts_our_names(line: str) -> None:
    assert install_problems(line, {"test", "evals"}) == []
