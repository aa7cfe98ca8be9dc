"""The FileIO seam: every byte dyntable reads or writes goes through one :class:`FileIO`.

A ``FileIO`` is bound to one fsspec protocol (local disk, ``s3://``, ``memory://`` or any fsspec
URL scheme) plus its storage options, and offers the few operations a Paimon table needs:
read, write, list, delete, rename and — the one the commit protocol depends on — an atomic
**create-if-absent** (:meth:`FileIO.try_create`).

Invariants:

* Paths keep the style they were given in. Calls take absolute local paths or URLs of the
  bound protocol; listings return children as ``join(given_path, relative_name)``, so a table
  rooted at ``s3://bucket/wh`` lists ``s3://bucket/wh/...`` and a local one lists absolute
  local paths. A path of another protocol is rejected (InvalidArgumentError), never guessed.
* A missing file raises the builtin :class:`FileNotFoundError` (callers branch on it); every
  other I/O failure raises :class:`~engine.errors.StorageError` naming the path.
* ``try_create`` is atomic across processes and machines sharing the storage: it returns True
  for exactly one caller per path, and readers see either the whole content or no file.
  - local disk: write ``.<name>.<uuid>.tmp`` in the target directory, fsync, then
    ``os.link(tmp, final)`` (fails if ``final`` exists) and unlink the temp file. Where hard
    links are unsupported, ``renameat2(RENAME_NOREPLACE)``; only if that is unsupported too,
    ``O_CREAT|O_EXCL`` — still exclusive, but a concurrent reader may see a partial file.
    (Java Paimon's ``LocalFileIO.rename`` is check-then-move, safe only inside one JVM.)
    These primitives live in :mod:`engine.io.localfs`.
  - S3 (s3fs): a conditional PUT (``If-None-Match: *``); HTTP 412 means someone else won. The
    PUT goes through a client that never resends it by itself: botocore and s3fs retry a request
    whose answer was lost (a read timeout, a dropped connection), and the resent PUT of a create
    that did succeed gets 412, so the creator would be told it lost (a commit would then delete
    the metadata its own published snapshot names). Without the resend a lost answer raises
    StorageError (outcome unknown), which the commit resolves by reading the snapshot back.
  - ``memory://``: a process-wide lock (the store itself is process-local).
  - other object stores: refused with StorageError, because a check-then-write there can let
    two writers both "win" and lose a snapshot. Pass ``conditional_put=True`` only if that
    file system's ``pipe_file(path, data, mode="create")`` is a real conditional write
    (e.g. a gcsfs with ``ifGenerationMatch=0``) or all writers hold an external lock.
* Plain overwriting writes on local disk are atomic too (temp file + ``os.replace``), so a
  reader never sees a half-written hint file. ``open_output`` streams straight to the final
  path: it is meant for data files, which are invisible until a snapshot references them.
* Picklable (Spark ships it to executors): only protocol and storage options travel; the
  fsspec file system is rebuilt lazily on first use. ``repr`` never shows storage options
  (they may hold credentials).
"""

from __future__ import annotations

import datetime as _dt
import errno
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import fsspec
from fsspec.core import split_protocol

from engine.errors import DyntableError, InvalidArgumentError, StorageError
from engine.io.localfs import local_rename, local_try_create, unlink_quietly, write_temp

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["FileIO", "FileStatus", "join"]

_LOCAL_PROTOCOLS = frozenset({"file", "local"})
# Protocols whose fsspec pipe_file(mode="create") is a real conditional write.
_CONDITIONAL_PUT_PROTOCOLS = frozenset({"s3", "s3a"})
# memory:// lives in this process only, so one process-wide lock makes create/rename atomic.
_MEMORY_LOCK = threading.Lock()


@dataclass(frozen=True)
class FileStatus:
    """One listed entry.

    Attributes:
        path: full path in the style of the listed directory (URL or absolute local path).
        size: size in bytes (0 for directories).
        is_dir: True for directories (prefixes on object stores).
        modification_time_ms: last modification, epoch milliseconds; None when the store
            does not report it (e.g. S3 prefixes).
    """

    path: str
    size: int
    is_dir: bool
    modification_time_ms: int | None


