"""Atomic primitives on the local file system, used by :class:`engine.io.fileio.FileIO`.

One job: create or move a file **without ever replacing an existing target**, atomically across
processes (including Java Paimon writers on the same disk), so that readers see a complete file
or none.

Invariants:

* ``local_try_create`` decides with ``os.link(tmp, final)`` (fails on an existing target),
  falling back to ``renameat2(RENAME_NOREPLACE)`` where hard links are unsupported, and only
  then to ``O_CREAT|O_EXCL`` (exclusive, but a concurrent reader may see a partial file).
  The temp file ``.<name>.<uuid>.tmp`` sits in the target directory and is always removed.
* ``local_rename`` never replaces ``dst``; only on a file system with neither hard links nor
  ``renameat2`` does it degrade to check-then-rename (safe for a single writer only).
* Failures are raised as plain ``OSError``s; ``FileIO`` maps them to the engine's errors.
"""

from __future__ import annotations

import ctypes
import errno
import os
import uuid
from typing import Any

__all__ = ["local_rename", "local_try_create", "unlink_quietly", "write_temp", "UNSUPPORTED_ERRNOS"]

# errnos meaning "this file system cannot do that primitive" (as opposed to a real failure).
UNSUPPORTED_ERRNOS = frozenset(
    {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EXDEV, errno.EMLINK, errno.EINVAL}
)


def write_temp(final: str, data: bytes, fsync: bool) -> str:
    """Writes ``data`` to a fresh ``.<name>.<uuid>.tmp`` beside ``final``; returns its path."""
    directory, name = os.path.split(final)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(tmp, flags, 0o666)
    except FileNotFoundError:  # the directory is new: create it only then (commits write here often)
        os.makedirs(directory, exist_ok=True)
        fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        unlink_quietly(tmp)
        raise
    return tmp


def unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def local_try_create(final: str, data: bytes) -> bool:
    if os.path.lexists(final):  # fast path; the link below is what decides
        return False
    tmp = write_temp(final, data, fsync=True)
    try:
        try:
            os.link(tmp, final)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in UNSUPPORTED_ERRNOS:
                raise
        try:
            _rename_noreplace(tmp, final)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in UNSUPPORTED_ERRNOS:
                raise
        return _exclusive_create(final, data)
    finally:
        unlink_quietly(tmp)


def _exclusive_create(final: str, data: bytes) -> bool:
    """Last resort: exclusive, but a concurrent reader may observe a partially written file."""
    try:
        fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        unlink_quietly(final)
        raise
    return True


def local_rename(src: str, dst: str, shown: str) -> bool:
    if not os.path.lexists(src):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), shown)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if not os.path.isdir(src):
        try:
            os.link(src, dst)
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in UNSUPPORTED_ERRNOS:
                raise
        else:
            os.unlink(src)
            return True
    try:
        _rename_noreplace(src, dst)
        return True
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in UNSUPPORTED_ERRNOS:
            raise
    # No no-replace primitive on this file system: check-then-rename (single-writer safe only).
    if os.path.lexists(dst):
        return False
    os.rename(src, dst)
    return True


_RENAMEAT2: Any = None


def _rename_noreplace(src: str, dst: str) -> None:
    """Linux ``renameat2(RENAME_NOREPLACE)``; raises FileExistsError, or ENOSYS where missing."""
    global _RENAMEAT2
    if _RENAMEAT2 is None:
        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _RENAMEAT2 = fn
        except (AttributeError, OSError):
            _RENAMEAT2 = False
    if _RENAMEAT2 is False:
        raise OSError(errno.ENOSYS, "renameat2 is not available", dst)
    at_fdcwd, rename_noreplace = -100, 1
    if _RENAMEAT2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), rename_noreplace) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), dst)
