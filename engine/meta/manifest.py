"""Manifest entries, manifest-list entries and their exact Paimon Avro serde; entry merging.

One job: convert between Paimon's manifest / manifest-list Avro object-container files
(``docs/design/format-notes.md`` §5–§6) and frozen records, and apply the ADD/DELETE merge rule (§6.5).

Invariants:

* Writing uses the schemas of :mod:`engine.meta.avro_schemas` unchanged: every DataFileMeta
  field 0–19 and every manifest-list field 0–12 is written (nullable ones as null), ``_VERSION``
  is always 2, unions are null-first; ``zstd`` (the Paimon default) becomes Avro ``zstandard``.
* Reading matches fields by name, so files of older writers (fields missing → None), newer
  writers (extra fields ignored) and pypaimon all load; a top-level ``["null", record]`` union
  (very old Java writers) is accepted. Anything undecodable raises
  :class:`~engine.errors.CorruptMetadataError`, never a fastavro/zstd exception.
* Reading is a plain ``fastavro.reader`` loop that builds records without per-field checks: it
  runs once per live file on every scan plan, so it must stay cheap (≥ 50K entries/s).
* Partition, key and min/max values are opaque serialized BinaryRows (``bytes``); equality of
  partitions is byte equality, exactly as in Java's merge.
* Records are frozen, hashable and picklable; list-valued fields are tuples.

An Avro file cut exactly at a block boundary still decodes (with fewer entries): callers that
know the expected byte size (``_FILE_SIZE``, ``*ManifestListSize``) should compare it first.
"""

from __future__ import annotations

import functools
import gc
import importlib.util
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from typing import Any, ClassVar

import fastavro

from engine.errors import CorruptMetadataError, DyntableError, InvalidArgumentError
from engine.meta.avro_container import RecordEncodings, write_container
from engine.meta.avro_schemas import (
    FORMAT_IDENTIFIER,
    manifest_entry_schema,
    manifest_file_meta_schema,
)

#: A serialized arity-0 BinaryRow: 4-byte arity 0 + 8-byte null-bit/header word (§6.1, §7.5).
EMPTY_ROW_BYTES = bytes(12)

_MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema(manifest_entry_schema())
_MANIFEST_FILE_META_SCHEMA = fastavro.parse_schema(manifest_file_meta_schema())
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


class FileKind(IntEnum):
    """Whether a manifest entry adds or deletes a file (``_KIND``)."""

    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    """Whether a data file was written by a writer or by compaction (``_FILE_SOURCE``)."""

    APPEND = 0
    COMPACT = 1


# Dict lookups instead of enum calls: this is on the per-entry read path.
_KIND_BY_CODE = {k.value: k for k in FileKind}
_SOURCE_BY_CODE: dict[int | None, FileSource | None] = {s.value: s for s in FileSource}
_SOURCE_BY_CODE[None] = None


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Per-column min / max (serialized BinaryRows) and null counts (§6.1)."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    #: No statistics: arity-0 min and max rows and no null counts.
    EMPTY: ClassVar[SimpleStats]


SimpleStats.EMPTY = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """Metadata of one data file (the ``_FILE`` record, §6.4)."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    delete_row_count: int | None = None
    embedded_file_index: bytes | None = None
    file_source: FileSource | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def upgrade(self, level: int) -> DataFileMeta:
        """The same file moved to a higher LSM level without rewriting it (compaction upgrade).

        Args:
            level: The new level; must be above the current one.

        Returns:
            A copy with only ``level`` changed.

        Raises:
            InvalidArgumentError: ``level`` is not above the current level.
        """
        if level <= self.level:
            raise InvalidArgumentError(
                f"cannot upgrade {self.file_name} from level {self.level} to level {level}: "
                "an upgrade must move a file to a higher level"
            )
        return replace(self, level=level)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ADD or DELETE of a data file in a (partition, bucket) (§6.3)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[Any, ...]:
        """The merge key of §6.5: which ADD a DELETE cancels."""
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_file_index,
            f.external_path,
        )


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as listed in a manifest list (§6.2)."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


# ---------------------------------------------------------------------------------------------
# Codecs

_CODEC_ALIASES = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "null": "null",
    "none": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "bzip2": "bzip2",
    "xz": "xz",
}


@functools.cache
def _module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a missing parent package ("backports")
        return False


# Which libraries fastavro needs per codec (>= 1.13 uses backports.zstd / compression.zstd).
_CODEC_LIBRARIES = {
    "zstandard": ("compression.zstd", "backports.zstd"),
    "snappy": ("cramjam", "snappy"),
    "lz4": ("lz4",),
}


def _require_codec_library(avro_codec: str) -> None:
    libs = _CODEC_LIBRARIES.get(avro_codec)
    if libs is not None and not any(_module_available(m) for m in libs):
        raise DyntableError(
            f"Avro codec {avro_codec!r} needs one of the Python packages {', '.join(libs)}: "
            "install it (pip install backports.zstd for zstandard, cramjam for snappy)"
        )


def _avro_codec(codec: str) -> str:
    """Paimon's ``manifest.compression`` value → fastavro codec name."""
    name = _CODEC_ALIASES.get(str(codec).lower())
    if name is None:
        raise InvalidArgumentError(
            f"unsupported manifest compression {codec!r}: use one of zstd, none, deflate, snappy, bzip2, xz"
        )
    if name == "snappy" and not any(_module_available(m) for m in _CODEC_LIBRARIES["snappy"]):
        raise InvalidArgumentError(
            "manifest compression 'snappy' needs the cramjam (or python-snappy) package: "
            "install it or use zstd"
        )
    _require_codec_library(name)
    return name


