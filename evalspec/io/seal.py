"""Sealing cache files with a key the cache directory does not hold.

evalspec's caches (the registry snapshot, the entry-point cache) live in
``$XDG_CACHE_HOME/evalspec``, a directory CI systems save and restore between
jobs, including jobs that ran a pull request's code. A checksum over a file's
own content proves nothing there: whoever writes the file writes the checksum.
So every cache file carries an HMAC-SHA256 under a key kept *outside* the cache,
in this user's private directory (:func:`evalspec.io.privatedir.private_dir`,
in the temporary directory, which CI does not restore): 32 random bytes,
created ``0600`` on first use and used only while it is a regular file of this
user's that no one else can read or write. A file sealed under another key
(another machine, another job, a forger) does not open and is rebuilt.

The HMAC is computed here with CPython's built-in SHA-256 (RFC 2104 over
:func:`sha256`), not with :mod:`hmac`: that module loads OpenSSL's
:mod:`_hashlib` (~2 ms), which a warm ``evalspec validate`` does not pay.
The tests check it against :func:`hmac.new`.
"""

from __future__ import annotations

import contextlib
import os
import stat

from evalspec.io.privatedir import PrivateDirError, euid, private_dir

# SHA-256 from CPython's built-in module: the same digest as hashlib's, without
# loading OpenSSL's (~2 ms at every start; the snapshot's file digests use it too).
# 3.12 renamed it _sha2; a build without it (a FIPS Python) uses hashlib.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256 as sha256
else:
    try:
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - depends on the Python build
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256

if TYPE_CHECKING:
    from hmac import compare_digest
else:
    try:  # what hmac.compare_digest is, without hmac's import of OpenSSL
        from _operator import _compare_digest as compare_digest
    except ImportError:  # pragma: no cover - depends on the Python build
        from hmac import compare_digest

KEY_BYTES = 32
KEY_NAME = "cache.key"
_BLOCK = 64  # SHA-256's block size
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


class SealKeyError(PrivateDirError):
    """The cache key cannot be read or made safely (a kind of private-directory problem)."""


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of ``message`` under ``key`` (RFC 2104), as hex."""
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = sha256(key.translate(_IPAD) + message).digest()
    return sha256(key.translate(_OPAD) + inner).hexdigest()


def _read_key(path: str) -> bytes | None:
    """The key at ``path``; ``None`` when there is none yet.

    :raises SealKeyError: something is there that is not a private key of this user's.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SealKeyError(f"cannot read the cache key {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)  # of what was opened, not of whatever the name points to now
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != euid()
            or st.st_mode & 0o077
            or st.st_size != KEY_BYTES
        ):
            raise SealKeyError(
                f"refusing the cache key {path}: it must be a {KEY_BYTES}-byte regular file "
                f"owned by uid {euid()} with mode 0600"
            )
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise SealKeyError(f"refusing the cache key {path}: it changed while being read")
    return key


def key() -> bytes:
    """This user's cache key, made on first use.

    Concurrent first uses agree: each writes a whole key to a fresh file and links
    it into place, and the one that loses reads the winner's.

    :raises SealKeyError: the private directory or the key in it is not private.
    """
    path = os.path.join(private_dir(), KEY_NAME)
    found = _read_key(path)
    if found is not None:
        return found
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
        with contextlib.suppress(FileExistsError):  # another process made one first
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    found = _read_key(path)
    if found is None:
        raise SealKeyError(f"cannot make the cache key {path}")
    return found


_MARK = b"evalspec-sealed-1 "
_MAC_HEX = 64


def seal(payload: bytes) -> bytes:
    """``payload`` with a first line carrying its HMAC under :func:`key`.

    :raises SealKeyError: as :func:`key`.
    """
    return _MARK + hmac_sha256(key(), payload).encode() + b"\n" + payload


def unseal(data: bytes) -> bytes | None:
    """The payload of ``data`` if :func:`seal` made it under this user's key, else
    ``None`` (never an exception: a cache file that does not open is rebuilt)."""
    head = len(_MARK) + _MAC_HEX
    if not data.startswith(_MARK) or data[head : head + 1] != b"\n":
        return None
    try:
        secret = key()
    except (PrivateDirError, OSError):
        return None  # no key we can trust: nothing sealed is believed
    mac, payload = data[len(_MARK) : head], data[head + 1 :]
    if not compare_digest(mac, hmac_sha256(secret, payload).encode()):
        return None
    return payload