def join(*parts: str) -> str:
    """Joins path segments with ``/`` while keeping a URL scheme intact.

    ``join("s3://b/wh", "db.db", "t")`` is ``"s3://b/wh/db.db/t"``. Later segments are always
    appended (a leading ``/`` on them does not restart the path, unlike ``os.path.join``);
    empty segments are skipped.

    Args:
        *parts: the first segment may carry a scheme (``s3://``) or be an absolute local path.

    Returns:
        The joined path.
    """
    parts = tuple(p for p in parts if p)
    if not parts:
        return ""
    head = parts[0]
    scheme_end = head.find("://")
    keep = scheme_end + 3 if scheme_end >= 0 else 0
    if head[keep:].startswith("/"):  # "/abs" or "file:///abs": the root slash is part of the prefix
        keep += 1
    # Trim trailing slashes but never into the "s3://" marker or the root "/".
    result = head[:keep] + head[keep:].rstrip("/")
    for part in parts[1:]:
        part = part.strip("/")
        if not part:
            continue
        result = result + part if result.endswith("/") else result + "/" + part
    return result


class FileIO:
    """Thin, picklable seam over an fsspec file system.

    Build one with :meth:`for_path` from a table or warehouse location; every method takes
    paths of that same protocol.
    """

    def __init__(
        self,
        protocol: str = "file",
        storage_options: Mapping[str, Any] | None = None,
        *,
        conditional_put: bool | None = None,
    ) -> None:
        """Creates a FileIO for one fsspec protocol.

        Args:
            protocol: an fsspec protocol name (``file``, ``s3``, ``memory``, ``gcs`` ...).
            storage_options: keyword arguments for the fsspec file system (credentials,
                ``client_kwargs={"endpoint_url": ...}``, ...).
            conditional_put: None = decide by protocol; True = trust this file system's
                ``pipe_file(mode="create")`` to be an atomic create-if-absent.

        Raises:
            InvalidArgumentError: the protocol is unknown to fsspec.
        """
        protocol = "file" if protocol in _LOCAL_PROTOCOLS else protocol
        try:
            fs_cls = fsspec.get_filesystem_class(protocol)
        except (ValueError, ImportError) as e:
            raise InvalidArgumentError(
                f"Unsupported storage protocol {protocol!r}: {e}. Use a local path or a URL whose "
                f"scheme fsspec knows (s3://, memory://, ...), and install its package (e.g. s3fs)."
            ) from e
        self._protocol = protocol
        self._storage_options = dict(storage_options or {})
        self._conditional_put = conditional_put
        self._local = protocol == "file"
        names = fs_cls.protocol if isinstance(fs_cls.protocol, tuple | list) else (fs_cls.protocol,)
        self._accepted = frozenset({protocol, *names})
        self._fs_cls = fs_cls
        self._fs: fsspec.AbstractFileSystem | None = None
        self._create_fs: fsspec.AbstractFileSystem | None = None  # S3: conditional PUTs, never resent

    @staticmethod
    def for_path(path: str, *, conditional_put: bool | None = None, **storage_options: Any) -> FileIO:
        """Picks the protocol from a path's URL scheme; plain paths are local.

        Args:
            path: a local path, ``file://`` URL or any fsspec URL (``s3://bucket/wh``).
            conditional_put: see :class:`FileIO`.
            **storage_options: passed to the fsspec file system.

        Returns:
            A FileIO that accepts paths of that protocol.

        Raises:
            InvalidArgumentError: chained (``a::b://``) or unknown URLs.
        """
        if "::" in path:
            raise InvalidArgumentError(
                f"Chained fsspec URLs are not supported as table locations: {path!r}. "
                "Use a plain URL such as s3://bucket/warehouse."
            )
        protocol, _ = split_protocol(path)
        return FileIO(protocol or "file", storage_options, conditional_put=conditional_put)

    # ----------------------------------------------------------------------------------- state

    @property
    def protocol(self) -> str:
        """The fsspec protocol this FileIO is bound to (``file`` for local disk)."""
        return self._protocol

    @property
    def storage_options(self) -> dict[str, Any]:
        """A copy of the fsspec storage options."""
        return dict(self._storage_options)

    @property
    def is_local(self) -> bool:
        """True when paths are on the local file system."""
        return self._local

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The underlying fsspec file system, created on first use."""
        if self._fs is None:
            options = dict(self._storage_options)
            if self._protocol in _CONDITIONAL_PUT_PROTOCOLS:
                # Listing caches would let exists()/ls() miss a snapshot another writer just made.
                options.setdefault("use_listings_cache", False)
            self._fs = fsspec.filesystem(self._protocol, **options)
        return self._fs

    def _conditional_fs(self) -> fsspec.AbstractFileSystem:
        """The file system for ``pipe_file(mode="create")``: on S3 a client of its own whose
        conditional PUT is sent once (see the module docstring); elsewhere :attr:`fs`."""
        if self._protocol not in _CONDITIONAL_PUT_PROTOCOLS:
            return self.fs
        if self._create_fs is None:
            options = dict(self._storage_options)
            options["use_listings_cache"] = False
            options["skip_instance_cache"] = True  # its retry setting below is its own
            config = dict(options.get("config_kwargs") or {})
            config["retries"] = {"total_max_attempts": 1}  # botocore: no automatic resend
            options["config_kwargs"] = config
            fs = fsspec.filesystem(self._protocol, **options)
            fs.retries = 1  # s3fs: one attempt in its own retry loop too (an instance attribute)
            self._create_fs = fs
        return self._create_fs

    def arrow_fs(self) -> pyarrow.fs.FileSystem:
        """A pyarrow file system over the same storage; give it paths from :meth:`fs_path`.

        Parquet data files are read and written through it, so a FileIO subclass that observes
        or alters I/O (``engine.io.faults.FailingFileIO``) must return one that routes back
        through its own methods.
        """
        import pyarrow.fs as pafs  # lazy: keep importing this module cheap

        if self._local:
            return pafs.LocalFileSystem()
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))

    def fs_path(self, path: str) -> str:
        """The path as the file system (fsspec or :meth:`arrow_fs`) expects it: no scheme."""
        if self._local and ":" not in path:
            return os.path.abspath(path)  # the common case, without parsing a scheme
        protocol, rest = split_protocol(path)
        if protocol is None and not self._local:
            raise InvalidArgumentError(
                f"Path {path!r} has no URL scheme but this FileIO is for {self._protocol}://; "
                f"pass the full URL (e.g. {self._protocol}://bucket/dir)."
            )
        if protocol is not None and protocol not in self._accepted:
            raise InvalidArgumentError(
                f"Path {path!r} does not belong to this FileIO ({self._protocol}); "
                "create a FileIO for that location with FileIO.for_path(path)."
            )
        if self._local:
            return os.path.abspath(rest)
        return self._fs_cls._strip_protocol(path).rstrip("/")

    def __getstate__(self) -> dict[str, Any]:
        return {"protocol": self._protocol, "options": self._storage_options, "cp": self._conditional_put}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["protocol"], state["options"], conditional_put=state["cp"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(protocol={self._protocol!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileIO) or type(other) is not type(self):
            return NotImplemented
        return self.__getstate__() == other.__getstate__()

    def __hash__(self) -> int:
        return hash((self._protocol, repr(sorted(self._storage_options.items()))))

    # ------------------------------------------------------------------------------ reading

    def exists(self, path: str) -> bool:
        """True if a file or directory exists at ``path``."""
        p = self.fs_path(path)
        with _errors("check existence of", path):
            return os.path.exists(p) if self._local else bool(self.fs.exists(p))

    def read_bytes(self, path: str) -> bytes:
        """Reads a whole file.

        Raises:
            FileNotFoundError: no file at ``path``.
            StorageError: any other I/O failure.
        """
        p = self.fs_path(path)
        if self._local:  # sweeps read thousands of small files: no context manager per read
            try:
                with open(p, "rb") as f:
                    return f.read()
            except (OSError, ValueError) as e:
                raise _mapped(e, "read", path) from e
        with _errors("read", path):
            return bytes(self.fs.cat_file(p))

    def read_text(self, path: str) -> str:
        """Reads a whole file as UTF-8 text (same errors as :meth:`read_bytes`)."""
        return self.read_bytes(path).decode("utf-8")

    def file_size(self, path: str) -> int:
        """Size of a file in bytes (FileNotFoundError if missing)."""
        p = self.fs_path(path)
        with _errors("get the size of", path):
            return os.stat(p).st_size if self._local else int(self.fs.size(p))

    def open_input(self, path: str) -> IO[bytes]:
        """Opens a file for binary, seekable reading (e.g. for ``pyarrow.parquet``)."""
        p = self.fs_path(path)
        with _errors("open for reading", path):
            return open(p, "rb") if self._local else self.fs.open(p, "rb")

    # ------------------------------------------------------------------------------ writing

    def write_bytes(self, path: str, data: bytes, overwrite: bool = True) -> None:
        """Writes a whole file, creating parent directories on local disk.

        Args:
            path: target file.
            data: the complete content.
            overwrite: if False and the file exists, raise FileExistsError (the check and the
                write are one atomic step, see :meth:`try_create`).

        Raises:
            FileExistsError: ``overwrite=False`` and the file exists.
            StorageError: the write failed.
        """
        if not overwrite:
            if not self.try_create(path, data):
                raise FileExistsError(errno.EEXIST, "File exists; refusing to overwrite", path)
            return
        p = self.fs_path(path)
        with _errors("write", path):
            if self._local:
                tmp = write_temp(p, data, fsync=False)
                try:
                    os.replace(tmp, p)
                except BaseException:
                    unlink_quietly(tmp)
                    raise
            else:
                self.fs.pipe_file(p, bytes(data))

    def write_new(self, path: str, data: bytes) -> None:
        """Writes a new, uniquely named, immutable file in one go (manifests, manifest lists).

        No temporary file: nothing refers to such a file until a snapshot naming it is
        published, so a half-written one can only ever be an orphan. Existing files are refused.
        """
        p = self.fs_path(path)
        with _errors("write", path):
            if self._local:
                try:
                    f = open(p, "xb")
                except FileNotFoundError:
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    f = open(p, "xb")
                with f:
                    f.write(data)
            else:
                self.fs.pipe_file(p, bytes(data))

    def write_text(self, path: str, text: str, overwrite: bool = True) -> None:
        """Writes a whole file as UTF-8 text (see :meth:`write_bytes`)."""
        self.write_bytes(path, text.encode("utf-8"), overwrite=overwrite)

    def try_create(self, path: str, data: bytes) -> bool:
        """Atomically creates ``path`` with ``data`` unless it already exists.

        Safe across processes and hosts (see the module docstring for each store). Readers see
        the complete content or no file.

        Returns:
            True if this call created the file; False if it already existed (its content is
            left untouched).

        Raises:
            StorageError: the write failed (the outcome is then unknown on object stores), or
                the store offers no atomic create-if-absent.
        """
        p = self.fs_path(path)
        with _errors("create", path):
            if self._local:
                return local_try_create(p, bytes(data))
            if self._protocol == "memory":
                with _MEMORY_LOCK:
                    if self.fs.exists(p):
                        return False
                    self.fs.pipe_file(p, bytes(data))
                    return True
            if not self._supports_conditional_put():
                raise StorageError(
                    f"Cannot atomically create {path!r}: the {self._protocol}:// file system has no "
                    "known conditional write, and check-then-write can let two concurrent commits "
                    "both succeed and lose data. Use local disk or S3, or create the FileIO with "
                    "conditional_put=True if this store's pipe_file(mode='create') is atomic "
                    "or all writers share an external lock."
                )
            try:
                self._conditional_fs().pipe_file(p, bytes(data), mode="create")
            except FileExistsError:
                return False
            return True

    def open_output(self, path: str) -> IO[bytes]:
        """Opens a file for streaming binary writes (not atomic: the file appears while written).

        Meant for data files, which no reader looks at before a snapshot references them.
        """
        p = self.fs_path(path)
        with _errors("open for writing", path):
            if self._local:
                os.makedirs(os.path.dirname(p), exist_ok=True)
                return open(p, "wb")
            return self.fs.open(p, "wb")

    # ------------------------------------------------------------------------------ listing

    def list_dir(self, path: str) -> list[FileStatus]:
        """Lists the direct children of a directory; a missing directory (or a file) gives []."""
        p = self.fs_path(path)
        with _errors("list", path):
            if self._local:
                try:
                    entries = list(os.scandir(p))
                except (FileNotFoundError, NotADirectoryError):
                    return []
                out = []
                for e in entries:
                    try:
                        out.append(_local_status(join(path, e.name), e))
                    except FileNotFoundError:
                        continue  # removed while listing (another writer's temp file)
                return out
            self.fs.invalidate_cache(p)
            try:
                infos = self.fs.ls(p, detail=True)
            except (FileNotFoundError, NotADirectoryError):
                return []
            out = []
            for info in infos:
                rel = _relative(p, info["name"])
                if rel:
                    out.append(_remote_status(join(path, rel), info))
            return out

    def list_files_recursive(self, path: str) -> list[FileStatus]:
        """Lists every file (not directory) below ``path``; a missing directory gives []."""
        p = self.fs_path(path)
        with _errors("list", path):
            if self._local:
                out = []
                for dirpath, _dirs, files in os.walk(p):
                    rel_dir = os.path.relpath(dirpath, p)
                    for name in files:
                        rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                        full = os.path.join(dirpath, name)
                        try:
                            st = os.stat(full)
                        except FileNotFoundError:  # deleted while we walked
                            continue
                        out.append(
                            FileStatus(join(path, rel), st.st_size, False, st.st_mtime_ns // 1_000_000)
                        )
                return out
            self.fs.invalidate_cache(p)
            try:
                found = self.fs.find(p, detail=True, withdirs=False)
            except FileNotFoundError:
                return []
            return [
                _remote_status(join(path, rel), info)
                for name, info in found.items()
                if (rel := _relative(p, name)) and info.get("type") != "directory"
            ]

    # --------------------------------------------------------------------------- mutations

    def delete(self, path: str, missing_ok: bool = True) -> None:
        """Deletes one file.

        Raises:
            FileNotFoundError: the file is missing and ``missing_ok`` is False.
            StorageError: the delete failed (e.g. ``path`` is a local directory; use
                :meth:`delete_dir`).
        """
        p = self.fs_path(path)
        try:
            with _errors("delete", path):
                if self._local:
                    os.unlink(p)
                else:
                    # Object-store deletes of missing keys succeed silently: only pay for an
                    # existence check when the caller wants to hear about it.
                    if not missing_ok and not self.fs.exists(p):
                        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
                    self.fs.rm_file(p)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def delete_dir(self, path: str, recursive: bool = True) -> None:
        """Deletes a directory (a missing one is fine).

        Args:
            path: the directory.
            recursive: if False, the directory must be empty (else StorageError).
        """
        p = self.fs_path(path)
        try:
            with _errors("delete directory", path):
                if self._local:
                    if recursive:
                        shutil.rmtree(p)
                    else:
                        os.rmdir(p)
                elif recursive:
                    self.fs.rm(p, recursive=True)
                else:
                    self.fs.invalidate_cache(p)
                    if self.fs.ls(p):
                        raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), path)
                    self.fs.rmdir(p)
        except FileNotFoundError:
            pass

    def rename(self, src: str, dst: str) -> bool:
        """Moves ``src`` to ``dst`` unless ``dst`` exists.

        On local disk files are moved with link + unlink (atomic no-replace across processes).
        Object stores have no rename: with a conditional PUT a file is copied by create-if-absent
        and then deleted (atomic for ``dst``, not a single step); otherwise it is
        check-then-move and only safe for a single writer.

        Returns:
            True if moved; False if ``dst`` already existed (nothing changed).

        Raises:
            FileNotFoundError: ``src`` does not exist.
        """
        ps, pd = self.fs_path(src), self.fs_path(dst)
        with _errors("rename", f"{src} -> {dst}"):
            if self._local:
                return local_rename(ps, pd, src)
            if not self.fs.exists(ps):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), src)
            if self._protocol == "memory":
                with _MEMORY_LOCK:
                    if self.fs.exists(pd):
                        return False
                    self.fs.mv(ps, pd, recursive=True)
                    return True
            if self._supports_conditional_put() and not self.fs.isdir(ps):
                if not self.try_create(dst, self.fs.cat_file(ps)):
                    return False
                self.fs.rm_file(ps)
                return True
            if self.fs.exists(pd):
                return False
            self.fs.mv(ps, pd, recursive=True)
            return True

    def link_or_copy(self, src: str, dst: str) -> None:
        """Makes ``dst`` a new file with the content of ``src``, as cheaply as the store allows.

        Used to give an existing, immutable data file a second name (a new identity in Paimon's
        history, see :mod:`engine.meta.reidentify`). Local disk: a hard link (no bytes copied;
        a copy where the file system has no hard links). Object stores: the file system's copy,
        which on S3 is a server-side copy. ``memory://``: a copy.

        Raises:
            FileNotFoundError: ``src`` does not exist.
            StorageError: ``dst`` exists already (nothing changed), or any other failure
                (``dst`` may then exist partly; callers delete it).
        """
        ps, pd = self.fs_path(src), self.fs_path(dst)
        with _errors("link", f"{src} -> {dst}"):
            if self._local:
                try:
                    os.link(ps, pd)
                except FileNotFoundError:
                    if not os.path.exists(ps):
                        raise
                    os.makedirs(os.path.dirname(pd), exist_ok=True)
                    os.link(ps, pd)
                except OSError as e:
                    if e.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS):
                        raise
                    tmp = f"{pd}.{os.getpid()}.copy.tmp"
                    shutil.copyfile(ps, tmp)
                    try:
                        os.link(tmp, pd)  # no-replace, like the link it stands in for
                    finally:
                        unlink_quietly(tmp)
                return
            if not self.fs.exists(ps):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), src)
            if self.fs.exists(pd):
                raise OSError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
            self.fs.copy(ps, pd)

    def mkdirs(self, path: str) -> None:
        """Creates a directory and its parents (a no-op on stores without directories)."""
        p = self.fs_path(path)
        with _errors("create directory", path):
            if self._local:
                os.makedirs(p, exist_ok=True)
            else:
                self.fs.makedirs(p, exist_ok=True)

    def mark_directory(self, path: str) -> None:
        """Make an (empty) directory exist. On object stores this writes the conventional
        zero-byte ``<path>/`` marker (as Hadoop's S3A does), so an empty database is listed."""
        if self._local or self.protocol == "memory":
            self.mkdirs(path)
            return
        p = self.fs_path(path).rstrip("/") + "/"
        with _errors("create directory", path):
            if not self.fs.exists(p.rstrip("/")):
                self.fs.pipe_file(p, b"")

    def _supports_conditional_put(self) -> bool:
        if self._conditional_put is not None:
            return self._conditional_put
        return bool(self._accepted & _CONDITIONAL_PUT_PROTOCOLS)


# ----------------------------------------------------------------------------------- helpers


@contextmanager
def _errors(action: str, path: str) -> Iterator[None]:
    """Maps I/O failures to the module's contract: FileNotFoundError stays, the rest StorageError."""
    try:
        yield
    except DyntableError:
        raise
    except (OSError, ValueError) as e:
        raise _mapped(e, action, path) from e


def _mapped(e: OSError | ValueError, action: str, path: str) -> Exception:
    """The exception :func:`_errors` raises for ``e``."""
    if isinstance(e, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, f"No such file or directory (while trying to {action})", path)
    if isinstance(e, OSError):
        return StorageError(
            f"Could not {action} {path!r}: {e}. Check the path, permissions and that the storage "
            "is reachable; transient failures can be retried."
        )
    return InvalidArgumentError(f"Invalid path {path!r} (while trying to {action}): {e}")


def _relative(root: str, name: str) -> str:
    """``name`` relative to ``root`` (both scheme-less fsspec paths); '' for root itself."""
    root = root.rstrip("/")
    name = name.rstrip("/")
    if name == root:
        return ""
    if root and name.startswith(root + "/"):
        return name[len(root) + 1 :]
    if not root:
        return name.lstrip("/")
    return name.rsplit("/", 1)[-1]  # defensive: a store that reports bare names


def _local_status(path: str, entry: os.DirEntry[str]) -> FileStatus:
    st = entry.stat()
    is_dir = entry.is_dir()
    return FileStatus(path, 0 if is_dir else st.st_size, is_dir, st.st_mtime_ns // 1_000_000)


def _remote_status(path: str, info: Mapping[str, Any]) -> FileStatus:
    is_dir = info.get("type") == "directory"
    return FileStatus(path, 0 if is_dir else int(info.get("size") or 0), is_dir, _mtime_ms(info))


def _mtime_ms(info: Mapping[str, Any]) -> int | None:
    """Modification time from an fsspec info dict; stores name it differently."""
    for key in ("LastModified", "mtime", "last_modified", "modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=_dt.UTC)
            return int(value.timestamp() * 1000)
        if isinstance(value, int | float):
            return int(value * 1000)
        if isinstance(value, str):
            try:
                return int(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
    return None