# ---------------------------------------------------------------------------------------------
# Manifest files


def _stats_record(s: SimpleStats) -> dict[str, Any]:
    nc = s.null_counts
    return {
        "_MIN_VALUES": s.min_values,
        "_MAX_VALUES": s.max_values,
        "_NULL_COUNTS": None if nc is None else list(nc),
    }


def _opt_list(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)


def _entry_record(e: ManifestEntry) -> dict[str, Any]:
    f = e.file
    return {
        "_VERSION": FORMAT_IDENTIFIER,
        "_KIND": int(e.kind),
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_TOTAL_BUCKETS": e.total_buckets,
        "_FILE": {
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_MIN_KEY": f.min_key,
            "_MAX_KEY": f.max_key,
            "_KEY_STATS": _stats_record(f.key_stats),
            "_VALUE_STATS": _stats_record(f.value_stats),
            "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
            "_SCHEMA_ID": f.schema_id,
            "_LEVEL": f.level,
            "_EXTRA_FILES": list(f.extra_files),
            "_CREATION_TIME": f.creation_time_millis,
            "_DELETE_ROW_COUNT": f.delete_row_count,
            "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
            "_FILE_SOURCE": None if f.file_source is None else int(f.file_source),
            "_VALUE_STATS_COLS": _opt_list(f.value_stats_cols),
            "_EXTERNAL_PATH": f.external_path,
            "_FIRST_ROW_ID": f.first_row_id,
            "_WRITE_COLS": _opt_list(f.write_cols),
        },
    }


# Base lists repeat the previous snapshot's manifests and merges repeat earlier entries: each is
# encoded once. The bounds keep the encodings and the records they are keyed by to ~10-20 MB:
# a merge rewrites at most manifest.merge-min-count small manifests, and a base list holds every
# manifest of the table (rarely more than a few thousand).
_ENTRY_ENCODINGS: RecordEncodings[ManifestEntry] = RecordEncodings(
    _MANIFEST_ENTRY_SCHEMA, _entry_record, "manifest entries", limit=10_000
)


def write_manifest_entries(entries: Sequence[ManifestEntry], codec: str = "zstd") -> bytes:
    """Encode entries as a Paimon manifest file (Avro OCF, §6.3/§6.4).

    Args:
        entries: The entries, in order.
        codec: Paimon's ``manifest.compression``: zstd (default), none/null, deflate, snappy,
            bzip2 or xz.

    Returns:
        The complete file content.

    Raises:
        InvalidArgumentError: Unknown codec, or an entry whose fields cannot be encoded.
    """
    return write_container(_MANIFEST_ENTRY_SCHEMA, _ENTRY_ENCODINGS.encode_all(entries), _avro_codec(codec))


def _millis(value: Any) -> int | None:
    """``_CREATION_TIME`` as fastavro returns it (aware datetime, or a bare long) → epoch ms."""
    if value is None or type(value) is int:
        return value
    return (value - _EPOCH) // _ONE_MS


def _stats(d: dict[str, Any]) -> SimpleStats:
    mn = d["_MIN_VALUES"]
    mx = d["_MAX_VALUES"]
    nc = d.get("_NULL_COUNTS")
    if not nc and nc is not None and mn == EMPTY_ROW_BYTES and mx == EMPTY_ROW_BYTES:
        return SimpleStats.EMPTY  # the common case for append tables' key stats: no allocation
    return SimpleStats(mn, mx, None if nc is None else tuple(nc))


