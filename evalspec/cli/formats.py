"""CI-native renderings of findings: GitHub annotations, SARIF 2.1.0 and JUnit XML.

Every formatter takes the same input, a sequence of :class:`FileReport`
(one checked file: its path, its :class:`evalspec.ErrorRecord` findings and,
when it could not be read, why), so any evalspec command that reports
``(path, ErrorRecord)`` findings (``validate``, ``lint``) can reuse them.
Each format carries every finding; none of them changes an exit code.

``rules`` maps each rule code to a one-line description; it defaults to
:data:`evalspec.rules.RULES` and a command with its own codes passes its own.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

import attrs

from evalspec._version import __version__
from evalspec.cli.formatnames import (
    FORMATS as FORMATS,  # re-exported: the names render_reports accepts
)
from evalspec.io.wording import one_line
from evalspec.model import ErrorRecord
from evalspec.rules import RULES

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_VERSION = "2.1.0"


def _records(value: Iterable[ErrorRecord]) -> tuple[ErrorRecord, ...]:
    return tuple(value)


@attrs.frozen
class FileReport:
    """What one command found in one file.

    ``io_error`` is set (and ``errors`` empty) when the file could not be read.
    """

    path: str
    errors: tuple[ErrorRecord, ...] = attrs.field(default=(), converter=_records)
    io_error: str | None = None


def describe(e: ErrorRecord) -> str:
    """The finding's message, led by the field it concerns."""
    return f"{one_line(e.field)}: {e.message}" if e.field else e.message


_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters XML 1.0 cannot hold even as character references.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape_char(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def clean(text: str) -> str:
    """``text`` with lone surrogates spelled as ``\\udXXX`` so every encoder takes it."""
    return _SURROGATE.sub(_escape_char, text)


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(_escape_char, text)


# -- GitHub workflow commands ---------------------------------------------------------


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(reports: Sequence[FileReport]) -> list[str]:
    """One ``::error file=…,line=…,title=rule::message`` workflow command per finding.

    Escaping follows the runner's rules: ``%``, CR and LF in the message;
    those plus ``:`` and ``,`` in property values.
    """
    out: list[str] = []
    for report in reports:
        path = _gh_property(clean(report.path))
        if report.io_error is not None:
            msg = _gh_data(clean(f"cannot read {report.path}: {report.io_error}"))
            out.append(f"::error file={path},title=unreadable::{msg}")
        for e in report.errors:
            title = _gh_property(clean(e.rule))
            msg = _gh_data(clean(describe(e)))
            out.append(f"::error file={path},line={e.line},title={title}::{msg}")
    return out


# -- SARIF 2.1.0 ------------------------------------------------------------------------


def artifact_uri(path: str) -> str:
    """A URI reference for ``path``: relative paths stay relative, with ``/`` separators."""
    p = PurePath(path)
    if p.is_absolute():
        return "file://" + quote(PurePath(os.path.abspath(path)).as_posix())
    return quote(p.as_posix())


def sarif_log(
    reports: Sequence[FileReport],
    *,
    rules: Mapping[str, str] = RULES,
    tool_name: str = "evalspec",
    tool_version: str = __version__,
) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: the rules as the driver's rules, one result per finding.

    Files that could not be read become ``toolExecutionNotifications`` and
    make the invocation unsuccessful, as code scanning expects.
    """
    codes = list(rules)
    index = {code: i for i, code in enumerate(codes)}
    driver: dict[str, Any] = {
        "name": tool_name,
        "version": tool_version,
        "rules": [
            {
                "id": code,
                "name": code,
                "shortDescription": {"text": clean(rules[code])},
                "defaultConfiguration": {"level": "error"},
            }
            for code in codes
        ],
    }
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for report in reports:
        location = {"artifactLocation": {"uri": artifact_uri(clean(report.path))}}
        if report.io_error is not None:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": clean(f"cannot read {report.path}: {report.io_error}")},
                    "locations": [{"physicalLocation": location}],
                }
            )
        for e in report.errors:
            result: dict[str, Any] = {
                "ruleId": e.rule,
                "level": "error",
                "message": {"text": clean(describe(e))},
                "locations": [
                    {"physicalLocation": {**location, "region": {"startLine": max(e.line, 1)}}}
                ],
            }
            if e.rule in index:
                result["ruleIndex"] = index[e.rule]
            results.append(result)
    invocation: dict[str, Any] = {"executionSuccessful": not notifications}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{"tool": {"driver": driver}, "invocations": [invocation], "results": results}],
    }


# -- JUnit XML --------------------------------------------------------------------------


def junit_xml(reports: Sequence[FileReport], *, suite: str = "evalspec validate") -> str:
    """JUnit XML: one ``<testcase>`` per file, a ``<failure>`` listing every finding.

    An unreadable file is an ``<error>`` rather than a failure, as JUnit
    readers separate "the check failed" from "the check could not run".
    """
    import xml.etree.ElementTree as ET  # only for this format: it is slow to import

    failures = sum(1 for r in reports if r.errors)
    errors = sum(1 for r in reports if r.io_error is not None)
    counts = {"tests": str(len(reports)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": suite, **counts})
    testsuite = ET.SubElement(root, "testsuite", {"name": suite, **counts})
    for report in reports:
        path = _xml_text(clean(report.path))
        case = ET.SubElement(
            testsuite, "testcase", {"classname": suite, "name": path, "file": path}
        )
        if report.io_error is not None:
            node = ET.SubElement(
                case, "error", {"message": _xml_text(clean(f"cannot read: {report.io_error}"))}
            )
            node.text = node.get("message")
        if report.errors:
            n = len(report.errors)
            node = ET.SubElement(
                case,
                "failure",
                {"message": f"{n} problem{'s' if n != 1 else ''}", "type": "evalspec"},
            )
            node.text = "\n".join(
                _xml_text(clean(f"{report.path}:{e.line}: {e.rule} {describe(e)}"))
                for e in report.errors
            )
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def render_reports(
    name: str, reports: Sequence[FileReport], *, rules: Mapping[str, str] = RULES, command: str
) -> str:
    """The document for format ``name`` (one of :data:`FORMATS`), ending in a newline."""
    if name == "github":
        lines = github_annotations(reports)
        return "".join(line + "\n" for line in lines)
    if name == "sarif":
        log = sarif_log(reports, rules=rules)
        return json.dumps(log, ensure_ascii=False, indent=2) + "\n"
    if name == "junit":
        return junit_xml(reports, suite=command) + "\n"
    raise ValueError(f"unknown format {name!r}; formats are {', '.join(FORMATS)}")


__all__ = [
    "FORMATS",
    "SARIF_SCHEMA",
    "FileReport",
    "artifact_uri",
    "clean",
    "describe",
    "github_annotations",
    "junit_xml",
    "render_reports",
    "sarif_log",
]
