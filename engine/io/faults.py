"""A fault-injecting FileIO for crash-safety tests.

:class:`FailingFileIO` wraps a real :class:`~engine.io.fileio.FileIO` and, on the N-th call of
one chosen operation (optionally only for paths containing a substring), either raises
:class:`~engine.errors.StorageError` or kills the process with SIGKILL — *before* the call acts
(nothing happened) or *after* it (it happened, but the caller cannot know). Every other call is
passed through unchanged.

Every byte a table moves goes through a method this wrapper counts: it overrides every public
``FileIO`` method (a test enforces that), its output and input streams count each ``write`` /
``read`` chunk as one more call (so a fault can fire in the middle of a Parquet file, after
some bytes were written), and its :meth:`FailingFileIO.arrow_fs` is a pyarrow file system that
routes back through the wrapper, so pyarrow's Parquet reads and writes are seen too. Direct
fsspec access (:attr:`FailingFileIO.fs`) is refused because it would bypass the counting.

Invariants: an injected failure is a StorageError whose message starts with ``"injected fault"``;
counting is per instance and thread-safe; the wrapper pickles (the counter travels with it, so a
pickled copy continues the same count). ``torn=True`` makes a failing whole-file
``write_new`` / stream write leave the first half of its bytes behind, as a crash mid-write
would on local disk.
"""

from __future__ import annotations

import functools
import io
import os
import signal
import threading
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.fs as pafs

from engine.errors import InvalidArgumentError, StorageError
from engine.io.fileio import FileIO, FileStatus

if TYPE_CHECKING:
    import fsspec

__all__ = ["FAULT_ENV", "FAULT_OPERATIONS", "FailingFileIO", "fault_from_env"]

# operation name -> the FileIO methods (and stream calls) that count as one call of it.
# ``stream_write`` / ``stream_read`` are the chunk calls on streams from open_output / open_input.
FAULT_OPERATIONS: dict[str, frozenset[str]] = {
    "write": frozenset({"write_bytes", "write_text", "write_new", "open_output", "stream_write"}),
    "try_create": frozenset({"try_create"}),
    "rename": frozenset({"rename"}),
    "link": frozenset({"link_or_copy"}),
    "delete": frozenset({"delete", "delete_dir"}),
    "read": frozenset({"read_bytes", "read_text", "open_input", "stream_read"}),
    "stat": frozenset({"exists", "file_size"}),
    "list": frozenset({"list_dir", "list_files_recursive"}),
    "mkdirs": frozenset({"mkdirs", "mark_directory"}),
}
FAULT_OPERATIONS["any"] = frozenset().union(*FAULT_OPERATIONS.values())

# Environment variable read by :func:`fault_from_env`, e.g. "operation=any,call=17,action=kill".
FAULT_ENV = "DYNTABLE_FAULT_INJECT"

_ACTIONS = frozenset({"raise", "kill", "hook"})


