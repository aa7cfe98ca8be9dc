"""Batch reads of managed tables at Spark's own Parquet speed: native scan of what needs no merge.

```
 driver:  engine plan (snapshot, pruning filter) ── engine.classify_raw
            ├─ raw files (append, one sorted run, $ro) ─► spark.read.parquet per schema version
            │        columns mapped by field id, widened types cast, -U/-D rows filtered
            └─ splits that need a merge ─► the dyntable Python source, told to read only those
                                           (option ``native-scan.merge-only`` = the planned snapshot)
          unionByName of the two
```
Spark then prunes columns and pushes the query's filters into its Parquet scan itself (through
the projection and the union), so both parts see them. Rows are identical to the Python path's:
the same plan (same snapshot, same pruning filter), the same column mapping by field id (a column
missing from an old file reads as NULL), the same retraction filter (keep ``+I``/``+U``).

The Python source alone is used when the native scan cannot help or is off: streaming reads,
system tables other than ``$ro``, ``read.changelog``, incremental reads, files that carry a
deletion vector (the Python source reads them filter-first: docs/native-scan.md), count-layout
tables, storage other than the local file system (Spark would need its own
credentials for object stores), files of types Spark's Parquet reader does not map the same
way (TIME, nested types whose shape changed between schema versions), and when it is turned
off: ``read.native-scan.enabled = false`` as a read option (``/*+ OPTIONS(...) */``, a
DataFrame option), a table option, or a session setting (``SET read.native-scan.enabled =
false`` / ``spark.conf.set``, or ``spark.dyntable.read.native-scan.enabled`` as a Spark setting),
first found wins.

Public: :func:`read_table` (DataFrame users) and :func:`load` (the SQL session's binding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from engine import ADD_KINDS, ReadBuilder, Table, TableSchema, metadata_names
from engine import predicate as P
from sqlext.parse.names import quoted
from sqlext.source.datasource import option_filter, projection, read_builder, resolve
from sqlext.source.requests import ReadRequest, TableTarget
from sqlext.source.spark_types import spark_schema

if TYPE_CHECKING:
    from engine.builders.read import RawGroup

#: Read option / table option / session setting that turns the native scan off.
ENABLED = "read.native-scan.enabled"
VALUE_KIND = "_VALUE_KIND"
#: The same switch as a Spark setting (``spark-submit --conf``; Spark ignores keys without ``spark.``).
SPARK_CONF = "spark.dyntable." + ENABLED
_LOCAL_SCHEMES = ("", "file")
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def read_table(
    spark: SparkSession,
    name: str,
    warehouse: str,
    *,
    columns: Sequence[str] | None = None,
    filter: P.Predicate | None = None,
    catalog_options: dict[str, Any] | None = None,
    **options: str,
) -> DataFrame:
    """A batch DataFrame of managed table ``name`` (``db.t``, ``db.t$branch_b``, ``db.t$ro``).

    Args:
        spark: the session (the ``dyntable`` source must be registered: ``sqlext.spark.register``).
        name: the table, optionally with a branch or system table suffix.
        warehouse: the warehouse path.
        columns: the columns to read (default all); Spark prunes further by itself.
        filter: an engine predicate used to skip partitions, buckets and files (the caller still
            applies its own filter with ``where``; Spark pushes that into the Parquet scan).
        catalog_options: storage options for ``open_catalog`` (endpoint, credentials).
        **options: any option of the ``dyntable`` source (time travel ``scan.snapshot-id``,
            ``scan.tag-name``, ``scan.timestamp-millis``, ``branch``, ``read.native-scan.enabled``...).
    """
    target = TableTarget(warehouse, name, storage=dict(catalog_options or {}))
    request = ReadRequest.from_options({**target.to_options(), **{k: str(v) for k, v in options.items()}})
    request = replace(
        request,
        columns=tuple(columns) if columns is not None else request.columns,
        filter=P.to_json(filter) if filter is not None else request.filter,
    )
    return load(spark, request)


def load(spark: SparkSession, request: ReadRequest) -> DataFrame:
    """The batch DataFrame of one read request (native where it can be)."""
    frame = native_frame(spark, request)
    if frame is not None:
        return frame
    return spark.read.format("dyntable").options(**request.to_options()).load()


def enabled(spark: SparkSession, request: ReadRequest, table: Table) -> bool:
    """Whether the native scan is on for this read: read option, table option, session, default true."""
    session = (_conf(spark, ENABLED), _conf(spark, SPARK_CONF))
    for value in (request.passthrough.get(ENABLED), table.options.get(ENABLED), *session):
        if value is not None:
            return str(value).strip().lower() != "false"
    return True


def _conf(spark: SparkSession, key: str) -> str | None:
    try:
        return spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a session without such a key
        return None


def native_frame(spark: SparkSession, request: ReadRequest) -> DataFrame | None:
    """The native + Python union for this request, or None when the Python source alone should read."""
    table, system = resolve(request)
    ro = system is not None and system.lower() == "ro"
    if (system is not None and not ro) or request.changelog or request.incremental is not None:
        return None
    if not enabled(spark, request, table) or not _local(table.path):
        return None
    if not table.new_read_builder().reads_raw():
        return None
    builder = read_builder(request, table)
    table = builder.table  # a snapshot reads in its own schema
    columns = projection(request, table)
    if set(columns) & set(metadata_names(table.schema)):
        return None  # _ROW_ID, __paimon_file_path, ...: computed per file by the Python source
    builder = builder.with_filter(option_filter(request, table)).with_read_optimized(ro)
    plan = builder.new_scan().plan()
    if plan.snapshot is None:
        return None
    native = builder.native_plan(plan.splits)
    # (an external path may be remote)
    if not native.files or not all(_local(f.path) for f in native.files):
        return None
    arrow = table.arrow_schema
    target = spark_schema(pa.schema([arrow.field(c) for c in columns]))
    parts: list[DataFrame] = []
    for group in native.groups:
        try:
            part = _group_frame(spark, builder, group, columns, target)
        except AnalysisException:
            # A file the snapshot lists is missing or unreadable: the Python source reports it
            # as the typed error (corrupt metadata / corrupt data) it is.
            return None
        if part is None:
            return None  # a file Spark would read differently: the Python path reads it all
        parts.append(part)
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.union(part)  # same columns, same order, same types
    if native.merge_splits:
        rest = replace(request, merge_only=plan.snapshot.id)
        frame = frame.unionByName(spark.read.format("dyntable").options(**rest.to_options()).load())
    return frame


def _local(path: str) -> bool:
    scheme = path.split("://", 1)[0].lower() if "://" in path else ""
    return scheme in _LOCAL_SCHEMES


def _group_frame(
    spark: SparkSession, builder: ReadBuilder, group: RawGroup, columns: list[str], target: StructType
) -> DataFrame | None:
    """``spark.read.parquet`` of one group's files, shaped as the current schema's ``columns``."""
    file_schema: TableSchema = builder.schema_of(group.schema_id)
    current = builder.schema
    physical: list[StructField] = []
    selected = []
    try:
        file_struct = spark_schema(file_schema.arrow_schema())
    except Exception:  # noqa: BLE001 - a type Spark cannot declare: leave it to the Python path
        return None
    for name, out in zip(columns, target.fields, strict=True):
        field = current.field(name)
        if _unmapped(field.type):
            return None
        try:
            old = file_schema.field_by_id(field.id)
        except LookupError:
            # added after this file: NULL
            selected.append(F.lit(None).cast(out.dataType).alias(name, metadata=out.metadata or {}))
            continue
        read = file_struct[old.name]
        if read.dataType != out.dataType and (_nested(read.dataType) or _nested(out.dataType)):
            return None  # Spark casts structs by position, the Python path by field id
        if _field_ids(old.type) != _field_ids(field.type):
            return None  # a nested field dropped and added again: the same names, other ids
        if all(p.name != old.name for p in physical):
            physical.append(StructField(old.name, read.dataType, True))
        column = F.col(quoted(old.name))
        if read.dataType != out.dataType:
            column = column.cast(out.dataType)
        selected.append(column.alias(name, metadata=out.metadata or {}))  # CHAR(n): Spark's char metadata
    if group.may_retract:
        from pyspark.sql.types import ByteType

        physical.append(StructField(VALUE_KIND, ByteType(), False))
    frame = _read_parquet(spark, StructType(physical), [_uri(p) for p in group.paths])
    if group.may_retract:
        frame = frame.where(F.col(VALUE_KIND).isin(*ADD_KINDS))
    return frame.select(*selected)


def _read_parquet(spark: SparkSession, schema: StructType, paths: list[str]) -> DataFrame:
    """``spark.read.parquet`` of known files, listed in the driver.

    Spark lists more than ``parallelPartitionDiscovery.threshold`` (32) paths with a Spark job,
    which costs seconds (measured: 500 files, 2.3 s vs 0.14 s listed in the driver). The paths
    here are files the plan named, not directory trees: one status call each is all it takes.
    """
    conf = spark.conf
    previous = _conf(spark, _LISTING_THRESHOLD)
    conf.set(_LISTING_THRESHOLD, str(max(len(paths) + 1, 32)))
    try:
        reader = spark.read.schema(schema) if schema.fields else spark.read
        return reader.parquet(*paths)
    finally:
        if previous is None:
            conf.unset(_LISTING_THRESHOLD)
        else:
            conf.set(_LISTING_THRESHOLD, previous)


def _unmapped(t: Any) -> bool:
    """Types Spark's Parquet reader returns differently from the Python path (TIME → string)."""
    from engine.types import TypeRoot

    root = getattr(t, "root", None)
    if root == TypeRoot.TIME:
        return True
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and (t.precision or 6) > 6:
        return True  # nanoseconds: Spark's Parquet reader refuses them, the Python path truncates
    return any(_unmapped(c) for c in _children(t))


def _children(t: Any) -> list[Any]:
    out = []
    for attr in ("element", "key", "value"):
        child = getattr(t, attr, None)
        if child is not None and hasattr(child, "root"):
            out.append(child)
    for f in getattr(t, "fields", None) or ():
        out.append(f.type)
    return out


def _field_ids(t: Any) -> list[int]:
    """The ids of the ROW fields nested in ``t``, depth first."""
    out = []
    for f in getattr(t, "fields", None) or ():
        out.append(f.id)
        out.extend(_field_ids(f.type))
    for attr in ("element", "key", "value"):
        child = getattr(t, attr, None)
        if child is not None and hasattr(child, "root"):
            out.extend(_field_ids(child))
    return out


def _nested(t: Any) -> bool:
    from pyspark.sql.types import ArrayType, MapType

    return isinstance(t, StructType | ArrayType | MapType)


def _uri(path: str) -> str:
    """A path Spark reads as a local file (no glob expansion of ``[`` / ``*`` in names)."""
    if path.startswith("file:"):
        return path
    return "file://" + path
