"""Primary-key writes that keep the bytes in the JVM: Spark buckets, deduplicates, sorts and
writes the level-0 files with its own Parquet writer; the engine describes them from their
footers and commits them (``engine.KvFileImport``).

```
 driver   WriteBuilder.kv_import_unsupported()  which tables qualify (deduplicate / first-row, fixed bucket…)
          KvFileImport.sequence_starts()         each bucket's first free sequence number
 Spark    + _mono: monotonically_increasing_id (the input order)   + bucket (bucket_shuffle.with_bucket)
          + _SEQUENCE_NUMBER = the bucket's start + _mono      + _VALUE_KIND (0, or from ``rowkind``)
          exchange: one bucket per task (unpartitioned) or by (partition, bucket)
          sort by key, then the sequence (newest first for deduplicate, oldest for first-row);
          row_number() over the key = 1: one row per key, the one the merge engine keeps
          write.parquet: _KEY_<k>, _SEQUENCE_NUMBER, _VALUE_KIND, columns (field ids, the table's codec)
 driver   KvFileImport.import_files: footers → DataFileMeta, files moved to <partition>/bucket-<n>/
          CommitBuilder.commit: one snapshot, then the post-commit hooks (compaction, expiration)
```

The rows stored are the ones the engine's writer stores for the same input: per key the last row
in the input's order (deduplicate: whatever its kind, so a ``-D`` shadows older files) or the first
(first-row); the input's order is Spark's ``monotonically_increasing_id`` order (partition, then
row), which is also the order in which the engine's writer numbers a task's rows. Sequence numbers
start after each bucket's largest live number, as the engine's writer starts them, and grow with
the input order (the id's gaps are kept: numbers need to order rows, not to be dense); the
commit re-bases them if another write commits first.

When: a fixed-bucket primary-key table the import accepts (``KvFileImport.unsupported``), on the
local file system, whose write is shuffled by bucket anyway (``bucket_shuffle.wants_shuffle``:
inputs of 8 MB or more, or ``write.bucket-shuffle`` = true), whose rows already have the table's
column names and Spark types (SQL writes shape them; a DataFrame's columns may also widen
losslessly), and when ``write.native-write.enabled`` = true (a write option, table option,
session setting or ``spark.dyntable.write.native-write.enabled``, first found wins). Anything
else takes the Python writer (``sqlext.source.write_job``), unchanged.

Off by default: measured on 2 shared cores (``docs/benchmarks.md``, W2n), the Python writer is
faster. Spark's part alone (exchange, sort, the window that keeps one row per key, parquet-mr
with zstd) takes longer than the exchange, the Arrow crossing and the engine's writer (pyarrow's
sort and C++ Parquet writer) together.

A failed Spark job or import publishes nothing: the staging directory goes, and the job's abort
(``WriteBuilder.abort_job``) deletes any file already moved into a bucket.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from engine import (
    CommitBuilder,
    CommitResult,
    CommitStateUnknownError,
    InvalidArgumentError,
    KvFileImport,
    MergeConfig,
    SequenceStarts,
    StagedFile,
    Table,
    WriteBuilder,
)
from sqlext.execute import bucket_shuffle
from sqlext.execute.compaction import spark_runner
from sqlext.parse.names import quoted
from sqlext.source.requests import TableTarget
from sqlext.source.spark_types import spark_schema

__all__ = ["ENABLED", "SPARK_CONF", "enabled", "write", "write_table"]

#: Write option / table option / session setting that turns the native write off.
ENABLED = "write.native-write.enabled"
SPARK_CONF = "spark.dyntable." + ENABLED
ROWKIND = "rowkind"
DIR = "__dyntable_dir"  # the (bucket, partition) a row's file belongs to, as a directory of the staging area
_MONO = "__dyntable_mono"
_SEQ = "__dyntable_seq"
_KIND = "__dyntable_kind"
_SLOT = "__dyntable_slot"
_RANK = "__dyntable_rank"
_START = "__dyntable_start"
_ERROR_MARK = "[dyntable-native-write] "
_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
#: The engine's writer bounds dictionary pages at this size too (engine.write.file_writer).
_DICTIONARY_PAGE_BYTES = 128 * 1024
_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4_raw", "none": "none",
           "uncompressed": "none"}
_WIDENINGS = {
    (T.ByteType, T.ShortType), (T.ByteType, T.IntegerType), (T.ByteType, T.LongType),
    (T.ShortType, T.IntegerType), (T.ShortType, T.LongType), (T.IntegerType, T.LongType),
    (T.FloatType, T.DoubleType),
}


# ------------------------------------------------------------------------------------------------
# When
# ------------------------------------------------------------------------------------------------
def _conf(spark: Any, key: str) -> str | None:
    try:
        return spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a session without such a key
        return None


def enabled(spark: Any, table: Table, options: Mapping[str, str] | None = None,
            session_options: Mapping[str, str] | None = None) -> bool:
    """Whether the native write is on: write option, table option, session setting, Spark
    setting, default false (see the module docstring)."""
    for value in ((options or {}).get(ENABLED), table.options.get(ENABLED),
                  (session_options or {}).get(ENABLED), _conf(spark, ENABLED), _conf(spark, SPARK_CONF)):
        if value is not None:
            return str(value).strip().lower() == "true"
    return False


def _local(path: str) -> bool:
    return "://" not in path or path.split("://", 1)[0].lower() == "file"


def _uri(path: str) -> str:
    return path if path.startswith("file:") else "file://" + path


# ------------------------------------------------------------------------------------------------
# The Spark plan
# ------------------------------------------------------------------------------------------------
def _fail(message: str) -> Column:
    return F.raise_error(F.lit(_ERROR_MARK + message))


def _typed_columns(frame: DataFrame, table: Table) -> list[Column] | None:
    """The table's columns from ``frame``, of the table's Spark types (lossless widenings cast),
    NOT NULL columns checked; None when a column is missing or would need another conversion."""
    target = spark_schema(table.arrow_schema)
    have = {f.name: f for f in frame.schema.fields}
    utc = (_conf(frame.sparkSession, "spark.sql.session.timeZone") or "").upper() in ("UTC", "Z", "+00:00")
    out = []
    for want, field in zip(target.fields, table.schema.fields, strict=True):
        got = have.get(want.name)
        if got is None:
            return None
        col = F.col(quoted(want.name))
        if got.dataType != want.dataType:
            widening = (type(got.dataType), type(want.dataType)) in _WIDENINGS
            # an instant becomes its UTC wall clock in the engine's writer; Spark's cast agrees in UTC
            wall_clock = (isinstance(got.dataType, T.TimestampType)
                          and isinstance(want.dataType, T.TimestampNTZType) and utc)
            if not (widening or wall_clock):
                return None
            col = col.cast(want.dataType)
        if not field.type.nullable and got.nullable:
            message = f"column '{want.name}' is NOT NULL but a row is NULL"
            col = F.when(col.isNull(), _fail(message)).otherwise(col)
        out.append(col.alias(want.name))
    return out


def _kind(columns: list[str]) -> Column:
    if ROWKIND not in columns:
        return F.lit(0).cast("byte")
    kind = F.col(ROWKIND)
    expr = None
    for text, value in _KINDS.items():
        expr = (F.when if expr is None else expr.when)(kind == text, F.lit(value))
    assert expr is not None
    return expr.otherwise(_fail("a rowkind is not one of '+I', '-U', '+U', '-D'")).cast("byte")


def files_frame(
    frame: DataFrame, table: Table, imp: KvFileImport, starts: SequenceStarts, session: Any
) -> tuple[DataFrame, bool] | None:
    """The DataFrame Spark writes (one row per key and bucket, sorted by key within its file) and
    whether it is written partitioned by :data:`DIR`; None when a column or type is not covered.
    ``starts``: the sequence numbers each bucket continues."""
    schema = table.schema
    config = MergeConfig.from_options(schema.options, schema.primary_keys)
    if ROWKIND in frame.columns and config.engine == "first-row":
        return None  # retractions are an error or dropped there: the engine's writer says which
    names = frame.columns
    columns = _typed_columns(frame, table)
    if columns is None or any(c not in [f.name for f in schema.fields] + [ROWKIND] for c in names):
        return None
    rows = frame.select(*columns, _kind(names).alias(_KIND))
    if config.ignore_delete:
        rows = rows.where(~F.col(_KIND).isin(1, 3))
    rows = rows.withColumn(_MONO, F.monotonically_increasing_id())
    bucketed = bucket_shuffle.table_bucket(rows, table)
    if bucketed is None:
        return None
    bucket = F.col(bucket_shuffle.BUCKET_COLUMN)
    buckets = table.core_options.bucket
    parts = list(schema.partition_keys)
    one_per_task = not parts and buckets <= bucket_shuffle.shuffle_partitions(session)
    if parts:
        types = [schema.field(p).type for p in parts]
        row = bucket_shuffle.binary_row([F.col(quoted(p)) for p in parts], types)
        if row is None:
            return None
        bucketed = bucketed.withColumn(DIR, F.concat(bucket.cast("string"), F.lit("-"), F.lower(F.hex(row))))
        lookup = [(f"{b}-{p.hex()}", s) for (p, b), s in starts.starts.items()]
        if lookup:
            table_of_starts = session.createDataFrame(lookup, f"{DIR} string, {_START} long")
            bucketed = bucketed.join(F.broadcast(table_of_starts), on=DIR, how="left")
            start = F.coalesce(F.col(_START), F.lit(starts.default).cast("long"))
        else:
            start = F.lit(starts.default).cast("long")
    else:
        by_bucket = [starts.starts.get((b"", b), starts.default) for b in range(buckets)]
        start = F.coalesce(F.element_at(F.array(*[F.lit(v).cast("long") for v in by_bucket]), bucket + 1),
                           F.lit(starts.default).cast("long"))
        bucketed = bucketed.withColumn(DIR, F.concat(bucket.cast("string"), F.lit("-")))
    bucketed = bucketed.withColumn(_SEQ, start + F.col(_MONO))
    keys = [F.col(quoted(k)) for k in schema.trimmed_primary_keys]
    newest_first = F.col(_SEQ).desc() if config.engine == "deduplicate" else F.col(_SEQ).asc()
    if one_per_task:
        # Spark partition b % n holds bucket b (bucket_shuffle.stand_ins): one bucket per task, so
        # the window's required order can start with the key (a sort prefix that discriminates).
        n = min(buckets, bucket_shuffle.shuffle_partitions(session))
        slots = F.array(*[F.lit(v) for v in bucket_shuffle.stand_ins(n)])
        shuffled = bucketed.withColumn(_SLOT, F.element_at(slots, (bucket % n + 1).cast("int"))).repartition(
            n, F.col(_SLOT))
        window = Window.partitionBy(*keys, F.col(_SLOT)).orderBy(newest_first)
    else:
        shuffled = bucketed.repartition(F.col(DIR))
        window = Window.partitionBy(F.col(DIR), *keys).orderBy(newest_first)
    kept = shuffled.withColumn(_RANK, F.row_number().over(window)).where(F.col(_RANK) == 1)
    arrow = imp.physical_schema()
    out = []
    for field in spark_schema(arrow).fields:
        name = field.name
        if name.startswith("_KEY_"):
            source = F.col(quoted(name[len("_KEY_"):]))
        elif name == "_SEQUENCE_NUMBER":
            source = F.col(_SEQ)
        elif name == "_VALUE_KIND":
            source = F.col(_KIND)
        else:
            source = F.col(quoted(name))
        field_id = int((arrow.field(name).metadata or {})[b"PARQUET:field_id"])
        out.append(source.cast(field.dataType).alias(name, metadata={"parquet.field.id": field_id}))
    partitioned = not one_per_task
    if partitioned:
        out.append(F.col(DIR))
    return kept.select(*out), partitioned


# ------------------------------------------------------------------------------------------------
# The write
# ------------------------------------------------------------------------------------------------
def _staged_files(imp: KvFileImport, partitioned: bool) -> list[StagedFile]:
    files = []
    for status in imp.store.io.list_files_recursive(imp.staging_dir):
        path = status.path
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if not name.startswith("part-") or not name.endswith(".parquet"):
            continue  # _SUCCESS, checksums
        if not partitioned:
            files.append(StagedFile(path))
            continue
        parent = path.rstrip("/").rsplit("/", 2)[-2]
        if not parent.startswith(DIR + "="):
            raise InvalidArgumentError(f"unexpected file {path} in the staging directory")
        bucket, _, partition = parent[len(DIR) + 1:].partition("-")
        files.append(StagedFile(path, bytes.fromhex(partition), int(bucket)))
    return files


def _writer(out: DataFrame, table: Table, partitioned: bool) -> Any:
    opts = table.core_options
    # Bounded dictionaries, as the engine's writer: a high-cardinality column (keys, hashes) would
    # otherwise build a 1 MB dictionary it then throws away.
    writer = out.write.option("compression", _CODECS[opts.file_compression]).option(
        "parquet.dictionary.page.size", str(_DICTIONARY_PAGE_BYTES))
    if opts.file_compression_level is not None:
        writer = writer.option("parquet.compression.codec.zstd.level", str(opts.file_compression_level))
    # TIMESTAMP_LTZ as INT64 microseconds (UTC-adjusted), as Paimon stores it; Spark's default is INT96.
    writer = writer.option("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    return writer.partitionBy(DIR) if partitioned else writer


def write(
    frame: DataFrame,
    builder: WriteBuilder,
    commit: CommitBuilder,
    *,
    options: Mapping[str, str] | None = None,
    session_options: Mapping[str, str] | None = None,
) -> CommitResult | None:
    """Write ``frame`` into ``builder``'s table natively and commit it with ``commit``; None (and
    nothing done) when the native write does not apply (see the module docstring)."""
    table = builder.table
    spark = frame.sparkSession
    if (not enabled(spark, table, options, session_options) or not _local(table.path)
            or table.core_options.file_compression not in _CODECS
            or builder.kv_import_unsupported() is not None
            or not bucket_shuffle.wants_shuffle(frame, dict(session_options or {}))):
        return None
    job = str(uuid.uuid4())
    imp = builder.new_kv_import(job)
    starts = imp.sequence_starts()
    planned = files_frame(frame, table, imp, starts, spark)
    if planned is None:
        return None
    out, partitioned = planned
    try:
        try:
            _writer(out, table, partitioned).parquet(_uri(imp.staging_dir))
        except Exception as e:
            if _ERROR_MARK in str(e):
                message = str(e).split(_ERROR_MARK, 1)[1].split("\n", 1)[0].split(" SQLSTATE", 1)[0]
                raise InvalidArgumentError(message) from None
            raise
        messages = imp.import_files(_staged_files(imp, partitioned), starts.snapshot_id)
    except BaseException:
        imp.delete_staging()
        builder.abort_job(job)  # nothing was committed
        raise
    imp.delete_staging()
    try:
        result = commit.commit(messages)
    except CommitStateUnknownError:
        raise  # the snapshot may reference these files: keep them
    except BaseException:
        builder.delete_job_files(job)
        raise
    if commit.identifier is not None and not result.snapshot_ids and messages:
        builder.delete_job_files(job)  # a replayed, already-committed identifier
    return result


def write_table(
    df: DataFrame,
    name: str,
    warehouse: str,
    *,
    mode: str = "append",
    shuffle: str | None = None,
    catalog_options: dict[str, Any] | None = None,
    **options: str,
) -> None:
    """Write ``df`` into managed table ``name`` (``db.t``): the DataFrame counterpart of an INSERT.
    Natively (this module) where it applies, else grouped by bucket first when that pays
    (``bucket_shuffle.for_write``) and written through the ``dyntable`` source.

    Args:
        df: rows with the table's column names (a ``rowkind`` column gives each row's change kind).
        name: the table.
        warehouse: the warehouse path.
        mode: ``append`` or ``overwrite`` (as ``df.write.mode``).
        shuffle: ``auto``, ``true`` or ``false`` (default: the Spark setting
            ``spark.dyntable.write.bucket-shuffle``, else ``auto``).
        catalog_options: storage options for ``open_catalog``.
        **options: any write option of the ``dyntable`` source.
    """
    target = TableTarget(warehouse, name, storage=dict(catalog_options or {}))
    table = target.open()
    session_options = {bucket_shuffle.SETTING: shuffle} if shuffle is not None else None
    if mode == "append" and set(options) <= {ENABLED}:
        builder = table.new_write_builder(None, commit_user=f"spark-{uuid.uuid4()}")
        commit = builder.new_commit().with_compaction_runner(spark_runner(df.sparkSession))
        if write(df, builder, commit, options=options, session_options=session_options) is not None:
            return
    frame = bucket_shuffle.for_write(df, table, session_options)
    frame.write.format("dyntable").options(**target.to_options(), **options).mode(mode).save()
