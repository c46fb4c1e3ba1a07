"""``evalspec spec list|show|new|check|lock``: author, check and release spec migrations.

Runs in the project of the nearest ``pyproject.toml`` above the current
directory (see :mod:`evalspec.registry.project`). Text for people by
default, ``--format json`` for tools. Exit 0 clean, 1 problems found, 2
usage or I/O error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

import attrs

from evalspec.authoring.check import SpecReport, check_project, operation_lines, summarize
from evalspec.authoring.new import scaffold_migration, scaffold_plugin
from evalspec.errors import EvalspecError, SpecVersionError
from evalspec.io.atomicfile import repository_lock, resolve_for_write, write_atomic
from evalspec.io.exitcodes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from evalspec.registry.project import Project, load_project
from evalspec.versions.lock import lock_chain, read_lock, repair
from evalspec.versions.table import replay

_LABELS = {
    "categories": "categories",
    "metrics": "metrics",
    "post_processes": "post-process rules",
    "fields": "optional fields",
}


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "spec",
        help="list, show, author, check and release spec versions",
        description="Spec versions are migrations: list them, show one, scaffold the next, "
        "check the chain, gate, lock, fixtures, implementations and changelog, and release "
        "the head with `spec lock`. Runs in the project of the nearest pyproject.toml.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        a: argparse.ArgumentParser = actions.add_parser(name, help=help_text, description=help_text)
        a.add_argument(
            "--format",
            choices=("text", "json"),
            default="text",
            help="text for people (default) or json for tools",
        )
        return a

    action("list", "every spec version, what it adds, released or pending")
    show = action("show", "the vocabulary and pair table at one spec version")
    show.add_argument(
        "number",
        type=int,
        nargs="?",
        metavar="N",
        help="the spec version (default: the newest in force)",
    )
    new = action("new", "scaffold the next migration and its fixture stub")
    new.add_argument(
        "--category", required=True, metavar="NAME", help="the category the migration adds"
    )
    new.add_argument(
        "--metric",
        action="append",
        required=True,
        metavar="M",
        help="a metric the category allows (repeatable)",
    )
    new.add_argument(
        "--post-process",
        action="append",
        required=True,
        metavar="R",
        dest="post_process",
        help="a post-process rule it allows (repeatable)",
    )
    new.add_argument(
        "--fixture",
        metavar="FILE",
        help="the fixture file (default: fixtures/NAME.jsonl in the migrations "
        "directory; an existing file elsewhere is copied there)",
    )
    new.add_argument("--message", metavar="TEXT", help="the migration's one-line message")
    action("check", "check chain, gate, lock, fixtures, implementations and changelog")
    lock = action("lock", "release the current head: record checksums in the project's lock")
    lock.add_argument(
        "--repair",
        type=int,
        metavar="N",
        help="re-record the checksums of released versions N and later after a deliberate "
        "edit; only for versions never published (otherwise add a new migration)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        project = load_project()
    except EvalspecError as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    handler = {
        "list": _list,
        "show": _show,
        "new": _new,
        "check": _check,
        "lock": _lock,
    }[args.action]
    return handler(project, args)


def _emit(args: argparse.Namespace, doc: dict[str, Any], lines: list[str]) -> None:
    if args.format == "json":
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for line in lines:
            print(line)


def _problem_lines(report: SpecReport) -> list[str]:
    lines = [f"{p.check}: {p.message}" for p in report.problems]
    lines += [f"note: {n}" for n in report.notes]
    return lines


def _config_failure(report: SpecReport, args: argparse.Namespace) -> int | None:
    """Exit 2 when the project or its plugins could not even be loaded."""
    config = [p for p in report.problems if p.check == "config"]
    if not config:
        return None
    if args.format == "json":
        _emit(args, report.to_dict(), [])
    for p in config:
        print(f"evalspec: error: {p.message}", file=sys.stderr)
    return EXIT_USAGE


def _list(project: Project, args: argparse.Namespace) -> int:
    report = check_project(project)
    failed = _config_failure(report, args)
    if failed is not None:
        return failed
    rows = []
    lines = []
    invalid = {p.version for p in report.problems if p.version is not None}
    for mig in report.migrations:
        adds = summarize(mig)
        status = report.status(mig.version)
        if mig.version in invalid:
            status += " (invalid)"
        rows.append(
            {
                "version": mig.version,
                "parent": mig.parent,
                "message": mig.message,
                "origin": mig.origin,
                "status": status,
                "adds": adds,
            }
        )
        lines.append(f"{mig.version:>4}  {status:<9} {mig.message}  [{mig.origin}]")
        added = [f"{_LABELS[k]} {', '.join(v)}" for k, v in adds.items() if v and k in _LABELS]
        parts = [f"adds {'; '.join(added)}"] if added else []
        if adds["binds"]:
            parts.append(f"binds {', '.join(adds['binds'])}")
        if adds["waives"]:
            parts.append(f"waives {', '.join(adds['waives'])}")
        if adds["deprecates"]:
            parts.append(f"deprecates {', '.join(adds['deprecates'])}")
        lines.append(f"      {'; '.join(parts)}" if parts else "      adds nothing")
    lines.append(
        f"in force: spec version {report.released} (lock: {report.lock_label}); head: {report.head}"
    )
    if not report.chain_ok:
        lines.append("the chain is broken:")
    lines += [f"{p.check}: {p.message}" for p in report.problems]
    if report.problems:
        lines.append(f"spec list: {len(report.problems)} problem(s); see `evalspec spec check`")
    _emit(
        args,
        {
            "versions": rows,
            "released": report.released,
            "head": report.head,
            "lock": report.lock_label,
            "chain_ok": report.chain_ok,
            "problems": [p.to_dict() for p in report.problems],
        },
        lines,
    )
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _show(project: Project, args: argparse.Namespace) -> int:
    report = check_project(project)
    failed = _config_failure(report, args)
    if failed is not None:
        return failed
    if not report.chain_ok:
        print("evalspec: error: the chain is broken; run `evalspec spec check`", file=sys.stderr)
        return EXIT_USAGE
    number = report.released if args.number is None else args.number
    try:
        spec = replay(report.migrations, number)
    except SpecVersionError as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    status = report.status(number)
    cats = {
        name: {
            "metrics": list(c.metrics),
            "post_processes": list(c.post_processes),
            "added_in": c.added_in,
            "fixtures": list(c.fixtures),
            "single_target_from": list(c.single_target_from),
            "bound": [{"kind": k, "name": n, "version": v} for k, n, v in c.bound],
        }
        for name, c in spec.categories.items()
    }
    deprecated = sorted(f"{k} {n}" for k, n in spec.deprecated)
    doc = {
        "version": number,
        "status": status,
        "categories": cats,
        "metrics": dict(spec.metrics),
        "post_processes": dict(spec.post_processes),
        "deprecated": deprecated,
        "fields": {
            f.name: {
                "choices": list(f.choices),
                "categories": list(f.categories),
                "added_in": f.added_in,
            }
            for f in spec.fields.values()
        },
        "waivers": [
            {"rule": r, "category": c, "field": f, "value": v}
            for r, c, f, v in sorted(spec.waivers)
        ],
    }
    mig = report.migrations[number - 1]
    operations = operation_lines(mig)
    doc["message"] = mig.message
    doc["operations"] = operations
    lines = [f"spec version {number} ({status}): {mig.message}", ""]
    lines += [f"  {line}" for line in operations]
    lines += ["", "category pairs:"]
    for name, c in spec.categories.items():
        lines.append(f"  {name} (added in {c.added_in})")
        since = {(k, n): v for k, n, v in c.bound}
        metrics = [_since(m, since.get(("metric", m))) for m in c.metrics]
        rules = [_since(r, since.get(("post_process", r))) for r in c.post_processes]
        lines.append(f"    metrics: {', '.join(metrics)}")
        lines.append(f"    post_process: {', '.join(rules)}")
        if c.single_target_from:
            lines.append(f"    single target from: {', '.join(c.single_target_from)}")
    lines.append("metrics: " + ", ".join(f"{n} ({v})" for n, v in spec.metrics.items()))
    lines.append(
        "post-process rules: " + ", ".join(f"{n} ({v})" for n, v in spec.post_processes.items())
    )
    for opt in spec.fields.values():
        details = [f"one of {', '.join(opt.choices)}"] if opt.choices else []
        if opt.categories:
            details.append(f"only in {', '.join(opt.categories)}")
        shown = f" ({'; '.join(details)})" if details else ""
        lines.append(f"optional field: {opt.name}{shown} (added in {opt.added_in})")
    for rule, category, field, value in sorted(spec.waivers):
        lines.append(f"waived: {rule} for {category} tasks with {field}={value}")
    if spec.deprecated:
        lines.append("deprecated: " + ", ".join(deprecated))
    _emit(args, doc, lines)
    return EXIT_OK


def _since(name: str, version: int | None) -> str:
    return name if version is None else f"{name} (bound in {version})"


def _new(project: Project, args: argparse.Namespace) -> int:
    if project.migrations is not None and project.root is not None:
        # The first `spec new` of a project creates its migrations directory.
        try:
            project.migrations.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"evalspec: error: cannot create {project.migrations}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    # The chain is read (its head) and version head + 1 written under the lock:
    # concurrent runs would otherwise all write the same version.
    held = repository_lock(project.root) if project.root is not None else contextlib.nullcontext()
    with held:
        return _new_locked(project, args)


def _new_locked(project: Project, args: argparse.Namespace) -> int:
    # A plugin module [tool.evalspec] names but nobody has written yet is the
    # normal state of a first `spec new`: check without it, then scaffold it.
    missing = project.missing_plugins()
    present = tuple(p for p in project.plugins if p not in missing)
    report = check_project(attrs.evolve(project, plugins=present) if missing else project)
    failed = _config_failure(report, args)
    if failed is not None:
        return failed
    try:
        made = scaffold_migration(
            project,
            report.migrations,
            category=args.category,
            metrics=args.metric,
            post_processes=args.post_process,
            fixture=args.fixture,
            message=args.message,
        )
        # The stubs go to the first missing module only: two copies would
        # contribute every name twice.
        plugin_files = (
            [scaffold_plugin(project, missing[0], made, args.category)] if missing else []
        )
    except EvalspecError as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"evalspec: error: cannot write the scaffold: {exc}", file=sys.stderr)
        return EXIT_USAGE
    todo = list(made.todo)
    written = [project.relative(path) for path in plugin_files]
    todo[-1:-1] = [
        f"write the project plugin {m!r} listed in [tool.evalspec] plugins (it does not exist)"
        for m in missing[1:]
    ]
    if written:
        # The generic "implement ... in a plugin" step becomes "fill in the stubs".
        todo = [t for t in todo if not t.startswith("implement ")]
        todo.insert(
            -1,
            f"fill in the stubs of {', '.join(written)} (they raise NotImplementedError "
            "until written)",
        )
    doc = {
        "version": made.version,
        "migration": project.relative(made.migration_file),
        "fixture": project.relative(made.fixture_file),
        "fixture_stub_written": made.fixture_written,
        "plugins_written": written,
        "todo": todo,
    }
    lines = [
        f"wrote {doc['migration']} (spec version {made.version}, pending)",
        f"{'wrote stub' if made.fixture_written else 'uses'} {doc['fixture']}",
        *(f"wrote plugin stub {w}" for w in written),
        "still to do:",
        *(f"  {i}. {t}" for i, t in enumerate(todo, start=1)),
    ]
    _emit(args, doc, lines)
    return EXIT_OK


def _check(project: Project, args: argparse.Namespace) -> int:
    report = check_project(project)
    failed = _config_failure(report, args)
    if failed is not None:
        return failed
    lines = _problem_lines(report)
    pending = report.head - report.released if report.chain_ok else 0
    if report.ok:
        lines.append(
            f"spec check: ok (spec versions 1..{report.released} released, {pending} pending)"
        )
    else:
        lines.append(f"spec check: {len(report.problems)} problem(s)")
    _emit(args, report.to_dict(), lines)
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _lock(project: Project, args: argparse.Namespace) -> int:
    report = check_project(project)
    failed = _config_failure(report, args)
    if failed is not None:
        return failed
    if project.root is None or project.lock is None:
        print("evalspec: error: no pyproject.toml here or above: not in a project", file=sys.stderr)
        return EXIT_USAGE
    blocking = report.problems
    if args.repair is not None:  # the checksum mismatches are what --repair is for
        blocking = tuple(p for p in blocking if p.check != "lock")
    if blocking:
        lines = [f"{p.check}: {p.message}" for p in blocking]
        lines.append(
            f"spec lock: refusing to release: {len(blocking)} problem(s); "
            "fix them and run `evalspec spec check`"
        )
        _emit(args, {**report.to_dict(), "locked": []}, lines)
        return EXIT_PROBLEMS
    path = project.relative(project.lock)
    if args.repair is not None:
        return _repair(project, report, args)
    already = report.released if project.has_lock else 0
    if report.head <= already:
        _emit(
            args,
            {"locked": [], "lock": path, "released": report.released},
            [f"nothing to lock: spec version {report.head} is already released in {path}"],
        )
        return EXIT_OK
    lock = lock_chain(report.migrations, path)
    try:
        with repository_lock(project.root):
            resolve_for_write(project.lock, project.root)  # before mkdir: no dirs made outside
            project.lock.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(project.lock, lock.to_json(), root=project.root)
    except EvalspecError as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"evalspec: error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    new = [e.version for e in lock.entries if e.version > already]
    _emit(
        args,
        {"locked": new, "lock": path, "released": lock.released},
        [
            f"released spec version(s) {', '.join(map(str, new))} in {path}; "
            f"spec version {lock.released} is now the default"
        ],
    )
    return EXIT_OK


def _repair(project: Project, report: SpecReport, args: argparse.Namespace) -> int:
    assert project.lock is not None
    path = project.relative(project.lock)
    if not project.has_lock:
        print(f"evalspec: error: nothing to repair: {path} does not exist", file=sys.stderr)
        return EXIT_USAGE
    root = project.root if project.root is not None else project.lock.parent
    try:
        with repository_lock(root):
            old = read_lock(project.lock, path)
            new = repair(report.migrations, old, args.repair)
            write_atomic(project.lock, new.to_json(), root=root)
    except EvalspecError as exc:
        print(f"evalspec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"evalspec: error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    changed = [
        (o.version, o.checksum, n.checksum)
        for o, n in zip(old.entries, new.entries, strict=True)
        if o.checksum != n.checksum
    ]
    lines = [f"re-recorded spec version {v} in {path}: {a} -> {b}" for v, a, b in changed]
    if not changed:
        lines.append(f"nothing to repair: {path} already matches the migrations")
    _emit(
        args,
        {"repaired": [{"version": v, "old": a, "new": b} for v, a, b in changed], "lock": path},
        lines,
    )
    return EXIT_OK
