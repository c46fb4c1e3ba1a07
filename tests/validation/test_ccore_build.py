"""The compiled core built for real: under the sanitizers for a fuzz run, and by
the build backend with and without a working compiler (slow: each builds C).

- A build of ``_core.c`` with gcc's AddressSanitizer and UndefinedBehaviorSanitizer
  is fuzzed for a bounded time (``ccore_fuzz_driver.py``: byte mutations of the
  bad-line fixtures, the fixtures and both benchmark mixes, plus generated JSON
  with repeated keys and escapes), every input checked against ``json.loads``
  with an ``object_pairs_hook``, in the normal and the every-hash-collides scan.
- The sdist holds the C source; a wheel built from it holds the extension, and one
  built with ``CC=false`` (no working compiler) builds without it, installs, and
  validates with the pure-Python proof: same output, and ``--version`` says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FUZZ_SECONDS = 40

pytestmark = pytest.mark.slow


def _gcc() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail("gcc is needed for the sanitizer build (it is on every machine here)")
    return gcc


def test_the_core_survives_a_fuzz_run_under_asan_and_ubsan(tmp_path: Path) -> None:
    gcc = _gcc()
    include = sysconfig.get_paths()["include"]
    so = tmp_path / f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC"]
    sanitize = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    source = REPO / "evalspec" / "validation" / "_core.c"
    built = subprocess.run(
        [
            gcc,
            *flags,
            *sanitize,
            "-fno-omit-frame-pointer",
            f"-I{include}",
            str(source),
            "-o",
            str(so),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    seeds = tmp_path / "seeds.jsonl"
    parts = [(REPO / "fixtures" / name).read_bytes() for name in ("tasks_bad.jsonl", "tasks.jsonl")]
    for mix in ("default", "other"):
        out = tmp_path / f"{mix}.jsonl"
        generate = REPO / "benchmarks" / "generate.py"
        subprocess.run(
            [sys.executable, str(generate), "1000", str(out), "--mix", mix],
            check=True,
            capture_output=True,
        )
        parts.append(out.read_bytes())
    seeds.write_bytes(b"\n".join(parts))
    asan = subprocess.run(
        [gcc, "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {
        **os.environ,
        "LD_PRELOAD": asan,
        # The interpreter's own allocations are not this test's: leaks of the core's
        # heap buffers are test_ccore.py's test_heap_buffers_are_freed.
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:exitcode=99",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=98",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(TESTS)]),
    }
    driver = TESTS / "validation" / "ccore_fuzz_driver.py"
    done = subprocess.run(
        [sys.executable, str(driver), str(seeds), str(FUZZ_SECONDS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=FUZZ_SECONDS * 4 + 60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "runtime error" not in done.stderr and "AddressSanitizer" not in done.stderr
    counts = dict(word.split("=") for word in done.stdout.split())
    assert int(counts["inputs"]) > 10_000, counts
    assert int(counts["json"]) > 1_000 and int(counts["repeated"]) > 100, counts
    assert int(counts["vouched"]) > 1_000, counts  # the Voucher said yes, and was right
    assert int(counts["table_ids"]) > 10_000, counts
    assert int(counts["span_lines"]) > 100, counts


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def _run(target: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # -P: not the checkout (cwd) first on sys.path; the installed copy in target.
    return subprocess.run(
        [sys.executable, "-P", "-c", "from evalspec.cli.main import run; run()", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=target,
        timeout=120,
        check=False,
    )


def test_a_build_without_a_compiler_falls_back_to_the_python_proof(tmp_path: Path) -> None:
    pytest.importorskip("build")  # the test-full extra
    dist = tmp_path / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert any(n.endswith("evalspec/validation/_core.c") for n in names), names
    assert any(n.endswith("evalspec/validation/_core.pyi") for n in names)
    assert any(n.endswith("/setup.py") for n in names)

    wheels: dict[str, Path] = {}
    for kind, env in (("compiled", {}), ("fallback", {"CC": "false", "LDSHARED": "false"})):
        out = tmp_path / kind
        _pip("wheel", "--no-deps", "--quiet", "-w", str(out), str(sdist), env=env)
        (wheels[kind],) = out.glob("*.whl")
    with zipfile.ZipFile(wheels["compiled"]) as whl:
        assert any(
            n.startswith("evalspec/validation/_core.") and n.endswith(".so") for n in whl.namelist()
        )
    with zipfile.ZipFile(wheels["fallback"]) as whl:
        assert not any(n.endswith(".so") for n in whl.namelist()), whl.namelist()
        assert "evalspec/validation/fast.py" in whl.namelist()

    # Big enough for the fast path (256 KiB), with every kind of bad line in it.
    bad = (REPO / "fixtures" / "tasks_bad.jsonl").read_bytes()
    big = tmp_path / "big.jsonl"
    big.write_bytes(bad + (REPO / "fixtures" / "tasks.jsonl").read_bytes() * 400 + bad)
    outputs = {}
    for kind, wheel in wheels.items():
        target = tmp_path / f"site-{kind}"
        _pip("install", "--no-deps", "--quiet", "--target", str(target), str(wheel))
        version = _run(target, "--version")
        assert version.returncode == 0, version.stderr
        want = "compiled core in use" if kind == "compiled" else "compiled core not built"
        assert want in version.stdout, version.stdout
        checked = _run(target, "validate", str(big), "--jobs", "1")
        assert checked.returncode == 1, checked.stderr
        assert "Traceback" not in checked.stderr
        outputs[kind] = checked.stdout
    assert outputs["compiled"] == outputs["fallback"]
