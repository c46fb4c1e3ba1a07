"""Opening an entry's URI for reading: ``file://`` by the stdlib, the rest by fsspec.

Object stores take their settings the way their own tools do: for S3 the
standard AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, ``AWS_DEFAULT_REGION``,
``AWS_ENDPOINT_URL``) and fsspec's configuration (``FSSPEC_S3_*`` variables
or ``~/.config/fsspec/*.json``). ``EVALSPEC_S3_ENDPOINT_URL`` points ``s3://``
URIs at an S3-compatible server (MinIO, Ceph, a local test server) without
touching other AWS tools. Python callers can pass ``storage_options``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import IO, Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from evalspec.manifest.errors import ManifestError, MissingExtraError

S3_ENDPOINT_ENV = "EVALSPEC_S3_ENDPOINT_URL"
_S3_SCHEMES = ("s3", "s3a")
# fsspec backends that live in their own package, for the missing-extra message.
_BACKEND_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
                     "abfs": "adlfs", "abfss": "adlfs"}  # fmt: skip


def scheme_of(uri: str) -> str:
    """The URI's scheme, lower-cased."""
    return urlsplit(uri).scheme.lower()


def file_uri_path(uri: str) -> str:
    """The local path a ``file://`` URI names (host must be empty or ``localhost``)."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise ManifestError(f"{uri}: file:// URIs must not name a remote host")
    if not parts.path:
        raise ManifestError(f"{uri}: file:// URI without a path")
    return url2pathname(unquote(parts.path))


def storage_options_for(uri: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """fsspec options for ``uri``: evalspec's environment settings, then ``given`` on top."""
    options: dict[str, Any] = {}
    endpoint = os.environ.get(S3_ENDPOINT_ENV)
    if endpoint and scheme_of(uri) in _S3_SCHEMES:
        options["client_kwargs"] = {"endpoint_url": endpoint}
    for key, value in (given or {}).items():
        if key == "client_kwargs" and isinstance(value, Mapping):
            options["client_kwargs"] = {**options.get("client_kwargs", {}), **value}
        else:
            options[key] = value
    return options


def _fsspec() -> Any:
    try:
        return importlib.import_module("fsspec")
    except ImportError as exc:
        raise MissingExtraError(
            "fetching non-file:// URIs needs fsspec; install it with "
            "pip install 'evalspec-contract[manifest]'"
        ) from exc


def open_source(uri: str, storage_options: Mapping[str, Any] | None = None) -> IO[bytes]:
    """A binary stream of the object at ``uri`` (the caller closes it)."""
    scheme = scheme_of(uri)
    if scheme == "file":
        return open(file_uri_path(uri), "rb")
    fsspec = _fsspec()
    options = storage_options_for(uri, storage_options)
    try:
        fs, path = fsspec.core.url_to_fs(uri, **options)
    except ImportError as exc:
        package = _BACKEND_PACKAGES.get(scheme, f"the fsspec backend for {scheme}://")
        hint = (
            "pip install 'evalspec-contract[manifest]'"
            if package == "s3fs"
            else f"install {package}"
        )
        raise MissingExtraError(f"fetching {scheme}:// URIs needs {package}; {hint}") from exc
    except ValueError as exc:  # fsspec: "Protocol not known"
        raise ManifestError(f"{uri}: {exc}") from exc
    stream: IO[bytes] = fs.open(path, "rb")
    return stream
