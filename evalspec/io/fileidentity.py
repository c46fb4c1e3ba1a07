"""File identity: telling that the file a reader opens by name is the file the command opened.

A ``--jobs`` worker, or a second streaming pass, opens a file by its name; between
the first open and that one a checkout or a writer's atomic replace may have put
another file at the path. Reading it would give another file's bytes at the first
file's offsets, and a verdict of neither file. These helpers compare what
:func:`os.fstat` says of the two opens and raise :class:`FileChanged` when they differ.
"""

from __future__ import annotations

import contextlib  # loaded at interpreter start-up already
import errno
import os

# Not `from typing import ...`: typing costs milliseconds at start-up (the warm
# path of `evalspec validate` imports this module), and these are annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from io import BufferedReader
    from typing import IO

CHANGED = "the file was replaced or removed while it was read"
"""The default message of :class:`FileChanged`."""


class FileChanged(OSError):
    """The file was replaced (renamed over), removed or rewritten while it was read:
    a reader opening it by name would read another file's bytes at these offsets."""


def changed(message: str = CHANGED) -> FileChanged:
    """A :class:`FileChanged` error (errno ``ESTALE``) saying ``message``."""
    return FileChanged(errno.ESTALE, message)


def file_identity(st: os.stat_result) -> tuple[int, int]:
    """What tells one file from the next at the same path: device and inode."""
    return (st.st_dev, st.st_ino)


def file_signature(f: IO[bytes]) -> tuple[int, ...]:
    """What changes when the open file's bytes do: which file it is (see
    :func:`file_identity`), its size and times (ctime: also when mtime is set back)."""
    st = os.fstat(f.fileno())
    return (*file_identity(st), st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_span(
    path: str | os.PathLike[str], start: int, end: int, identity: tuple[int, int] | None
) -> bytes:
    """Bytes ``start:end`` of ``path``; when ``identity`` is given, of that file only.

    :raises FileChanged: ``identity`` is given and ``path`` is no longer (or no
        more) that file.
    :raises OSError: the file cannot be opened or read.
    """
    with _open_as(path, identity) as f:
        f.seek(start)
        return f.read(end - start)


def read_span_into(
    path: str | os.PathLike[str],
    start: int,
    end: int,
    identity: tuple[int, int] | None,
    buffer: bytearray,
) -> memoryview:
    """:func:`read_span` into ``buffer`` (at least ``end - start`` bytes long): a view
    of its first bytes, good until the buffer is read into again.

    A reader of many spans reuses one buffer: a fresh bytes object per span costs a
    page fault per 4 KiB of it, since the allocator hands each freed one back.

    :raises FileChanged: as :func:`read_span`.
    :raises OSError: the file cannot be opened or read.
    :raises ValueError: ``buffer`` is too small for the span.
    """
    want = end - start
    if want > len(buffer):
        raise ValueError(f"a buffer of {len(buffer)} bytes for a span of {want}")
    view = memoryview(buffer)
    with _open_as(path, identity) as f:
        f.seek(start)
        # A buffered reader's readinto fills the view to the end of the file.
        got = f.readinto(view[:want])
    return view[:got]


@contextlib.contextmanager
def _open_as(
    path: str | os.PathLike[str], identity: tuple[int, int] | None
) -> Iterator[BufferedReader]:
    """``open(path, "rb")``, checked to be the file ``identity`` names (when given)."""
    try:
        f = open(path, "rb")  # noqa: SIM115  # closed below; only the open is guarded
    except FileNotFoundError:
        if identity is None:
            raise
        raise changed() from None
    with f:
        if identity is not None and file_identity(os.fstat(f.fileno())) != identity:
            raise changed()
        yield f


__all__ = [
    "CHANGED",
    "FileChanged",
    "changed",
    "file_identity",
    "file_signature",
    "read_span",
    "read_span_into",
]
