"""A fault-injecting FileIO for crash-safety tests.

:class:`FailingFileIO` wraps a real :class:`~engine.io.fileio.FileIO` and raises
:class:`~engine.errors.StorageError` on the N-th call of one chosen operation (optionally only
for paths containing a substring), either *before* the operation runs (nothing happened) or
*after* it ran (it happened, but the caller cannot know: the "commit state unknown" case).
Every other call is passed through unchanged.

Invariants: an injected failure is always a StorageError whose message starts with
``"injected fault"``; counting is per instance and thread-safe; the wrapper pickles (the counter
travels with it, so a pickled copy continues the same count).
"""

from __future__ import annotations

import threading
from typing import IO, TYPE_CHECKING, Any

from engine.errors import InvalidArgumentError, StorageError
from engine.io.fileio import FileIO, FileStatus

if TYPE_CHECKING:
    import fsspec
    import pyarrow.fs

__all__ = ["FailingFileIO", "FAULT_OPERATIONS"]

# operation name -> the FileIO methods that count as one call of it
FAULT_OPERATIONS: dict[str, frozenset[str]] = {
    "write": frozenset({"write_bytes", "write_text", "open_output"}),
    "try_create": frozenset({"try_create"}),
    "rename": frozenset({"rename"}),
    "delete": frozenset({"delete", "delete_dir"}),
    "read": frozenset({"read_bytes", "read_text", "open_input"}),
    "list": frozenset({"list_dir", "list_files_recursive"}),
    "mkdirs": frozenset({"mkdirs"}),
}


class FailingFileIO(FileIO):
    """Wraps a FileIO and fails the N-th call of one operation with StorageError."""

    def __init__(
        self,
        inner: FileIO,
        operation: str,
        fail_on_call: int = 1,
        *,
        times: int = 1,
        after: bool = False,
        path_contains: str | None = None,
    ) -> None:
        """Creates the wrapper.

        Args:
            inner: the FileIO that does the real work.
            operation: one of ``write``, ``try_create``, ``rename``, ``delete`` (and also
                ``read``, ``list``, ``mkdirs``); see ``FAULT_OPERATIONS`` for the methods each covers.
            fail_on_call: the 1-based number of the matching call that fails first.
            times: how many consecutive matching calls fail from then on (``-1``: all).
            after: if True, run the real operation first and then raise (the effect happened
                but the caller sees an error); if False, raise before doing anything.
            path_contains: only calls whose path contains this substring are counted.

        Raises:
            InvalidArgumentError: unknown operation or a non-positive call number.
        """
        if operation not in FAULT_OPERATIONS:
            raise InvalidArgumentError(
                f"Unknown fault operation {operation!r}; use one of {sorted(FAULT_OPERATIONS)}."
            )
        if fail_on_call < 1 or times == 0 or times < -1:
            raise InvalidArgumentError("fail_on_call must be >= 1 and times must be >= 1 or -1.")
        super().__init__(inner.protocol, inner.storage_options)
        self.inner = inner
        self.operation = operation
        self.fail_on_call = fail_on_call
        self.times = times
        self.after = after
        self.path_contains = path_contains
        self.calls = 0
        self.failures = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock")
        state["_fs"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FailingFileIO({self.inner!r}, {self.operation!r}, fail_on_call={self.fail_on_call})"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    # ------------------------------------------------------------------------- the injector

    def _should_fail(self, method: str, path: str) -> bool:
        if method not in FAULT_OPERATIONS[self.operation]:
            return False
        if self.path_contains is not None and self.path_contains not in path:
            return False
        with self._lock:
            self.calls += 1
            n = self.calls - self.fail_on_call
            fail = n >= 0 and (self.times == -1 or n < self.times)
            if fail:
                self.failures += 1
            return fail

    def _call(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        fail = self._should_fail(method, path)
        if fail and not self.after:
            raise StorageError(f"injected fault before {method}({path!r}) (call #{self.calls})")
        result = getattr(self.inner, method)(*args, **kwargs)
        if fail:
            raise StorageError(f"injected fault after {method}({path!r}) (call #{self.calls})")
        return result

    # --------------------------------------------------------------------------- delegation

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        return self.inner.fs

    @property
    def is_local(self) -> bool:
        return self.inner.is_local

    def arrow_fs(self) -> pyarrow.fs.FileSystem:
        return self.inner.arrow_fs()

    def fs_path(self, path: str) -> str:
        return self.inner.fs_path(path)

    def exists(self, path: str) -> bool:
        return bool(self._call("exists", path, path))

    def read_bytes(self, path: str) -> bytes:
        return bytes(self._call("read_bytes", path, path))

    def read_text(self, path: str) -> str:
        return str(self._call("read_text", path, path))

    def file_size(self, path: str) -> int:
        return int(self._call("file_size", path, path))

    def open_input(self, path: str) -> IO[bytes]:
        return self._call("open_input", path, path)  # type: ignore[no-any-return]

    def write_bytes(self, path: str, data: bytes, overwrite: bool = True) -> None:
        self._call("write_bytes", path, path, data, overwrite=overwrite)

    def write_text(self, path: str, text: str, overwrite: bool = True) -> None:
        self._call("write_text", path, path, text, overwrite=overwrite)

    def try_create(self, path: str, data: bytes) -> bool:
        return bool(self._call("try_create", path, path, data))

    def open_output(self, path: str) -> IO[bytes]:
        return self._call("open_output", path, path)  # type: ignore[no-any-return]

    def list_dir(self, path: str) -> list[FileStatus]:
        return list(self._call("list_dir", path, path))

    def list_files_recursive(self, path: str) -> list[FileStatus]:
        return list(self._call("list_files_recursive", path, path))

    def delete(self, path: str, missing_ok: bool = True) -> None:
        self._call("delete", path, path, missing_ok=missing_ok)

    def delete_dir(self, path: str, recursive: bool = True) -> None:
        self._call("delete_dir", path, path, recursive=recursive)

    def rename(self, src: str, dst: str) -> bool:
        return bool(self._call("rename", f"{src} -> {dst}", src, dst))

    def mkdirs(self, path: str) -> None:
        self._call("mkdirs", path, path)