class FailingFileIO(FileIO):
    """Wraps a FileIO and fails (or kills the process at) the N-th call of one operation."""

    def __init__(
        self,
        inner: FileIO,
        operation: str,
        fail_on_call: int = 1,
        *,
        times: int = 1,
        after: bool = False,
        path_contains: str | None = None,
        action: str = "raise",
        torn: bool = False,
        hook: Callable[[str, str], None] | None = None,
    ) -> None:
        """Creates the wrapper.

        Args:
            inner: the FileIO that does the real work.
            operation: a key of ``FAULT_OPERATIONS`` (``write``, ``try_create``, ``rename``,
                ``delete``, ``read``, ``stat``, ``list``, ``mkdirs``, or ``any``).
            fail_on_call: the 1-based number of the matching call that fails first.
            times: how many consecutive matching calls fail from then on (``-1``: all).
            after: if True, run the real operation first and then fail (the effect happened
                but the caller sees an error); if False, fail before doing anything.
            path_contains: only calls whose path contains this substring are counted.
            action: ``raise`` a StorageError, ``kill`` the process with SIGKILL (a real
                crash: no ``finally`` block, no cleanup runs), or ``hook``: call
                ``hook(method, path)`` and go on (a deterministic interleaving: the hook plays
                another process's step exactly there, through another FileIO).
            torn: a failing ``write_new`` or stream write (before-mode) first writes half of
                its bytes, like a crash in the middle of a write.

        Raises:
            InvalidArgumentError: unknown operation or action, or a non-positive call number.
        """
        if operation not in FAULT_OPERATIONS:
            raise InvalidArgumentError(
                f"Unknown fault operation {operation!r}; use one of {sorted(FAULT_OPERATIONS)}."
            )
        if action not in _ACTIONS:
            raise InvalidArgumentError(f"Unknown fault action {action!r}; use one of {sorted(_ACTIONS)}.")
        if (action == "hook") != (hook is not None):
            raise InvalidArgumentError("action='hook' needs a hook callable, and a hook needs action='hook'.")
        if fail_on_call < 1 or times == 0 or times < -1:
            raise InvalidArgumentError("fail_on_call must be >= 1 and times must be >= 1 or -1.")
        super().__init__(inner.protocol, inner.storage_options)
        self.inner = inner
        self.operation = operation
        self.fail_on_call = fail_on_call
        self.times = times
        self.after = after
        self.path_contains = path_contains
        self.action = action
        self.torn = torn
        self.hook = hook
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
        return (
            f"FailingFileIO({self.inner!r}, {self.operation!r}, fail_on_call={self.fail_on_call}, "
            f"action={self.action!r})"
        )

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

    def _fire(self, when: str, method: str, path: str) -> None:
        if self.hook is not None:
            self.hook(method, path)
            return
        if self.action == "kill":
            # A real kill -9: no exception handler, finally block or atexit hook gets to run.
            os.kill(os.getpid(), signal.SIGKILL)
        raise StorageError(f"injected fault {when} {method}({path!r}) (call #{self.calls})")

    def _guard(self, method: str, path: str, action: Callable[[], Any]) -> Any:
        """Counts one call of ``method`` on ``path`` and runs ``action`` unless it must fail first."""
        fail = self._should_fail(method, path)
        if fail and not self.after:
            self._fire("before", method, path)
            fail = False  # only a hook returns: it played its step, the call goes on
        return self._guard_done(fail, method, path, action)

    def _guard_done(self, fail: bool, method: str, path: str, action: Callable[[], Any]) -> Any:
        """Runs ``action`` and, if this call was chosen to fail (after-mode), fails now."""
        try:
            result = action()
        except BaseException:
            if fail and self.action == "kill":  # the call failed by itself; the crash still comes
                self._fire("after", method, path)
            raise
        if fail:
            self._fire("after", method, path)
        return result

    def _call(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._guard(method, path, lambda: getattr(self.inner, method)(*args, **kwargs))

    # --------------------------------------------------------------------------- delegation

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """Refused: raw fsspec access would move bytes the fault counter never sees."""
        raise InvalidArgumentError(
            "FailingFileIO does not expose its fsspec file system: calls through it would bypass "
            "fault injection. Use the FileIO methods (or arrow_fs(), which routes through them)."
        )

    @property
    def is_local(self) -> bool:
        return self.inner.is_local

    def arrow_fs(self) -> pafs.FileSystem:
        """A pyarrow file system whose every call goes through this wrapper's counted methods."""
        return pafs.PyFileSystem(_FaultingArrowHandler(self))

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
        # A RawIOBase is a binary file object at runtime; typing.IO is a nominal type it does not name.
        return cast(IO[bytes], _FaultingInput(self, path, self._call("open_input", path, path)))

    def write_bytes(self, path: str, data: bytes, overwrite: bool = True) -> None:
        self._call("write_bytes", path, path, data, overwrite=overwrite)

    def write_new(self, path: str, data: bytes) -> None:
        fail = self._should_fail("write_new", path)
        if fail and not self.after:
            if self.torn:
                self.inner.write_new(path, bytes(data[: len(data) // 2]))
            self._fire("before", "write_new", path)
            fail = False
        self._guard_done(fail, "write_new", path, lambda: self.inner.write_new(path, data))

    def write_text(self, path: str, text: str, overwrite: bool = True) -> None:
        self._call("write_text", path, path, text, overwrite=overwrite)

    def try_create(self, path: str, data: bytes) -> bool:
        return bool(self._call("try_create", path, path, data))

    def open_output(self, path: str) -> IO[bytes]:
        return cast(IO[bytes], _FaultingOutput(self, path, self._call("open_output", path, path)))

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

    def link_or_copy(self, src: str, dst: str) -> None:
        self._call("link_or_copy", f"{src} -> {dst}", src, dst)

    def mkdirs(self, path: str) -> None:
        self._call("mkdirs", path, path)

    def mark_directory(self, path: str) -> None:
        self._call("mark_directory", path, path)

    @staticmethod
    def for_path(path: str, *, conditional_put: bool | None = None, **storage_options: Any) -> FileIO:
        """Refused: a FailingFileIO is built around an existing FileIO, never from a path."""
        raise InvalidArgumentError(
            "build a FailingFileIO with FailingFileIO(FileIO.for_path(path), operation, ...)"
        )


def fault_from_env(inner: FileIO, env: Mapping[str, str] | None = None) -> FileIO:
    """Wraps ``inner`` as the ``DYNTABLE_FAULT_INJECT`` environment variable asks, else returns it.

    The value is comma-separated ``key=value`` pairs: ``operation`` (default ``any``), ``call``
    (required, 1-based), ``action`` (``raise`` or ``kill``, default ``kill``), ``after`` (``0`` or
    ``1``), ``times``, ``path`` (substring filter), ``torn`` (``0``/``1``). Crash tests set it in a
    child process so that the child dies with SIGKILL at an exact, reproducible FileIO call.

    Raises:
        InvalidArgumentError: a malformed value.
    """
    raw = (os.environ if env is None else env).get(FAULT_ENV, "").strip()
    if not raw:
        return inner
    try:
        spec = dict(item.split("=", 1) for item in raw.split(",") if item)
        unknown = set(spec) - {"operation", "call", "times", "after", "path", "action", "torn"}
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}")
        return FailingFileIO(
            inner,
            spec.pop("operation", "any"),
            int(spec.pop("call")),
            times=int(spec.pop("times", "1")),
            after=spec.pop("after", "0") == "1",
            path_contains=spec.pop("path", None),
            action=spec.pop("action", "kill"),
            torn=spec.pop("torn", "0") == "1",
        )
    except (KeyError, ValueError) as e:
        raise InvalidArgumentError(f"malformed {FAULT_ENV}={raw!r}: {e}") from e


# --------------------------------------------------------------------------------- streams


class _FaultingOutput(io.RawIOBase):
    """A write stream whose every ``write`` is one counted ``stream_write`` call."""

    def __init__(self, owner: FailingFileIO, path: str, raw: IO[bytes]) -> None:
        super().__init__()
        self._owner = owner
        self._path = path
        self._raw = raw
        self._pos = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        owner = self._owner
        fail = owner._should_fail("stream_write", self._path)
        if fail and not owner.after:
            if owner.torn:
                self._raw.write(data[: len(data) // 2])
            self._raw.flush()  # what was written before the fault really reaches the file
            owner._fire("before", "stream_write", self._path)
            fail = False

        def write() -> None:
            self._raw.write(data)
            if fail:  # after-mode: the chunk really reaches the file before the fault fires
                self._raw.flush()

        owner._guard_done(fail, "stream_write", self._path, write)
        self._pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        if not self.closed:
            self._raw.flush()

    def close(self) -> None:
        if not self.closed:
            try:
                super().close()  # flushes first, while the raw file is still open
            finally:
                self._raw.close()


class _FaultingInput(io.RawIOBase):
    """A seekable read stream whose every ``read`` / ``readinto`` is one counted ``stream_read`` call."""

    def __init__(self, owner: FailingFileIO, path: str, raw: IO[bytes]) -> None:
        super().__init__()
        self._owner = owner
        self._path = path
        self._raw = raw

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return bytes(
            self._owner._guard(
                "stream_read", self._path, lambda: self._raw.read(-1 if size is None else size)
            )
        )

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        if not self.closed:
            try:
                super().close()  # flushes first, while the raw file is still open
            finally:
                self._raw.close()


class _FaultingArrowHandler(pafs.FileSystemHandler):
    """pyarrow file-system handler routing every call through a FailingFileIO's counter.

    Byte streams come from the wrapper's own ``open_input`` / ``open_output`` (so each chunk is
    counted); metadata calls are counted under the matching FileIO method, then answered by the
    inner FileIO's native pyarrow file system.
    """

    def __init__(self, owner: FailingFileIO) -> None:
        self._owner = owner
        self._native = owner.inner.arrow_fs()

    def _url(self, path: str) -> str:
        return path if self._owner.is_local else f"{self._owner.protocol}://{path}"

    def _counted(self, method: str, path: str, action: Callable[[], Any]) -> Any:
        return self._owner._guard(method, self._url(path), action)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def get_type_name(self) -> str:
        return "dyntable-faults"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[Any]:
        return [self._counted("exists", p, functools.partial(self._native.get_file_info, p)) for p in paths]

    def get_file_info_selector(self, selector: Any) -> list[Any]:
        return self._counted("list_dir", selector.base_dir, lambda: self._native.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._counted("mkdirs", path, lambda: self._native.create_dir(path, recursive=recursive))

    def delete_dir(self, path: str) -> None:
        self._counted("delete_dir", path, lambda: self._native.delete_dir(path))

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._counted(
            "delete_dir", path, lambda: self._native.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)
        )

    def delete_root_dir_contents(self) -> None:
        raise InvalidArgumentError("FailingFileIO refuses to delete the root directory's contents")

    def delete_file(self, path: str) -> None:
        self._counted("delete", path, lambda: self._native.delete_file(path))

    def move(self, src: str, dest: str) -> None:
        self._counted("rename", f"{src} -> {dest}", lambda: self._native.move(src, dest))

    def copy_file(self, src: str, dest: str) -> None:
        self._counted("write_bytes", dest, lambda: self._native.copy_file(src, dest))

    def open_input_stream(self, path: str) -> Any:
        return pa.PythonFile(self._owner.open_input(self._url(path)), mode="r")

    def open_input_file(self, path: str) -> Any:
        return self.open_input_stream(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return pa.PythonFile(self._owner.open_output(self._url(path)), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        raise InvalidArgumentError("FailingFileIO has no append streams (dyntable never appends to a file)")
