"""The only module that knows a table's directory layout (Paimon's, branch-aware).

```
<table>/schema/schema-N            per branch (branch/branch-<b>/schema/...)
<table>/snapshot/snapshot-N, EARLIEST, LATEST     per branch
<table>/tag/tag-<name>, consumer/consumer-<id>    per branch
<table>/manifest/manifest-<uuid>-<n>, manifest-list-<uuid>-<n>   shared by all branches
<table>/<k1>=<v1>/.../bucket-<N>/data-<uuid>-<n>.parquet          shared by all branches
<table>/<dir>/<k1>=<v1>/.../bucket-<N>/...    the same, with data-file.path-directory = <dir>
```
Every database, table, branch, tag and consumer name passes ``engine.identifier.validate_name``
before it becomes a path component here (or in the catalog), so no name can leave its directory.
Partition directory strings follow Java Paimon byte for byte (legacy ``toString`` value
formatting, Hive escaping), because readers derive a data file's path from the partition row.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid
from collections.abc import Sequence
from typing import cast

from engine.errors import InvalidArgumentError, UnsupportedTableError
from engine.identifier import MAIN_BRANCH, validate_name
from engine.meta.binary_row import timestamp_epoch_nanos
from engine.types import DataType, TypeRoot

_EPOCH = dt.datetime(1970, 1, 1)

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

# Characters Hive/Paimon escape as %XX in partition path components.
_ESCAPED = frozenset(
    [chr(c) for c in range(0x01, 0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "}", "[", "]", "^"]
)


def validate_branch_name(name: str) -> None:
    """A name a new branch may take: a safe path component (``validate_name``) that is not ``main``."""
    validate_name("branch", name, new=True)


def escape_path_name(text: str) -> str:
    """Hive-style escaping of one path component (``PartitionPathUtils.escapePathName``)."""
    if not text:
        raise InvalidArgumentError("a partition path component must not be empty")
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape_path_name(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%" and i + 3 <= len(text):
            try:
                out.append(chr(int(text[i + 1 : i + 3], 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(c)
        i += 1
    return "".join(out)


def java_local_time(hour: int, minute: int, second: int, nano: int) -> str:
    """``LocalTime.toString``: HH:mm, then :ss only if needed, then 3, 6 or 9 fraction digits."""
    text = f"{hour:02d}:{minute:02d}"
    if second or nano:
        text += f":{second:02d}"
        if nano:
            if nano % 1_000_000 == 0:
                text += f".{nano // 1_000_000:03d}"
            elif nano % 1000 == 0:
                text += f".{nano // 1000:06d}"
            else:
                text += f".{nano:09d}"
    return text


def partition_value_string(value: object, dtype: DataType, default_name: str, legacy: bool = True) -> str:
    """The unescaped directory string of one partition value, as Java Paimon computes it."""
    if value is None:
        return default_name
    root = dtype.root
    if root is TypeRoot.BOOLEAN:
        text = "true" if value else "false"
    elif root is TypeRoot.DATE:
        assert isinstance(value, dt.date)
        text = str((value - dt.date(1970, 1, 1)).days) if legacy else value.isoformat()
    elif root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        # Nanosecond values come as numpy.datetime64 or pandas.Timestamp: keep every digit.
        seconds, nanos = divmod(timestamp_epoch_nanos(value, dtype, 0), 1_000_000_000)
        value = _EPOCH + dt.timedelta(seconds=seconds)
        clock = java_local_time(value.hour, value.minute, value.second, nanos)
        text = f"{value.date().isoformat()}T{clock}" if legacy else str(value)
    elif root is TypeRoot.TIME:
        assert isinstance(value, dt.time)
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        text = str(millis) if legacy else value.isoformat()
    elif root is TypeRoot.DECIMAL:
        text = format(decimal.Decimal(cast(decimal.Decimal, value)), "f")
    elif root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        text = repr(float(cast(float, value)))
    elif isinstance(value, bytes):
        text = value.hex()
    else:
        text = str(value)
    if not text.strip():
        return default_name
    return text


def partition_path(
    keys: Sequence[str],
    values: Sequence[object],
    types: Sequence[DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    legacy: bool = True,
) -> str:
    """``k1=v1/k2=v2`` (escaped) for one partition; '' for an unpartitioned table."""
    parts = []
    for key, value, dtype in zip(keys, values, types, strict=True):
        text = partition_value_string(value, dtype, default_name, legacy)
        parts.append(f"{escape_path_name(key)}={escape_path_name(text)}")
    return "/".join(parts)


def join(*parts: str) -> str:
    """Join path parts with '/', keeping URL schemes intact and skipping empty parts."""
    result = ""
    for part in parts:
        if not part:
            continue
        result = part if not result else result.rstrip("/") + "/" + part.lstrip("/")
    return result


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# URL schemes naming the same file system (Hadoop's names beside fsspec's).
_SCHEME_FAMILIES = ({"s3", "s3a", "s3n"}, {"gs", "gcs"}, {"abfs", "az"}, {"file", "local"})
EXTERNAL_PATHS_FEATURE = "external data paths (_EXTERNAL_PATH, data-file.external-paths, Paimon 1.1)"


def _same_fs(a: str, b: str) -> bool:
    return a == b or any(a in f and b in f for f in _SCHEME_FAMILIES)


def resolve_external_path(root: str, path: str) -> str:
    """An external file path as Paimon writes it (``_EXTERNAL_PATH`` of a data or index file),
    in the style of the table root ``root``, so that reads, existence checks and path
    comparisons (orphan cleanup) see the one file it names.

    Paimon (Java and pypaimon) writes Hadoop URIs: ``file:/abs/...`` (one slash), and also
    ``file:///abs/...``, a plain absolute path, or an object-store URI (``s3://bucket/key``,
    ``oss://...``). A local table takes the local forms; an object-store table takes URIs of its
    own file system (``s3a://`` for an ``s3://`` table, written with the root's scheme).

    Raises:
        UnsupportedTableError: a path of another file system than the table's, a relative path,
            or a ``file://host/...`` URI naming a host; nothing can act on such a file safely.
    """
    m = _SCHEME.match(path)
    r = _SCHEME.match(root)
    root_scheme = r.group(1).lower() if r else "file"
    scheme = m.group(1).lower() if m else None
    if root_scheme in ("file", "local"):
        local: str | None = None
        if scheme is None and path.startswith("/"):
            local = path
        elif scheme in ("file", "local"):
            rest = path[m.end():] if m else path
            if rest.startswith("//"):  # file://<authority>/abs: only an empty or local authority
                authority, slash, tail = rest[2:].partition("/")
                if authority in ("", "localhost") and slash:
                    local = "/" + tail
            elif rest.startswith("/"):
                local = rest
        if local is not None:
            local = "/" + local.lstrip("/")
            return f"file://{local}" if root.startswith("file://") else local
    elif scheme is not None and _same_fs(scheme, root_scheme) and m is not None:
        return root[: r.end()] + path[m.end():] if r else path
    raise UnsupportedTableError(
        f"cannot resolve the external file path {path!r} of table {root}: dyntable reads a table's "
        f"{EXTERNAL_PATHS_FEATURE} only on the table's own file system "
        f"({root_scheme}), as an absolute path or a URI of that file system"
    )


class FileNamer:
    """Hands out unique file names: one random UUID per namer, then a counter (Paimon's scheme).

    A distributed write gives every task the job's UUID and its own counter range, so all files
    of a job share one recognisable token (an aborted job can find and delete them).
    """

    def __init__(self, token: str | None = None, first: int = 0) -> None:
        self._uuid = token or str(uuid.uuid4())
        self._counter = first

    @property
    def token(self) -> str:
        return self._uuid

    def _next(self) -> int:
        n = self._counter
        self._counter += 1
        return n

    def data_file(self, prefix: str = "data-", extension: str = "parquet") -> str:
        return f"{prefix}{self._uuid}-{self._next()}.{extension}"

    def manifest(self) -> str:
        return f"manifest-{self._uuid}-{self._next()}"

    def manifest_list(self) -> str:
        return f"manifest-list-{self._uuid}-{self._next()}"


class TablePaths:
    """Paths of one table, seen from one branch (metadata per branch, data and manifests shared)."""

    def __init__(self, root: str, branch: str = MAIN_BRANCH, data_dir: str | None = None) -> None:
        if branch != MAIN_BRANCH:
            validate_name("branch", branch)
        self.root = root.rstrip("/")
        self.branch = branch
        #: ``data-file.path-directory``: the directory (relative to the root) holding the partition and
        #: bucket directories, as Paimon's FileStorePathFactory places them; None: the root itself.
        self.data_dir = data_dir.strip("/") if data_dir else None
        self.branch_root = (
            self.root if branch == MAIN_BRANCH else join(self.root, "branch", f"branch-{branch}")
        )

    def for_branch(self, branch: str) -> TablePaths:
        return TablePaths(self.root, branch, self.data_dir)

    def with_data_dir(self, data_dir: str | None) -> TablePaths:
        """These paths with the data files under ``data_dir`` (``data-file.path-directory``)."""
        return TablePaths(self.root, self.branch, data_dir)

    @property
    def data_root(self) -> str:
        """The directory holding the partition and bucket directories."""
        return join(self.root, self.data_dir) if self.data_dir else self.root

    # per-branch metadata
    @property
    def schema_dir(self) -> str:
        return join(self.branch_root, "schema")

    @property
    def snapshot_dir(self) -> str:
        return join(self.branch_root, "snapshot")

    @property
    def tag_dir(self) -> str:
        return join(self.branch_root, "tag")

    @property
    def consumer_dir(self) -> str:
        return join(self.branch_root, "consumer")

    @property
    def branch_dir(self) -> str:
        return join(self.root, "branch")

    def schema_file(self, schema_id: int) -> str:
        return join(self.schema_dir, f"schema-{schema_id}")

    def snapshot_file(self, snapshot_id: int) -> str:
        return join(self.snapshot_dir, f"snapshot-{snapshot_id}")

    def tag_file(self, name: str) -> str:
        return join(self.tag_dir, f"tag-{validate_name('tag', name)}")

    def consumer_file(self, consumer_id: str) -> str:
        return join(self.consumer_dir, f"consumer-{validate_name('consumer', consumer_id)}")

    @property
    def latest_hint(self) -> str:
        return join(self.snapshot_dir, "LATEST")

    @property
    def earliest_hint(self) -> str:
        return join(self.snapshot_dir, "EARLIEST")

    # shared data and manifests
    @property
    def manifest_dir(self) -> str:
        return join(self.root, "manifest")

    def manifest_file(self, name: str) -> str:
        return join(self.manifest_dir, name)

    def relative_bucket_dir(self, partition_dir: str, bucket: int) -> str:
        """A bucket's directory relative to the table root (Paimon's ``relativeBucketPath``: below
        ``data-file.path-directory``, then the partition); external paths mirror it."""
        name = "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"
        return join(self.data_dir or "", partition_dir, name)

    def bucket_dir(self, partition_dir: str, bucket: int) -> str:
        return join(self.root, self.relative_bucket_dir(partition_dir, bucket))

    def data_file(self, partition_dir: str, bucket: int, file_name: str,
                  external_path: str | None = None) -> str:
        """Where a data file lives: its ``_EXTERNAL_PATH`` when it has one, else its bucket directory."""
        if external_path:
            return self.external_file(external_path)
        return join(self.bucket_dir(partition_dir, bucket), file_name)

    def extra_file(self, partition_dir: str, bucket: int, name: str, external_path: str | None = None) -> str:
        """Where an extra file (a file index) of a data file lives: beside the data file, also when
        that is at an external path (Paimon's ``toAlignedPath``)."""
        if external_path:
            return join(self.external_file(external_path).rsplit("/", 1)[0], name)
        return join(self.bucket_dir(partition_dir, bucket), name)

    def external_file(self, path: str) -> str:
        """An ``_EXTERNAL_PATH`` in this table's path style (:func:`resolve_external_path`)."""
        return resolve_external_path(self.root, path)


def parse_versioned_id(name: str, prefix: str) -> int | None:
    """``snapshot-12`` → 12; anything else (temp files, hints) → None."""
    if not name.startswith(prefix):
        return None
    suffix = name[len(prefix) :]
    return int(suffix) if suffix.isdigit() else None