def _opt_tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def _decode(data: bytes, what: str, build: Any, first: Any = None) -> list[Any]:
    """Run ``build`` over every record (``first``, when given, over the first one instead); any
    decoding failure becomes CorruptMetadataError."""
    # Decoding allocates a few dozen container objects per entry; pausing the cyclic GC for the
    # loop (none of them can form cycles) roughly halves its cost on large manifests.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        reader = fastavro.reader(io.BytesIO(data))
        # A missing codec library is an installation problem, not a corrupt file: say so.
        _require_codec_library(reader.codec)
        if first is None:
            return [build(rec) for rec in reader]
        records = iter(reader)
        for head in records:
            return [first(head), *(build(rec) for rec in records)]
        return []
    except DyntableError:
        raise
    except Exception as e:  # noqa: BLE001 -- fastavro/zstd raise many types on corrupt bytes
        raise CorruptMetadataError(
            f"{what} cannot be decoded ({type(e).__name__}: {e}); the file is truncated or corrupt"
        ) from e
    finally:
        if gc_was_enabled:
            gc.enable()


def _check_version(rec: dict[str, Any]) -> None:
    version = rec.get("_VERSION", FORMAT_IDENTIFIER)
    if version != FORMAT_IDENTIFIER:
        if version == 1:
            raise CorruptMetadataError(
                "manifest written with the legacy format identifier 1 (Paimon < 0.9): "
                "recreate the table with a newer Paimon"
            )
        raise CorruptMetadataError(f"manifest record has unknown format identifier _VERSION={version!r}")


def _entry_from_record(rec: dict[str, Any] | None) -> ManifestEntry:
    if rec is None:
        raise CorruptMetadataError("manifest holds a null record")
    if rec.get("_VERSION") != FORMAT_IDENTIFIER:
        _check_version(rec)
    f = rec["_FILE"]
    get = f.get
    file = DataFileMeta(
        f["_FILE_NAME"],
        f["_FILE_SIZE"],
        f["_ROW_COUNT"],
        f["_MIN_KEY"],
        f["_MAX_KEY"],
        _stats(f["_KEY_STATS"]),
        _stats(f["_VALUE_STATS"]),
        f["_MIN_SEQUENCE_NUMBER"],
        f["_MAX_SEQUENCE_NUMBER"],
        f["_SCHEMA_ID"],
        f["_LEVEL"],
        tuple(f["_EXTRA_FILES"]),
        _millis(get("_CREATION_TIME")),
        get("_DELETE_ROW_COUNT"),
        get("_EMBEDDED_FILE_INDEX"),
        _SOURCE_BY_CODE[get("_FILE_SOURCE")],
        _opt_tuple(get("_VALUE_STATS_COLS")),
        get("_EXTERNAL_PATH"),
        get("_FIRST_ROW_ID"),
        _opt_tuple(get("_WRITE_COLS")),
    )
    return ManifestEntry(
        _KIND_BY_CODE[rec["_KIND"]], rec["_PARTITION"], rec["_BUCKET"], rec["_TOTAL_BUCKETS"], file
    )


def read_manifest_entries(data: bytes) -> list[ManifestEntry]:
    """Decode a Paimon manifest file written by any Paimon ≥ 0.9, Java or pypaimon.

    Args:
        data: The complete file content.

    Returns:
        The entries in file order.

    Raises:
        CorruptMetadataError: The bytes are not a readable manifest (truncated, corrupt, a
            required field missing, an unknown kind or file source, a bad ``_VERSION``).
    """
    return _decode(data, "manifest file", _entry_from_record)


