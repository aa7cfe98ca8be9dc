"""Paimon's format tables: a directory of CSV, Parquet, JSON or ORC files registered as a table.

A format table has no snapshots, manifests or buckets: its schema file (``schema/schema-0``, with
the options ``type = format-table`` and ``file.format``) says what the files hold, and the table
is whatever files lie under its location, partitioned by Hive-style ``key=value`` directories.
This module is the engine's whole model of one: the value (``FormatTable``), the options it is
created with (Paimon's checks), where its data files are, and how a write's staged files replace
the table's (a whole table, a partition prefix, or the partitions a dynamic overwrite wrote).

Readers and writers of the files themselves are the SQL engine's (Spark's own CSV/Parquet/JSON/ORC
sources); nothing here reads a row. Listing skips hidden names (``_`` or ``.`` first, as Paimon's
``PartitionPathUtils.isHiddenName``: writers' staging trees, ``_SUCCESS``) and the ``schema``
directory of the table's own metadata.

Everything Paimon refuses on a format table (time travel, row-level changes, procedures, being
read as a data table) is refused with :class:`FormatTableError`, SQLSTATE 0A000.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from posixpath import join

from engine.errors import InvalidArgumentError, UnsupportedTableError
from engine.identifier import Identifier
from engine.io import FileIO
from engine.schema import TableSchema
from engine.schema_changes import RemoveOption, SchemaChange, SetOption, UpdateComment
from engine.types import DataField

TYPE_KEY = "type"
FORMAT_TABLE_TYPE = "format-table"
FORMAT_KEY = "file.format"
FORMATS = ("csv", "parquet", "json", "orc")
SCHEMA_DIR = "schema"
STAGING_PREFIX = "_dyntable-staging-"
DEFAULT_PARTITION = "__DEFAULT_PARTITION__"

# Paimon's CSV/JSON option → the Spark reader/writer option with the same meaning.
_SPARK_OPTIONS = {
    "csv.field-delimiter": "sep",
    "csv.line-delimiter": "lineSep",
    "csv.quote-character": "quote",
    "csv.escape-character": "escape",
    "csv.include-header": "header",
    "csv.null-literal": "nullValue",
    "csv.mode": "mode",
    "json.line-delimiter": "lineSep",
    "format-table.file.compression": "compression",
    "file.compression": "compression",
}
# Spark's own spellings are taken as they are (Paimon's Spark catalog accepts both).
# (Spark's option names are case-insensitive.)
SPARK_NATIVE = frozenset({"sep", "linesep", "quote", "escape", "header", "nullvalue", "mode", "compression",
                          "delimiter"})
_NOT_EMPTY = ("csv.field-delimiter", "csv.line-delimiter", "csv.quote-character", "csv.escape-character",
              "json.line-delimiter")


class FormatTableError(UnsupportedTableError):
    """An operation Paimon does not offer on a format table (SQLSTATE 0A000)."""


def is_format_table(options: Mapping[str, str]) -> bool:
    """Whether a schema's options make it a format table (``type = format-table``)."""
    return options.get(TYPE_KEY, "").lower() == FORMAT_TABLE_TYPE


def format_table_options(file_format: str, options: Mapping[str, str],
                         primary_keys: Sequence[str] = ()) -> dict[str, str]:
    """The options a new format table is stored with, checked as Paimon's catalog checks them."""
    fmt = file_format.lower()
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"format tables hold {', '.join(FORMATS)} files, not '{file_format}'")
    if primary_keys or options.get("primary-key"):
        raise InvalidArgumentError("Cannot define primary-key for format table.")
    for key in _NOT_EMPTY:
        if key in options and not options[key]:
            raise InvalidArgumentError(f"{key} must not be empty.")
    return {**options, TYPE_KEY: FORMAT_TABLE_TYPE, FORMAT_KEY: fmt}


def refuse(table: str, operation: str) -> FormatTableError:
    """The error for an operation Paimon does not offer on a format table."""
    return FormatTableError(
        f"'{table}' is a format table (a directory of files, without snapshots): {operation} is not"
        " supported on it, as in Paimon")


def stored_options(options: Mapping[str, str]) -> dict[str, str]:
    """A format table's options as stored: the schema loader's ``bucket = -1`` (what a data table's
    schema file without ``bucket`` means) is no option of a format table, which has no buckets."""
    return {k: v for k, v in options.items() if not (k == "bucket" and v == "-1")}


