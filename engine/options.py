"""Every table option, declared once: key, type, default, description, mutability.

Keys and defaults are Paimon's (``CoreOptions``) wherever Paimon has the option, so a table
written here reads the same in Java Paimon / pypaimon. Deliberate differences:

* ``file.format`` accepts ``parquet`` and ``orc`` when set through :func:`validate_options`
  (``engine.meta.file_formats``); tables written elsewhere with ``avro`` still load, they are just
  not validated on read.
* ``deletion-vectors.enabled`` is checked against the table at CREATE/ALTER (``engine.schema``);
  dyntable writes deletion vectors for append and primary-key tables (``docs/deletion-vectors.md``).
* ``change-tracking`` (default true) and the ``log.*`` keys come from the managed-table design;
  ``log.*`` values are stored and shown but nothing reads them (there is no log system here).

Invariants: option values are always strings in storage; :meth:`CoreOptions.get` parses on
read (durations → milliseconds, memory sizes → bytes, lists → tuples).

Keys a user sets (CREATE / ALTER / dynamic options), as Paimon treats table properties:

* a declared key must parse and pass its checks; a declared option dyntable cannot honour refuses
  the values that would need it (``file-index.bsi.columns``, ...);
* a Paimon option that would change where files live or what a read or write returns, and that
  dyntable does not implement, is refused with the reason
  (``engine.option_checks.UNSUPPORTED_PAIMON_OPTIONS``: ``record-level.expire-time``, ...);
* any other key is stored as given (Paimon keeps arbitrary properties such as ``'k1'='v1'``, and
  tables shared with Java jobs carry them), unless it is a near-miss of a known key (difflib):
  that is refused, naming the key it probably means, so ``'bukcet'`` does not pass unnoticed
  (``engine.option_checks``; the rule is documented in docs/options.md).

Options a table already has (written by another engine) are never re-validated on read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from engine.option_values import (  # noqa: F401 - re-exported: callers import the parsers from here
    ConfigOption,
    format_duration,
    format_memory_size,
    parse_bool,
    parse_duration,
    parse_memory_size,
)

INT_MAX = 2147483647
_MB = 1 << 20

# ---- declarations ----------------------------------------------------------------------------

_REGISTRY: list[ConfigOption] = []


def _declare(key: str, type_: Any, default: Any, description: str, **kw: Any) -> ConfigOption:
    option = ConfigOption(key, type_, default, description, **kw)
    _REGISTRY.append(option)
    return option


def _at_least(n: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= n else f"must be at least {n}"


def _bucket_ok(v: int) -> str | None:
    if 0 < v <= INT_MAX or v in (-1, -2):
        return None
    if v > INT_MAX:
        return f"more than {INT_MAX} buckets (Paimon stores the bucket count as a 32-bit integer)"
    return "must be a positive number of buckets, -1 (dynamic/unaware) or -2 (postpone)"


def _refuse_true(what: str) -> Callable[[Any], str | None]:
    return lambda v: f"{what} is not supported by dyntable; leave it 'false'" if v else None


def _refuse_any(what: str) -> Callable[[Any], str | None]:
    return lambda v: f"{what} is not supported by dyntable; remove the option"


def _mark_done_ok(actions: tuple[str, ...]) -> str | None:
    for action in actions:
        if action not in ("success-file", "done-partition"):
            return f"action '{action}' is not supported by dyntable; use success-file and/or done-partition"
    return None


def _relative_dir_ok(v: str) -> str | None:
    parts = v.strip().split("/")
    if "://" in v or parts[0] in ("schema", "snapshot", "tag", "consumer", "branch", "changelog", "manifest",
                                  "index", "statistics", ".dyntable") or any(
            p in ("", ".", "..") or "=" in p or p.startswith("bucket-") for p in parts):
        return ("must be a plain directory relative to the table and not one of its metadata directories, "
                "e.g. 'data' (no leading '/', '.', '..', '=' or 'bucket-')")
    return None


def _external_paths_ok(v: str) -> str | None:
    # The same rule as engine.meta.external_paths (Paimon: "scheme should not be null").
    for root in v.split(","):
        if root.strip() and not re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", root.strip()):
            return f"{root.strip()!r} has no scheme; give URIs such as 'file:///data/t' or 's3://bucket/t'"
    return None


def _weights_ok(v: str) -> str | None:
    if all(p.strip().isdigit() and int(p) > 0 for p in v.split(",")):
        return None
    return "must be positive integer weights, '10,5,15'"


def _stats_mode_ok(v: str) -> str | None:
    ok = re.fullmatch(r"none|counts|full|truncate\(\d+\)", v.strip().lower())
    return None if ok else "expected none, counts, full or truncate(N)"


AGGREGATE_FUNCTIONS = (
    "sum", "min", "max", "count", "product", "last_value", "last_non_null_value", "first_value",
    "first_non_null_value", "listagg", "bool_and", "bool_or",
)  # fmt: skip


# -- layout, keys and merge semantics
# fmt: off
BUCKET = _declare("bucket", int, -1,
    "Number of buckets. N > 0: fixed buckets; -1 (the default, as Paimon's): dynamic buckets for "
    "primary-key tables (cross-partition upsert when the key lacks a partition column), bucket-unaware "
    "for append tables; -2: postpone. A new table stores the value explicitly. Change it with ALTER "
    "TABLE ... CLUSTERED INTO n BUCKETS, which rewrites the data.", immutable=True, validator=_bucket_ok)
BUCKET_KEY = _declare("bucket-key", "list", None,
    "Columns hashed to pick a bucket; default: the primary key minus partition keys, else the whole row.",
    immutable=True)
BUCKET_FUNCTION_TYPE = _declare("bucket-function.type", "enum", "default",
    "Bucket function. dyntable hashes keys as Paimon's default function does; 'mod' and 'hive' are refused.",
    immutable=True, choices=("default", "mod", "hive"),
    validator=lambda v: None if v == "default" else f"bucket function '{v}' is not supported by dyntable")
PRIMARY_KEY = _declare("primary-key", "list", None,
    "Primary key columns given as an option instead of in the DDL (moved into the schema on create).",
    immutable=True)
PARTITION = _declare("partition", "list", None,
    "Partition columns given as an option instead of PARTITIONED BY (moved into the schema on create).",
    immutable=True)
PRIMARY_KEY_NULLABLE = _declare("primary-key.nullable", bool, False,
    "Keep primary-key columns nullable instead of forcing them NOT NULL.", immutable=True)
RETRACTIONS_ENABLED = _declare("retractions.enabled", bool, False,
    "A table without primary key that accepts retractions (-U/-D rows): stored in the managed-table "
    "design's count layout (key = the whole row, value = a count summed at merge and compaction).",
    immutable=True)
MERGE_ENGINE = _declare("merge-engine", "enum", "deduplicate",
    "How rows with the same primary key merge: deduplicate (keep last), partial-update (non-null fields "
    "win), aggregation (fields.<f>.aggregate-function), first-row (keep first).",
    immutable=True, choices=("deduplicate", "partial-update", "aggregation", "first-row"))
IGNORE_DELETE = _declare("ignore-delete", bool, False, "Drop DELETE / UPDATE_BEFORE rows on write.")
# Paimon's older per-engine spellings of ignore-delete; the first one set wins, in this order.
IGNORE_DELETE_ALIASES = tuple(
    _declare(f"{engine}.ignore-delete", bool, False, "Older spelling of ignore-delete.")
    for engine in ("first-row", "deduplicate", "partial-update")
)
AGGREGATION_REMOVE_ON_DELETE = _declare("aggregation.remove-record-on-delete", bool, False,
    "aggregation: a DELETE row removes the aggregated record.")
PARTIAL_UPDATE_REMOVE_ON_DELETE = _declare("partial-update.remove-record-on-delete", bool, False,
    "partial-update: a DELETE row removes the whole record.")
PARTIAL_UPDATE_REMOVE_ON_SEQUENCE_GROUP = _declare(
    "partial-update.remove-record-on-sequence-group", "list", None,
    "partial-update: DELETE rows of these sequence groups remove the whole record "
    "(not supported by dyntable: refused).")
CHANGELOG_PRODUCER = _declare("changelog-producer", "enum", "none",
    "How changelog files are produced: none, input (write the input as changelog), full-compaction, "
    "lookup.", choices=("none", "input", "full-compaction", "lookup"))
SEQUENCE_FIELD = _declare("sequence.field", "list", None,
    "Columns whose values order updates of a key instead of the arrival order.", immutable=True)
SEQUENCE_FIELD_SORT_ORDER = _declare("sequence.field.sort-order", "enum", "ascending",
    "Order of sequence.field values.", choices=("ascending", "descending"))
CHANGE_TRACKING = _declare("change-tracking", bool, True,
    "Whether writes produce changes for streaming readers (the managed-table design's option); per "
    "statement as a hint: INSERT INTO t /*+ OPTIONS('change-tracking'='false') */ ...")
ROW_TRACKING_ENABLED = _declare("row-tracking.enabled", bool, False,
    "Paimon row tracking (_ROW_ID, Paimon 1.3), append tables with 'bucket' = '-1' only: each new "
    "file takes its first row id at commit and the snapshot its nextRowId; compaction, DELETE, UPDATE "
    "and MERGE keep the ids of the rows they rewrite. _ROW_ID and _SEQUENCE_NUMBER are readable by name.",
    immutable=True)
DATA_EVOLUTION_ENABLED = _declare("data-evolution.enabled", bool, False,
    "Paimon data evolution (Paimon 1.3; needs 'row-tracking.enabled'): a row-id range's columns may be "
    "rewritten by later files holding only those columns. dyntable reads such tables in batch (each column "
    "from the newest file holding it), appends to them and compacts them (a range's files merged into one, "
    "row ids and deletion vectors kept); overwrites, DELETE/UPDATE/MERGE and incremental or "
    "streaming reads of them are refused.", immutable=True)
DELETION_VECTORS_ENABLED = _declare("deletion-vectors.enabled", bool, False,
    "Deletion vectors (merge-on-write): superseded and deleted rows are marked in per-file bitmaps, so "
    "batch reads need no merge. Primary-key tables: merge engines deduplicate, partial-update and "
    "aggregation with changelog-producer none, input or lookup. Append tables: DELETE/UPDATE/MERGE "
    "mark rows instead of rewriting files. Changing it on an existing table needs "
    "'deletion-vectors.modifiable' = 'true'.")
DELETION_VECTORS_MODIFIABLE = _declare("deletion-vectors.modifiable", bool, False,
    "Allow ALTER TABLE to change 'deletion-vectors.enabled' (run a full compaction right after: until "
    "then reads may return duplicates or deleted rows).")
DELETION_VECTORS_MERGE_ON_READ = _declare("deletion-vectors.merge-on-read", bool, False,
    "Deletion-vector primary-key tables: batch reads merge level 0 (files not compacted yet) with the "
    "levels above, so uncompacted rows are visible at some read cost; by default batch reads skip level "
    "0, as Paimon's do. Streaming and changelog reads are unaffected. Also a dynamic option (SET "
    "spark.paimon.deletion-vectors.merge-on-read, a hint, a read option).")
DELETION_VECTORS_BITMAP64 = _declare("deletion-vectors.bitmap64", bool, False,
    "Write 64-bit deletion vectors (Paimon 1.2+; for data files above 2^31 rows). Paimon 0.9 and "
    "pypaimon cannot read them. Alterable, as in Paimon: DVs written before keep their kind, and a "
    "file's DV that gains positions is widened to 64-bit when either side is.")
DELETION_VECTOR_INDEX_FILE_TARGET_SIZE = _declare("deletion-vector.index-file.target-size", "memory_size",
    2 * _MB,
    "Bucket-unaware append tables: a partition's deletion vectors roll into a new index file once one "
    "grows past this size (each file has its own index-manifest entry). Bucketed tables keep one DV "
    "index file per bucket, as Paimon does.")
COMPACTION_DELETE_RATIO_THRESHOLD = _declare("compaction.delete-ratio-threshold", float, 0.2,
    "Bucket-unaware append tables with deletion vectors: a data file whose deletion vector marks more "
    "than this fraction of its rows is compacted even when it is not small.",
    validator=lambda v: None if 0.0 <= v <= 1.0 else "must be a fraction from 0 to 1")
CLUSTERING_COLUMNS = _declare("clustering.columns", str, None,
    "Append tables: the columns incremental clustering sorts by, 'a,b' (engine.write.clustering).")
CLUSTERING_STRATEGY = _declare("clustering.strategy", str, "auto",
    "The order of incremental clustering: order, zorder or hilbert; auto picks order for one column, "
    "zorder below five, hilbert from five.",
    validator=lambda v: None if v.strip().lower() in ("auto", "order", "zorder", "hilbert")
    else "must be auto, order, zorder or hilbert")
CLUSTERING_INCREMENTAL = _declare("clustering.incremental", bool, False,
    "Append tables with bucket = -1: compaction clusters the files by clustering.columns, level by level "
    "(new files first), instead of concatenating small files.")
DATA_FILE_THIN_MODE = _declare("data-file.thin-mode", bool, False,
    "Primary-key data files without the _KEY_ columns (the key is read from its value columns), as Paimon "
    "1.0 writes them; readers of Paimon 0.9 cannot read such files.")

# -- files
FILE_FORMAT = _declare("file.format", str, "parquet",
    "Data file format of new files: parquet, orc or avro (a table may change it; files of every format "
    "read together). Avro files are Paimon's layout, decoded and encoded by polars; their codec is "
    "'avro.codec' when set, else file.compression (zstd, snappy, gzip as deflate, none).",
    validator=lambda v: None if v.strip().lower() in ("parquet", "orc", "avro")
    else "dyntable writes parquet, orc and avro data files")
FILE_COMPRESSION = _declare("file.compression", "enum", "zstd", "Data file compression.",
    choices=("zstd", "snappy", "gzip", "brotli", "lz4", "none", "uncompressed"))
FILE_COMPRESSION_ZSTD_LEVEL = _declare("file.compression.zstd-level", int, 1,
    "zstd level of data files (1-22; higher is smaller and slower).",
    validator=lambda v: None if 1 <= v <= 22 else "must be a zstd level from 1 to 22")
MANIFEST_FORMAT = _declare("manifest.format", str, "avro", "Manifest file format (always avro).",
    validator=lambda v: None if v.strip().lower() == "avro" else "dyntable writes only avro manifests")
MANIFEST_COMPRESSION = _declare("manifest.compression", str, "zstd", "Manifest (Avro) compression codec.")
MANIFEST_TARGET_FILE_SIZE = _declare("manifest.target-file-size", "memory_size", 8 * _MB,
    "Target size of a manifest file.")
MANIFEST_MERGE_MIN_COUNT = _declare("manifest.merge-min-count", int, 30,
    "Merge small manifests once there are at least this many. A commit's merge keeps full manifests "
    "and, of the small ones, each with at least as many entries as the rest being merged: a file's "
    "entry is rewritten about log2(history) times, not at every merge.", validator=_at_least(1))
TARGET_FILE_SIZE = _declare("target-file-size", "memory_size", None,
    "Target data file size; default 128 mb for primary-key tables, 256 mb for append tables.")
WRITE_BUFFER_SIZE = _declare("write-buffer-size", "memory_size", 256 * _MB,
    "Rows buffered in memory (sorted) before a flush.")
DATA_FILE_PREFIX = _declare("data-file.prefix", str, "data-", "Name prefix of data files.")
CHANGELOG_FILE_PREFIX = _declare("changelog-file.prefix", str, "changelog-",
    "Name prefix of changelog files.")
METADATA_STATS_MODE = _declare("metadata.stats-mode", str, "truncate(16)",
    "Column statistics kept in manifests: none, counts, full or truncate(N).", validator=_stats_mode_ok)
METADATA_STATS_DENSE_STORE = _declare("metadata.stats-dense-store", bool, True,
    "Store stats only for the columns that have them (_VALUE_STATS_COLS). dyntable writes stats of every "
    "column (_VALUE_STATS_COLS null), a layout every Paimon reader reads the same way; the value only "
    "changes manifest size.")

# -- compaction
NUM_SORTED_RUN_COMPACTION_TRIGGER = _declare("num-sorted-run.compaction-trigger", int, 5,
    "Sorted runs that trigger a compaction.", validator=_at_least(1))
NUM_SORTED_RUN_STOP_TRIGGER = _declare("num-sorted-run.stop-trigger", int, None,
    "Sorted runs that stall writes; default compaction-trigger + 3.", validator=_at_least(1))
NUM_LEVELS = _declare("num-levels", int, None, "LSM levels; default compaction-trigger + 1.",
    validator=_at_least(2))
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = _declare("compaction.max-size-amplification-percent", int, 200,
    "Universal compaction: size amplification (%) that forces a full compaction.", validator=_at_least(0))
COMPACTION_SIZE_RATIO = _declare("compaction.size-ratio", int, 1,
    "Universal compaction: size-ratio flexibility (%).", validator=_at_least(0))
COMPACTION_MIN_FILE_NUM = _declare("compaction.min.file-num", int, 5,
    "Append tables: minimum files to compact.", validator=_at_least(1))
FULL_COMPACTION_DELTA_COMMITS = _declare("full-compaction.delta-commits", int, None,
    "Primary-key tables: writers fully compact the buckets they wrote every this many commits, as "
    "Paimon's Spark writer does: every batch write, and a streaming write whose (batch id + 1) is a "
    "multiple of it (with changelog-producer full-compaction, the changelog comes with those "
    "compactions). Not with changelog-producer lookup, nor on tables without a primary key.",
    validator=_at_least(1))
WRITE_ONLY = _declare("write-only", bool, False, "Writers never compact (a separate job does).")
WRITE_MERGE_SCHEMA = _declare("write.merge-schema", bool, False,
    "Evolve the table's schema to accept the written data: new top-level columns are appended, new "
    "fields of structs (also inside arrays and map values) are added, columns or fields the data lacks "
    "are written as NULL; existing types are kept and values cast to them. One new schema version is "
    "published with the write's snapshot, never without it. Also a write option of Table.write_arrow "
    "and of df.write.format(\"dyntable\"), and in SQL a session key (SET spark.paimon.write.merge-schema) "
    "or a hint for INSERT ... BY NAME and MERGE INTO ... UPDATE SET * / INSERT * (positional INSERTs "
    "never evolve the schema, as in Paimon).")
WRITE_MERGE_SCHEMA_TYPE_WIDENING = _declare("write.merge-schema.type-widening", bool, False,
    "With write.merge-schema: widen an existing column's type to the data's where Paimon casts "
    "implicitly (INT -> BIGINT, a larger DECIMAL precision of the same scale, a longer VARCHAR, numbers "
    "to DOUBLE). A primary-key or bucket-key column widens only where its stored keys keep their bytes "
    "(a wider integer when no stored key is negative, a longer VARCHAR); partition columns keep their types.")
WRITE_MERGE_SCHEMA_EXPLICIT_CAST = _declare("write.merge-schema.explicit-cast", bool, False,
    "With write.merge-schema.type-widening: also Paimon's explicit casts (STRING -> DATE, BIGINT -> INT, "
    "a shorter length), taken only when every stored value of the column converts (old files are read "
    "through the cast); casts whose result differs between readers (instants and numbers, time zones) "
    "are refused.")

# -- snapshots, commits, retention
SNAPSHOT_NUM_RETAINED_MIN = _declare("snapshot.num-retained.min", int, 10,
    "Minimum completed snapshots kept.", validator=_at_least(1))
SNAPSHOT_NUM_RETAINED_MAX = _declare("snapshot.num-retained.max", int, INT_MAX,
    "Maximum completed snapshots kept.", validator=_at_least(1))
SNAPSHOT_TIME_RETAINED = _declare("snapshot.time-retained", "duration", 3_600_000,
    "Maximum age of completed snapshots.")
SNAPSHOT_EXPIRE_LIMIT = _declare("snapshot.expire.limit", int, 50, "Maximum snapshots expired in one run.",
    validator=_at_least(1))
SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = _declare("snapshot.clean-empty-directories", bool, False,
    "Remove empty partition/bucket directories when expiring (dyntable removes them unless this is "
    "set to false explicitly).")
CHANGELOG_NUM_RETAINED_MIN = _declare("changelog.num-retained.min", int, None,
    "Minimum long-lived changelogs kept; default snapshot.num-retained.min.", validator=_at_least(1))
CHANGELOG_NUM_RETAINED_MAX = _declare("changelog.num-retained.max", int, None,
    "Maximum long-lived changelogs kept; default snapshot.num-retained.max.", validator=_at_least(1))
CHANGELOG_TIME_RETAINED = _declare("changelog.time-retained", "duration", None,
    "Maximum age of long-lived changelogs; default snapshot.time-retained.")
SNAPSHOT_EXPIRE_EXECUTION_MODE = _declare("snapshot.expire.execution-mode", "enum", "sync",
    "Automatic expiration after a commit: sync (in the committing thread, after the commit) or async "
    "(a background thread; the commit returns at once).", choices=("sync", "async"))
DELETE_FILE_THREAD_NUM = _declare("delete-file.thread-num", int, None,
    "Threads deleting files during expiration; default the number of processors.", validator=_at_least(1))
RETENTION_TIME = _declare("retention.time", "duration", None,
    "The retention mark's horizon: CALL sys.retention_mark moves the mark to the newest snapshot "
    "committed at or before now minus this; time travel below the mark is refused.")
TABLE_RETENTION_TIME = _declare("table_retention_time", "duration", None,
    "Databend's spelling of retention.time (used when retention.time is not set).")
COMMIT_MAX_RETRIES = _declare("commit.max-retries", int, 10, "Commit attempts after a conflict.",
    validator=_at_least(0))
COMMIT_TIMEOUT = _declare("commit.timeout", "duration", None, "Give up retrying a commit after this long.")
COMMIT_MIN_RETRY_WAIT = _declare("commit.min-retry-wait", "duration", 10,
    "Shortest back-off between commit retries.")
COMMIT_MAX_RETRY_WAIT = _declare("commit.max-retry-wait", "duration", 10_000,
    "Longest back-off between commit retries.")
DYNAMIC_BUCKET_TARGET_ROW_NUM = _declare("dynamic-bucket.target-row-num", int, 2_000_000,
    "Rows per bucket in dynamic bucket mode.", validator=_at_least(1))
DYNAMIC_BUCKET_MAX_BUCKETS = _declare("dynamic-bucket.max-buckets", int, -1,
    "Most buckets a partition of a dynamic-bucket table grows to (-1: no limit); past it, new keys go "
    "to the partition's existing buckets. Cross-partition upsert tables have no limit, as in Paimon.")
DYNAMIC_BUCKET_ASSIGNER_PARALLELISM = _declare("dynamic-bucket.assigner-parallelism", int, None,
    "Number of bucket assigners of a partition-local dynamic-bucket write (default: a Spark write's job "
    "parallelism, as Paimon's Spark writer; writes without Spark: dynamic-bucket.initial-buckets, else 1). "
    "Each assigner takes the keys "
    "Paimon's hash routes to it and opens only its own bucket ids, so the layout matches Paimon's. "
    "Cross-partition upsert tables use one assigner.", validator=_at_least(1))
DYNAMIC_BUCKET_INITIAL_BUCKETS = _declare("dynamic-bucket.initial-buckets", int, None,
    "Buckets a partition of a dynamic-bucket table starts with: the number of assigners, at most "
    "dynamic-bucket.assigner-parallelism.", validator=_at_least(1))
CROSS_PARTITION_UPSERT_INDEX_TTL = _declare("cross-partition-upsert.index-ttl", "duration", None,
    "Paimon's time-to-live of a key in a cross-partition upsert job's key index (keys forgotten after it "
    "may be duplicated). dyntable rebuilds the index from the table for every write and never forgets a "
    "key, so keys stay unique whatever the value; it is stored for Java writers.")
CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM = _declare("cross-partition-upsert.bootstrap-parallelism",
    int, 10, "Parallelism of a Paimon Flink job's index bootstrap; dyntable bootstraps the index with one "
    "vectorised scan of the key columns and stores the value for Java writers.", validator=_at_least(1))

# -- scans, branches, consumers
SCAN_MODE = _declare("scan.mode", "enum", "default", "Where a scan starts.",
    choices=(
        "default",
        "latest-full",
        "full",
        "latest",
        "latest-delta",
        "compacted-full",
        "from-timestamp",
        "from-creation-timestamp",
        "from-file-creation-time",
        "from-snapshot",
        "from-snapshot-full",
        "incremental",
    ))
SCAN_SNAPSHOT_ID = _declare("scan.snapshot-id", int, None, "Read this snapshot (time travel).",
    validator=_at_least(1))
SCAN_TAG_NAME = _declare("scan.tag-name", str, None, "Read this tag.")
SCAN_TIMESTAMP_MILLIS = _declare("scan.timestamp-millis", int, None,
    "Read the latest snapshot committed at or before this epoch-millisecond time.")
SCAN_TIMESTAMP = _declare("scan.timestamp", str, None, "scan.timestamp-millis as 'yyyy-MM-dd HH:mm:ss'.")
SCAN_VERSION = _declare("scan.version", str, None, "A snapshot id or tag name to read.")
READ_NATIVE_SCAN = _declare("read.native-scan.enabled", bool, True,
    "dyntable (Spark): batch reads return splits that need no merge through Spark's own Parquet reader.")
WRITE_NATIVE_WRITE = _declare("write.native-write.enabled", bool, False,
    "dyntable (Spark): primary-key writes shuffled by bucket (deduplicate and first-row merge engines, fixed "
    "bucket) are sorted, deduplicated and written as level-0 files by Spark's own Parquet writer, then "
    "committed by the engine; false: the Python writer (measured faster on 2 cores: docs/benchmarks.md, "
    "W2n). Also a write option, a session setting and spark.dyntable.write.native-write.enabled.")
DATA_FILE_PATH_DIRECTORY = _declare("data-file.path-directory", str, None,
    "Directory (relative to the table) holding the partition and bucket directories of the data files, "
    "as Paimon lays them out (<table>/<dir>/<partition>/bucket-N). Immutable: readers find existing files "
    "through it.", immutable=True, validator=lambda v: _relative_dir_ok(v))
DATA_FILE_EXTERNAL_PATHS = _declare("data-file.external-paths", str, None,
    "External roots new data files are written under, comma-separated URIs with a scheme "
    "('file:///data/t', 's3://bucket/t'; on the table's own file system), each mirroring the table's "
    "partition and bucket directories; used when data-file.external-paths.strategy is not none.",
    validator=lambda v: _external_paths_ok(v))
DATA_FILE_EXTERNAL_PATHS_STRATEGY = _declare("data-file.external-paths.strategy", "enum", "none",
    "How a new data file picks an external root: none (the table directory), round-robin, specific-fs "
    "(round-robin over the roots of data-file.external-paths.specific-fs), entropy-inject (round-robin, "
    "hash directories before the name) or weight-robin (random by data-file.external-paths.weights).",
    choices=("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin"))
DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = _declare("data-file.external-paths.specific-fs", str, None,
    "The scheme of the external roots the specific-fs strategy writes to (e.g. s3, oss).")
DATA_FILE_EXTERNAL_PATHS_WEIGHTS = _declare("data-file.external-paths.weights", str, None,
    "Positive integer weights of the external roots for the weight-robin strategy, '10,5,15' (in the "
    "order of data-file.external-paths).", validator=lambda v: _weights_ok(v))
POSTPONE_DEFAULT_BUCKET_NUM = _declare("postpone.default-bucket-num", int, 1,
    "Postpone-bucket tables (bucket = -2): the bucket count of a partition written for the first time (a "
    "partition with files in real buckets keeps their count).", validator=_at_least(1))
SCAN_FALLBACK_BRANCH = _declare("scan.fallback-branch", str, None,
    "Batch reads of a partitioned table take the partitions the read branch lacks from the named branch "
    "(same columns and partition columns; streaming reads, writes and maintenance see the read branch only).")
INCREMENTAL_BETWEEN = _declare("incremental-between", str, None,
    "Batch read of the changes between two snapshot ids or two tags: 'start,end' (start exclusive). Two "
    "tags are compared as two states (see incremental-between-tag-to-snapshot). A read option, a hint or "
    "paimon_incremental_query(...).")
INCREMENTAL_BETWEEN_TIMESTAMP = _declare("incremental-between-timestamp", str, None,
    "Batch read of the changes committed between two times: 'start,end' as epoch milliseconds or "
    "timestamps in the local time zone (start exclusive). A read option, a hint or "
    "paimon_incremental_between_timestamp(...).")
INCREMENTAL_TO_AUTO_TAG = _declare("incremental-to-auto-tag", str, None,
    "Batch read of the changes from the automatic tag before the named one to it (empty when either does "
    "not exist); the names follow tag.creation-period and tag.period-formatter. A read option, a hint or "
    "paimon_incremental_to_auto_tag(...).")
INCREMENTAL_BETWEEN_SCAN_MODE = _declare("incremental-between-scan-mode", "enum", "auto",
    "How an incremental read between snapshots finds changes: delta (the files each snapshot added), "
    "changelog (its changelog files), auto (changelog when the table has a changelog producer, else delta) "
    "or diff (the two end states compared).", choices=("auto", "delta", "changelog", "diff"))
INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT = _declare("incremental-between-tag-to-snapshot", bool, False,
    "incremental-between two tags reads the snapshots between them (by the scan mode) instead of "
    "comparing the two tagged states.")
BRANCH = _declare("branch", str, "main", "Branch to read and write.")
CONSUMER_ID = _declare("consumer-id", str, None, "Record streaming-read progress under this consumer id.")
CONSUMER_EXPIRATION_TIME = _declare("consumer.expiration-time", "duration", None,
    "Consumers idle for longer than this stop protecting snapshots.")
CONSUMER_IGNORE_PROGRESS = _declare("consumer.ignore-progress", bool, False,
    "Start from scan.mode even if the consumer has recorded progress. Not supported by dyntable (reset the "
    "consumer with CALL sys.reset_consumer): only 'false' is accepted.",
    validator=_refuse_true("consumer.ignore-progress (use CALL sys.reset_consumer)"))

# -- partitions
PARTITION_DEFAULT_NAME = _declare("partition.default-name", str, "__DEFAULT_PARTITION__",
    "Directory value of a null or blank partition value (immutable: data paths depend on it).",
    immutable=True)
PARTITION_LEGACY_NAME = _declare("partition.legacy-name", bool, True,
    "Use Java toString() for partition directory values (immutable: data paths depend on it).",
    immutable=True)
PARTITION_EXPIRATION_TIME = _declare("partition.expiration-time", "duration", None,
    "Partitions older than this expire.")
PARTITION_EXPIRATION_CHECK_INTERVAL = _declare("partition.expiration-check-interval", "duration", 3_600_000,
    "How often writers check for expired partitions.")
END_INPUT_CHECK_PARTITION_EXPIRE = _declare("end-input.check-partition-expire", bool, False,
    "Check partition expiration at the end of every batch write (a commit with the batch identifier), "
    "whatever partition.expiration-check-interval says, as Paimon's bounded jobs do.")
PARTITION_EXPIRATION_STRATEGY = _declare("partition.expiration-strategy", "enum", "values-time",
    "How a partition's time is found.", choices=("values-time", "update-time"))
PARTITION_EXPIRATION_MAX_NUM = _declare("partition.expiration-max-num", int, 100,
    "Maximum partitions expired in one run.", validator=_at_least(1))
PARTITION_MARK_DONE_ACTION = _declare("partition.mark-done-action", "list", ("success-file",),
    "What CALL sys.mark_partition_done does to a partition: success-file writes <partition>/_SUCCESS "
    "(JSON creationTime/modificationTime, as Paimon). done-partition adds the partition whose last value "
    "ends in '.done' (dt=20240713.done): dyntable's catalog is the file system, so it is that partition's "
    "(empty) directory. Both may be combined; mark-event, http-report and custom are refused.",
    validator=lambda v: _mark_done_ok(v))
PARTITION_EXPIRATION_BATCH_SIZE = _declare("partition.expiration-batch-size", int, None,
    "Paimon drops expired partitions in commits of this many; dyntable drops one run's partitions in "
    "one commit (the same partitions go, atomically), so any positive value is accepted.",
    validator=_at_least(1))
PARTITION_TIMESTAMP_FORMATTER = _declare("partition.timestamp-formatter", str, None,
    "Java-style pattern parsing a partition value into a time, e.g. 'yyyyMMdd'.")
PARTITION_TIMESTAMP_PATTERN = _declare("partition.timestamp-pattern", str, None,
    "How partition columns form a time string, e.g. '$dt $hour:00:00'.")

# -- tags
TAG_AUTOMATIC_CREATION = _declare("tag.automatic-creation", "enum", "none", "Create tags automatically.",
    choices=("none", "process-time", "watermark", "batch"))
TAG_CREATION_PERIOD = _declare("tag.creation-period", "enum", "daily", "Period of automatic tags.",
    choices=("daily", "hourly", "two-hours"))
TAG_PERIOD_FORMATTER = _declare("tag.period-formatter", "enum", "with_dashes",
    "Format of automatic tag names: 2024-07-18 / 20240718 / (hourly) 2024071810.",
    choices=("with_dashes", "without_dashes", "without_dashes_and_spaces"))
TAG_CREATION_DELAY = _declare("tag.creation-delay", "duration", 0,
    "Delay after a period ends before tagging.")
TAG_NUM_RETAINED_MAX = _declare("tag.num-retained-max", int, None, "Maximum automatic tags kept.",
    validator=_at_least(1))
TAG_DEFAULT_TIME_RETAINED = _declare("tag.default-time-retained", "duration", None,
    "Time to live of new tags.")
TAG_AUTOMATIC_COMPLETION = _declare("tag.automatic-completion", bool, False,
    "Create missing automatic tags for past periods.")
TAG_PERIOD_DURATION = _declare("tag.period-duration", "duration", None,
    "Period of automatic tags as a duration (overrides tag.creation-period); names are yyyyMMddHHmm.",
    validator=lambda v: None if v > 0 else "must be positive")
TAG_BATCH_CUSTOMIZED_NAME = _declare("tag.batch.customized-name", str, None,
    "Name of the tag automatic batch tagging creates (default batch-write-<yyyy-MM-dd>).")

# -- per-field options (patterns: * is a column name, or a comma list for sequence-group)
FIELDS_DEFAULT_AGGREGATE_FUNCTION = _declare("fields.default-aggregate-function", "enum", None,
    "aggregation: function of columns without their own.", choices=AGGREGATE_FUNCTIONS)
FIELDS_AGGREGATE_FUNCTION = _declare("fields.*.aggregate-function", "enum", None,
    "aggregation: the function merging this column (partial-update: a sequence-group member, "
    "with sum, product, min, max, bool_and or bool_or).", choices=AGGREGATE_FUNCTIONS)
FIELDS_IGNORE_RETRACT = _declare("fields.*.ignore-retract", bool, False,
    "aggregation / partial-update: ignore retractions of this column.")
FIELDS_SEQUENCE_GROUP = _declare("fields.*.sequence-group", "list", None,
    "partial-update: these columns change together, only from a row whose sequence column(s) "
    "(the key's comma list) are not all null and not lower; a winning -U/-D clears them.")
FIELDS_DEFAULT_VALUE = _declare("fields.*.default-value", str, None, "Value used when the column is null.")
FIELDS_STATS_MODE = _declare("fields.*.stats-mode", str, None, "metadata.stats-mode for this column.",
    validator=_stats_mode_ok)
FIELDS_LIST_AGG_DELIMITER = _declare("fields.*.list-agg-delimiter", str, ",", "listagg: delimiter.")
FIELDS_DISTINCT = _declare("fields.*.distinct", bool, False, "listagg / collect: drop duplicates.")
FIELDS_NESTED_KEY = _declare("fields.*.nested-key", "list", None,
    "nested_update: key of the nested rows. nested_update is not supported by dyntable: refused.",
    validator=_refuse_any("the nested_update aggregate (fields.<f>.nested-key)"))
FILE_INDEX_IN_MANIFEST_THRESHOLD = _declare("file-index.in-manifest-threshold", "memory_size", 500,
    "A data file's index blob up to this size is embedded in the manifest, a larger one is <file>.index.")
FILE_INDEX_READ_ENABLED = _declare("file-index.read.enabled", bool, True, "Scans skip files by file indexes.")
FILE_INDEX_BLOOM_FILTER_COLUMNS = _declare("file-index.bloom-filter.columns", "list", None,
    "Columns that get a bloom-filter index in every data file.")
FILE_INDEX_BITMAP_COLUMNS = _declare("file-index.bitmap.columns", "list", None, "Columns with bitmap index.")
FILE_INDEX_BLOOM_FILTER_FPP = _declare("file-index.bloom-filter.*.fpp", float, 0.1,
    "False-positive probability of a column's bloom filter.",
    validator=lambda v: None if 0 < v < 1 else "must be between 0 and 1 (exclusive)")
FILE_INDEX_BLOOM_FILTER_ITEMS = _declare("file-index.bloom-filter.*.items", int, 1_000_000,
    "Expected distinct values per data file (sizes the bloom filter).", validator=_at_least(1))
FILE_INDEX_PATTERN = _declare("file-index.*", str, None,
    "Other data-file index settings (bsi, range-bitmap, map entries): refused.",
    validator=_refuse_any("this data-file index option (dyntable builds bloom-filter and bitmap indexes)"))

# -- the managed-table design's log options (stored and shown; no log system here)
LOG_SYSTEM = _declare("log.system", str, "none",
    "Log system of the managed-table design. There is none here: only 'none' is accepted, and the other "
    "log.* keys (stored and shown) take effect with a log system only, as in Paimon.",
    validator=lambda v: None if v.strip().lower() == "none" else "dyntable has no log system; use 'none'")
LOG_CONSISTENCY = _declare("log.consistency", "enum", "transactional", "Log consistency mode.",
    choices=("transactional", "eventual"))
LOG_CHANGELOG_MODE = _declare("log.changelog-mode", "enum", "auto", "Log changelog mode.",
    choices=("auto", "all", "upsert"))
LOG_KEY_FORMAT = _declare("log.key.format", str, "json", "Key format of log records.")
LOG_FORMAT = _declare("log.format", str, "debezium-json", "Value format of log records.")
LOG_RETENTION = _declare("log.retention", "duration", None, "How long the log keeps changes.")
LOG_SCAN = _declare("log.scan", "enum", "full", "Startup mode of log consumers.",
    choices=("full", "latest", "from-timestamp"))
LOG_SCAN_TIMESTAMP_MILLS = _declare("log.scan.timestamp-mills", int, None,
    "Start time for log.scan=from-timestamp.")
LOG_PATTERN = _declare("log.*", str, None, "Other log-system settings (e.g. log.kafka.bootstrap.servers).")

# -- Iceberg-compatible metadata (engine/iceberg, docs/iceberg.md): Paimon's metadata.iceberg.* keys
METADATA_ICEBERG_STORAGE = _declare("metadata.iceberg.storage", "enum", "disabled",
    "Write Iceberg metadata after every commit so Iceberg readers can read the table: table-location "
    "(under the table's metadata/), hadoop-catalog (under <warehouse>/iceberg/<db>/<table>/metadata/). "
    "hive-catalog and rest-catalog are refused.",
    choices=("disabled", "table-location", "hadoop-catalog", "hive-catalog", "rest-catalog"),
    validator=lambda v: "dyntable writes Iceberg metadata to files only (table-location, hadoop-catalog)"
    if v in ("hive-catalog", "rest-catalog") else None)
METADATA_ICEBERG_STORAGE_LOCATION = _declare("metadata.iceberg.storage-location", "enum", None,
    "Where the Iceberg metadata goes: table-location or catalog-location; default follows "
    "metadata.iceberg.storage.", choices=("table-location", "catalog-location"))
METADATA_ICEBERG_FORMAT_VERSION = _declare("metadata.iceberg.format-version", int, 2,
    "Iceberg format version of the metadata: 2, or 3 (which publishes deletion vectors and "
    "nanosecond timestamps).",
    validator=lambda v: None if v in (2, 3) else "dyntable writes Iceberg format versions 2 and 3")
METADATA_ICEBERG_DELETE_AFTER_COMMIT = _declare("metadata.iceberg.delete-after-commit.enabled", bool, True,
    "Delete old Iceberg metadata files (vN.metadata.json) after each commit.")
METADATA_ICEBERG_PREVIOUS_VERSIONS_MAX = _declare("metadata.iceberg.previous-versions-max", int, 0,
    "How many old Iceberg metadata files to keep after each commit.", validator=_at_least(0))
METADATA_ICEBERG_MANIFEST_COMPRESSION = _declare("metadata.iceberg.manifest-compression", "enum", "snappy",
    "Compression of the Iceberg manifests and manifest lists.",
    choices=("snappy", "deflate", "zstd", "uncompressed"))
METADATA_ICEBERG_COMPACTION_MIN_FILE_NUM = _declare("metadata.iceberg.compaction.min.file-num", int, 10,
    "Small Iceberg manifests needed before they are merged (with manifest.target-file-size reached).",
    validator=_at_least(1))
METADATA_ICEBERG_COMPACTION_MAX_FILE_NUM = _declare("metadata.iceberg.compaction.max.file-num", int, 50,
    "Small Iceberg manifests that are merged whatever their total size.", validator=_at_least(1))

# -- internal keys Paimon may store
PATH = _declare("path", str, None, "Table path (internal).")
TYPE = _declare("type", str, "table", "Table type (internal).")
# fmt: on

ALL_OPTIONS: tuple[ConfigOption, ...] = tuple(_REGISTRY)
_BY_KEY = {o.key: o for o in ALL_OPTIONS if not o.is_pattern}
_PATTERNS = [
    (re.compile("^" + re.escape(o.key).replace(r"\*", "(.+)") + "$"), o) for o in ALL_OPTIONS if o.is_pattern
]
_FIELD_SUFFIXES = tuple(o.key.split("*.", 1)[1] for o in ALL_OPTIONS if o.key.startswith("fields.*."))
_ATTRS = {o.key.replace(".", "_").replace("-", "_"): o for o in _BY_KEY.values()}
assert len(_ATTRS) == len(_BY_KEY), "two options map to the same accessor name"


def find_option(key: str) -> ConfigOption | None:
    """The declaration of ``key`` (exact key first, then patterns), or None if unknown."""
    exact = _BY_KEY.get(key)
    if exact is not None:
        return exact
    for regex, option in _PATTERNS:
        if regex.match(key):
            return option
    return None


class CoreOptions:
    """A typed, read-only view over a table's ``str -> str`` options.

    Every non-pattern option is readable as an attribute named after its key with ``.`` and
    ``-`` replaced by ``_`` (``options.snapshot_time_retained`` → milliseconds). The properties
    below add the derived defaults Paimon computes.
    """

    __slots__ = ("_options",)

    def __init__(self, options: Mapping[str, str]) -> None:
        self._options = dict(options)

    def get(self, option: ConfigOption, key: str | None = None) -> Any:
        """The parsed value of ``option`` (``key`` names the concrete key of a pattern option)."""
        key = key or option.key
        raw = self._options.get(key)
        return option.default if raw is None else option.parse(raw, key, validate=False)

    def field_option(self, option: ConfigOption, column: str) -> Any:
        """A per-column option such as ``fields.<column>.aggregate-function``."""
        return self.get(option, option.key.replace("*", column))

    def to_dict(self) -> dict[str, str]:
        return dict(self._options)

    def __contains__(self, key: object) -> bool:
        return key in self._options

    def __getattr__(self, name: str) -> Any:
        option = _ATTRS.get(name)
        if option is None:
            raise AttributeError(f"no table option is read as {name!r}")
        return self.get(option)

    def __repr__(self) -> str:
        return f"CoreOptions({self._options!r})"

    # -- typed accessors with derived defaults ---------------------------------------------
    @property
    def bucket(self) -> int:
        return int(self.get(BUCKET))

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        return self.get(BUCKET_KEY) or ()

    @property
    def merge_engine(self) -> str:
        return str(self.get(MERGE_ENGINE))

    @property
    def changelog_producer(self) -> str:
        return str(self.get(CHANGELOG_PRODUCER))

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        return self.get(SEQUENCE_FIELD) or ()

    @property
    def file_format(self) -> str:
        return str(self.get(FILE_FORMAT)).strip().lower()

    @property
    def file_compression(self) -> str:
        return str(self.get(FILE_COMPRESSION))

    @property
    def file_compression_level(self) -> int | None:
        """The zstd level of data files (``file.compression.zstd-level``); None for other codecs."""
        return int(self.get(FILE_COMPRESSION_ZSTD_LEVEL)) if self.file_compression == "zstd" else None

    @property
    def manifest_compression(self) -> str:
        return str(self.get(MANIFEST_COMPRESSION))

    def target_file_size(self, has_primary_key: bool) -> int:
        """Rolling size of data files in bytes: the option, else 128 mb (PK) / 256 mb (append)."""
        v = self.get(TARGET_FILE_SIZE)
        return v if v is not None else (128 * _MB if has_primary_key else 256 * _MB)

    @property
    def write_buffer_size(self) -> int:
        return int(self.get(WRITE_BUFFER_SIZE))

    @property
    def num_sorted_run_compaction_trigger(self) -> int:
        return int(self.get(NUM_SORTED_RUN_COMPACTION_TRIGGER))

    @property
    def num_sorted_run_stop_trigger(self) -> int:
        """The option, else compaction trigger + 3 (never below the trigger)."""
        v = self.get(NUM_SORTED_RUN_STOP_TRIGGER)
        trigger = self.num_sorted_run_compaction_trigger
        return max(v, trigger) if v is not None else trigger + 3

    @property
    def num_levels(self) -> int:
        """The option, else compaction trigger + 1."""
        v = self.get(NUM_LEVELS)
        return v if v is not None else self.num_sorted_run_compaction_trigger + 1

    @property
    def commit_max_retries(self) -> int:
        return int(self.get(COMMIT_MAX_RETRIES))

    @property
    def commit_timeout(self) -> int | None:
        """Milliseconds, or None for no limit."""
        return self.get(COMMIT_TIMEOUT)

    @property
    def commit_min_retry_wait(self) -> int:
        return int(self.get(COMMIT_MIN_RETRY_WAIT))

    @property
    def commit_max_retry_wait(self) -> int:
        return int(self.get(COMMIT_MAX_RETRY_WAIT))

    @property
    def change_tracking(self) -> bool:
        return bool(self.get(CHANGE_TRACKING))

    @property
    def changelog_num_retained_min(self) -> int:
        v = self.get(CHANGELOG_NUM_RETAINED_MIN)
        return v if v is not None else int(self.get(SNAPSHOT_NUM_RETAINED_MIN))

    @property
    def changelog_num_retained_max(self) -> int:
        v = self.get(CHANGELOG_NUM_RETAINED_MAX)
        return v if v is not None else int(self.get(SNAPSHOT_NUM_RETAINED_MAX))

    @property
    def changelog_time_retained(self) -> int:
        v = self.get(CHANGELOG_TIME_RETAINED)
        return v if v is not None else int(self.get(SNAPSHOT_TIME_RETAINED))

    def aggregate_function(self, column: str) -> str | None:
        """``fields.<column>.aggregate-function``, else ``fields.default-aggregate-function``."""
        return self.field_option(FIELDS_AGGREGATE_FUNCTION, column) or self.get(
            FIELDS_DEFAULT_AGGREGATE_FUNCTION
        )

    def ignore_retract(self, column: str) -> bool:
        return bool(self.field_option(FIELDS_IGNORE_RETRACT, column))

    def sequence_groups(self) -> dict[tuple[str, ...], tuple[str, ...]]:
        """partial-update sequence groups: sequence columns → the columns they guard."""
        out: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key, raw in self._options.items():
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                seq = tuple(c.strip() for c in key[len("fields.") : -len(".sequence-group")].split(","))
                out[seq] = FIELDS_SEQUENCE_GROUP.parse(raw, key)
        return out


def iter_field_option_columns(options: Iterable[str]) -> Iterable[tuple[str, tuple[str, ...]]]:
    """For each ``fields.<cols>.<suffix>`` key: (key, the column names it names)."""
    for key in options:
        if key.startswith("fields.") and key != FIELDS_DEFAULT_AGGREGATE_FUNCTION.key:
            for suffix in _FIELD_SUFFIXES:
                if key.endswith("." + suffix) and len(key) > len("fields.") + len(suffix) + 1:
                    middle = key[len("fields.") : -len(suffix) - 1]
                    yield key, tuple(c.strip() for c in middle.split(","))
                    break