class EntryRef:
    """What deciding which files are in use needs of a manifest entry: no statistics, no keys.

    Exposes the attributes of :class:`ManifestEntry` that reachability reads (``kind``,
    ``partition``, ``bucket``, ``identifier``) and, through ``file`` (itself), those of
    :class:`DataFileMeta` (``file_name``, ``file_size``, ``level``, ``extra_files``,
    ``embedded_file_index``, ``external_path``), so code written for entries takes either.
    """

    __slots__ = ("kind", "partition", "bucket", "file_name", "file_size", "level", "extra_files",
                 "embedded_file_index", "external_path")

    def __init__(self, kind: FileKind, partition: bytes, bucket: int, file_name: str, file_size: int,
                 level: int, extra_files: tuple[str, ...], embedded_file_index: bytes | None,
                 external_path: str | None) -> None:
        self.kind = kind
        self.partition = partition
        self.bucket = bucket
        self.file_name = file_name
        self.file_size = file_size
        self.level = level
        self.extra_files = extra_files
        self.embedded_file_index = embedded_file_index
        self.external_path = external_path

    @property
    def file(self) -> EntryRef:
        return self

    @property
    def identifier(self) -> tuple[Any, ...]:
        """The same merge key as :attr:`ManifestEntry.identifier`."""
        return (self.partition, self.bucket, self.level, self.file_name, self.extra_files,
                self.embedded_file_index, self.external_path)


_FILE_REQUIRED = frozenset({"_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
                            "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID",
                            "_LEVEL", "_EXTRA_FILES"})
_STATS_REQUIRED = frozenset({"_MIN_VALUES", "_MAX_VALUES"})


def _ref_from_record(rec: dict[str, Any] | None) -> EntryRef:
    if rec is None:
        raise CorruptMetadataError("manifest holds a null record")
    if rec.get("_VERSION") != FORMAT_IDENTIFIER:
        _check_version(rec)
    f = rec["_FILE"]
    get = f.get
    if get("_FILE_SOURCE") not in _SOURCE_BY_CODE:
        raise CorruptMetadataError("manifest entry has an unknown file source")
    return EntryRef(
        _KIND_BY_CODE[rec["_KIND"]], rec["_PARTITION"], rec["_BUCKET"], f["_FILE_NAME"], f["_FILE_SIZE"],
        f["_LEVEL"], tuple(f["_EXTRA_FILES"]), get("_EMBEDDED_FILE_INDEX"), get("_EXTERNAL_PATH"),
    )


def _first_ref_from_record(rec: dict[str, Any] | None) -> EntryRef:
    # The checks of _entry_from_record that the lean decode would otherwise skip (a required field
    # missing is a corrupt manifest). fastavro gives every record exactly the writer schema's
    # fields, so checking the first record's fields checks the whole file.
    if rec is not None:
        f = rec.get("_FILE")
        if not (
            isinstance(f, dict)
            and _FILE_REQUIRED <= f.keys()
            and _STATS_REQUIRED <= f["_KEY_STATS"].keys()
            and _STATS_REQUIRED <= f["_VALUE_STATS"].keys()
            and "_TOTAL_BUCKETS" in rec
        ):
            raise CorruptMetadataError("manifest entry lacks a required field")
    return _ref_from_record(rec)


def read_manifest_refs(data: bytes) -> list[EntryRef]:
    """Decode a manifest as :func:`read_manifest_entries` does (same errors), keeping only what
    reachability needs: about a third cheaper, for sweeps that never plan a scan (orphan cleanup)."""
    return _decode(data, "manifest file", _ref_from_record, _first_ref_from_record)


# ---------------------------------------------------------------------------------------------
# Manifest lists


def _meta_record(m: ManifestFileMeta) -> dict[str, Any]:
    return {
        "_VERSION": FORMAT_IDENTIFIER,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": m.num_added_files,
        "_NUM_DELETED_FILES": m.num_deleted_files,
        "_PARTITION_STATS": _stats_record(m.partition_stats),
        "_SCHEMA_ID": m.schema_id,
        "_MIN_BUCKET": m.min_bucket,
        "_MAX_BUCKET": m.max_bucket,
        "_MIN_LEVEL": m.min_level,
        "_MAX_LEVEL": m.max_level,
        "_MIN_ROW_ID": m.min_row_id,
        "_MAX_ROW_ID": m.max_row_id,
    }


_META_ENCODINGS: RecordEncodings[ManifestFileMeta] = RecordEncodings(
    _MANIFEST_FILE_META_SCHEMA, _meta_record, "manifest list", limit=20_000
)


def write_manifest_list(metas: Sequence[ManifestFileMeta], codec: str = "zstd") -> bytes:
    """Encode a Paimon manifest list (Avro OCF, §6.2, all 13 fields).

    Args:
        metas: The manifests, in order.
        codec: As for :func:`write_manifest_entries`.

    Returns:
        The complete file content.

    Raises:
        InvalidArgumentError: Unknown codec, or a record whose fields cannot be encoded.
    """
    return write_container(_MANIFEST_FILE_META_SCHEMA, _META_ENCODINGS.encode_all(metas), _avro_codec(codec))