def alter_format_table(name: str, latest: TableSchema, changes: Sequence[SchemaChange]) -> TableSchema:
    """The next schema version of a format table: options set or removed, the comment changed.
    Column changes are refused: the files already written keep their columns."""
    options = stored_options(latest.options)
    comment = latest.comment
    for change in changes:
        if isinstance(change, SetOption):
            if change.key in (TYPE_KEY, FORMAT_KEY):
                raise refuse(name, f"changing '{change.key}'")
            options[change.key] = change.value
        elif isinstance(change, RemoveOption):
            if change.key in (TYPE_KEY, FORMAT_KEY):
                raise refuse(name, f"removing '{change.key}'")
            options.pop(change.key, None)
        elif isinstance(change, UpdateComment):
            comment = change.comment
        else:
            raise refuse(name, f"ALTER TABLE {type(change).__name__}")
    format_table_options(options[FORMAT_KEY], options)
    return replace(latest, id=latest.id + 1, options=options, comment=comment,
                   time_millis=int(time.time() * 1000))


@dataclass(frozen=True)
class FormatTable:
    """One format table: where its files are, their format, its columns and partition keys."""

    identifier: Identifier
    location: str
    format: str
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...]
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @property
    def name(self) -> str:
        return self.identifier.full_name

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def reader_options(self) -> dict[str, str]:
        """The Spark reader/writer options of the table's options (Paimon's keys translated)."""
        out: dict[str, str] = {}
        for key, value in self.options.items():
            if key in _SPARK_OPTIONS:
                out[_SPARK_OPTIONS[key]] = value
            elif key.lower() in SPARK_NATIVE:
                out[key] = value
        if self.format == "parquet" and out.get("compression", "").lower() == "none":
            out["compression"] = "uncompressed"  # Spark's Parquet writer spells "none" so
        return out

    def data_files(self, io: FileIO) -> list[str]:
        """Every data file of the table (hidden names, staging trees and ``schema/`` skipped)."""
        return _files_under(io, self.location, top=True) if io.exists(self.location) else []

    def partition_dirs(self, io: FileIO) -> list[dict[str, str]]:
        """The partitions holding at least one data file, as ``{key: value text}`` in key order."""
        out: list[dict[str, str]] = []
        seen: set[tuple[str, ...]] = set()
        prefix = self.location.rstrip("/") + "/"
        for path in self.data_files(io):
            parts = path[len(prefix):].split("/")[:-1][: len(self.partition_keys)]
            if len(parts) < len(self.partition_keys) or any("=" not in p for p in parts):
                continue
            spec = {p.split("=", 1)[0]: _unescape(p.split("=", 1)[1]) for p in parts}
            key = tuple(spec.values())
            if key not in seen:
                seen.add(key)
                out.append(spec)
        return sorted(out, key=lambda s: tuple(s.values()))

    def staging_dir(self) -> str:
        """A fresh hidden directory under the location for one write's files (no reader sees it)."""
        return join(self.location, f"{STAGING_PREFIX}{uuid.uuid4().hex}")

    def commit_staged(self, io: FileIO, staged: str, overwrite: str = "none",
                      static: Mapping[str, str] | None = None) -> int:
        """Moves a write's staged files into the table; returns how many files moved.

        ``overwrite`` (Paimon's ``FormatTableCommit``): ``none`` appends; ``static`` first deletes
        the data under the ``static`` partition prefix (the whole table without one) and leaves
        its directory; ``dynamic`` first deletes the partitions the staged files belong to.
        Paths inside ``staged`` are relative to the table location."""
        moved = _files_under(io, staged, top=False)
        base = staged.rstrip("/") + "/"
        relative = [p[len(base):] for p in moved]
        if overwrite == "static":
            prefix = "/".join(f"{k}={_escape(str(v))}" for k, v in (static or {}).items())
            root = join(self.location, prefix) if prefix else self.location
            for path in _files_under(io, root, top=not prefix) if io.exists(root) else []:
                io.delete(path)
            if prefix:
                io.mkdirs(root)  # the partition exists after an overwrite, even an empty one (Paimon)
        elif overwrite == "dynamic":
            dirs = {"/".join(r.split("/")[: len(self.partition_keys)]) for r in relative}
            for d in dirs:
                root = join(self.location, d) if d else self.location
                if io.exists(root):
                    for path in _files_under(io, root, top=not d):
                        io.delete(path)
        for rel, path in zip(relative, moved, strict=True):
            target = join(self.location, rel)
            parent = target.rsplit("/", 1)[0]
            io.mkdirs(parent)
            io.rename(path, target)
        io.delete_dir(staged, recursive=True)
        return len(moved)


def _files_under(io: FileIO, root: str, *, top: bool) -> list[str]:
    out: list[str] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        for status in io.list_dir(directory):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            metadata = top and directory == root and name == SCHEMA_DIR and status.is_dir
            if name.startswith(("_", ".")) or metadata:
                continue
            if status.is_dir:
                pending.append(status.path)
            else:
                out.append(status.path)
    return sorted(out)


def _escape(value: str) -> str:
    # Hive's partition path escaping for the characters that would break a path.
    return "".join(f"%{ord(c):02X}" if c in '"#%\'*/:=?\\\x7f{[]^' or ord(c) < 32 else c for c in value)


def _unescape(text: str) -> str:
    import urllib.parse

    return urllib.parse.unquote(text)
