"""Manifests for large files kept outside git.

A manifest (by default ``datasets/manifest.json``) lists each large file's
repository-relative path, its remote URI, SHA-256 and size, so the repository
always answers "which exact data did today's run use". The API:

- :func:`load_manifest` / :func:`save_manifest`: the file format (see :mod:`.codec`);
- :func:`add`: record a file and ignore it in git;
- :func:`verify`: every problem with the manifest and the local copies;
- :func:`fetch`: bring missing files from their URI, verified, atomically;
- :func:`present_entries`: the entries whose file is present (lint's datasets).

Problems are :class:`ManifestProblem` values with a code from
:data:`PROBLEM_CODES`; exceptions (:class:`ManifestError`) are for
problems that stop an operation as a whole.
"""

from __future__ import annotations

from evalspec.manifest.add import AddResult, add
from evalspec.manifest.check import LocalFile, check_entry, present_entries, verify
from evalspec.manifest.codec import (
    dumps_manifest,
    load_manifest,
    new_manifest,
    parse_manifest,
    save_manifest,
)
from evalspec.manifest.errors import ManifestError, ManifestFormatError, MissingExtraError
from evalspec.manifest.fetch import FetchLimits, FetchResult, fetch
from evalspec.manifest.lfs import LfsPointer, parse_lfs_pointer, read_lfs_pointer
from evalspec.manifest.model import (
    DEFAULT_MANIFEST,
    FORMAT_NAME,
    FORMAT_VERSION,
    Manifest,
    ManifestEntry,
)
from evalspec.manifest.paths import find_root
from evalspec.manifest.problems import IO_CODES, PROBLEM_CODES, ManifestProblem

__all__ = [
    "DEFAULT_MANIFEST",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "IO_CODES",
    "PROBLEM_CODES",
    "AddResult",
    "FetchLimits",
    "FetchResult",
    "LfsPointer",
    "LocalFile",
    "Manifest",
    "ManifestEntry",
    "ManifestError",
    "ManifestFormatError",
    "ManifestProblem",
    "MissingExtraError",
    "add",
    "check_entry",
    "dumps_manifest",
    "fetch",
    "find_root",
    "load_manifest",
    "new_manifest",
    "parse_lfs_pointer",
    "parse_manifest",
    "present_entries",
    "read_lfs_pointer",
    "save_manifest",
    "verify",
]