def _meta_from_record(rec: dict[str, Any] | None) -> ManifestFileMeta:
    if rec is None:
        raise CorruptMetadataError("manifest list holds a null record")
    if rec.get("_VERSION") != FORMAT_IDENTIFIER:
        _check_version(rec)
    get = rec.get
    return ManifestFileMeta(
        rec["_FILE_NAME"],
        rec["_FILE_SIZE"],
        rec["_NUM_ADDED_FILES"],
        rec["_NUM_DELETED_FILES"],
        _stats(rec["_PARTITION_STATS"]),
        rec["_SCHEMA_ID"],
        get("_MIN_BUCKET"),
        get("_MAX_BUCKET"),
        get("_MIN_LEVEL"),
        get("_MAX_LEVEL"),
        get("_MIN_ROW_ID"),
        get("_MAX_ROW_ID"),
    )


def read_manifest_list(data: bytes) -> list[ManifestFileMeta]:
    """Decode a Paimon manifest list written by any Paimon ≥ 0.9, Java or pypaimon.

    Args:
        data: The complete file content.

    Returns:
        The manifest metas in file order.

    Raises:
        CorruptMetadataError: The bytes are not a readable manifest list.
    """
    return _decode(data, "manifest list", _meta_from_record)


_LIST_REQUIRED = frozenset({"_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
                            "_PARTITION_STATS", "_SCHEMA_ID"})


def _list_ref_from_record(rec: dict[str, Any] | None) -> tuple[str, int]:
    if rec is None:
        raise CorruptMetadataError("manifest list holds a null record")
    if rec.get("_VERSION") != FORMAT_IDENTIFIER:
        _check_version(rec)
    return rec["_FILE_NAME"], rec["_FILE_SIZE"]


def _first_list_ref_from_record(rec: dict[str, Any] | None) -> tuple[str, int]:
    # The field checks of _meta_from_record, once per file (see _first_ref_from_record).
    if rec is not None and not (
        _LIST_REQUIRED <= rec.keys() and _STATS_REQUIRED <= rec["_PARTITION_STATS"].keys()
    ):
        raise CorruptMetadataError("manifest list record lacks a required field")
    return _list_ref_from_record(rec)


def read_manifest_list_refs(data: bytes) -> list[tuple[str, int]]:
    """Decode a manifest list as :func:`read_manifest_list` does (same errors), keeping only each
    manifest's ``(file name, byte size)``: what reachability sweeps need."""
    return _decode(data, "manifest list", _list_ref_from_record, _first_list_ref_from_record)


# ---------------------------------------------------------------------------------------------
# Merging


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Apply entries in order (§6.5), as Java's ``FileEntry.mergeEntries`` does.

    An ADD inserts its file; a DELETE removes the ADD with the same :attr:`ManifestEntry.identifier`,
    or is kept (as a DELETE) when that ADD is not in the merged set, so merging a delta on its
    own and then on top of a base gives the same result as merging everything at once.

    Args:
        entries: Entries in commit order (base manifests first, then deltas).

    Returns:
        The surviving entries in first-insertion order (ADDs and unmatched DELETEs).

    Raises:
        CorruptMetadataError: A file is added while already present.
    """
    merged: dict[tuple[Any, ...], ManifestEntry] = {}
    for entry in entries:
        key = entry.identifier
        if entry.kind == FileKind.ADD:
            if key in merged:
                raise CorruptMetadataError(
                    f"file {entry.file.file_name} (bucket {entry.bucket}, level {entry.file.level}) "
                    "is added twice; the table's manifests are inconsistent"
                )
            merged[key] = entry
        elif key in merged:
            # Java removes whatever is there; a second DELETE of the same file cancels the first.
            del merged[key]
        else:
            merged[key] = entry
    return list(merged.values())


def live_files(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """The ADD entries alive after applying all entries of a complete history (base + delta).

    Args:
        entries: Every entry of a snapshot's manifests, in commit order.

    Returns:
        The live ADD entries in first-insertion order.

    Raises:
        CorruptMetadataError: A file is added twice, or deleted without ever being added.
    """
    merged = merge_entries(entries)
    for entry in merged:
        if entry.kind != FileKind.ADD:
            raise CorruptMetadataError(
                f"file {entry.file.file_name} (bucket {entry.bucket}, level {entry.file.level}) is deleted "
                "but was never added; the table's manifests are inconsistent"
            )
    return merged
