"""Executors of DESCRIBE [TABLE] [EXTENDED] t [PARTITION (...)] [col], SHOW CREATE TABLE, SHOW PARTITIONS.

Everything here reads metadata only (schema, latest snapshot, planned files): no Spark job runs.
Invariants:
* DESCRIBE answers ``col_name, data_type, comment`` rows like Spark: the columns with the type
  Spark reads them as, in Spark's lower-case text (``bigint``, ``decimal(10,2)``,
  ``timestamp_ntz``, ``struct<a:int>``; nullability shows in SHOW CREATE TABLE), which is what
  Hive clients parse (PyHive's SQLAlchemy dialect reflects column types from it), then
  ``# Partition Information``, then (EXTENDED) ``# Detailed Table Information`` key/value rows,
  or with a PARTITION ``# Detailed Partition Information``;
* SHOW CREATE TABLE prints a Flink/dyntable-style statement that creates an equal schema when run
  under another name (computed columns and the watermark come back from their
  ``dyntable.computed-column.*`` / ``dyntable.watermark.*`` options, which are not repeated in WITH);
* partitions print the way Spark prints them: ``k1=v1/k2=v2`` with ISO dates and Hive escaping.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine import Table, coerce_spec, escape_path_name, partition_value_string
from engine.options import format_duration
from engine.types import DataType, type_to_sql
from sqlext.errors import SqlAnalysisError
from sqlext.execute.common import (
    COMPUTED_PREFIX,
    WATERMARK_PREFIX,
    computed_columns,
    paimon_to_spark_ddl,
    rows,
)
from sqlext.execute.procedures import live_partitions
from sqlext.execute.results import StatementResult
from sqlext.parse import ast
from sqlext.parse.names import quote_name
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession

CATALOG_NAME = "dyntable"
INTERNAL_OPTION_PREFIXES = (COMPUTED_PREFIX, WATERMARK_PREFIX)
_DESCRIBE_SCHEMA = pa.schema(
    [("col_name", pa.string()), ("data_type", pa.string()), ("comment", pa.string())]
)


def _to_spark(s: SqlSession, stmt: Statement) -> StatementResult:

    return StatementResult(stmt, s.spark.sql(stmt.text), None)


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# -- partitions ------------------------------------------------------------------------------------
def checked_spec(
    table: Table, spec: ast.PartitionSpec, stmt: Statement, *, full: bool = False
) -> dict[str, Any]:
    """A PARTITION (...) clause as typed values, checked against the table's partition columns.

    Raises:
        SqlAnalysisError: the table is not partitioned (42000), a column is not a partition column
            (42703), or ``full`` and a partition column is missing (42000).
    """
    keys = table.partition_keys

    def error(message: str, sqlstate: str) -> SqlAnalysisError:
        return SqlAnalysisError(message, line=stmt.line, column=stmt.column, sqlstate=sqlstate)

    if not keys:
        raise error(f"table '{table.name}' is not partitioned; remove the PARTITION clause", "42000")
    raw: dict[str, Any] = {}
    for col, value in spec.values().items():
        key = next((k for k in keys if k.lower() == col.lower()), None)
        if key is None:
            raise error(
                f"'{col}' is not a partition column of '{table.name}'; partition columns: {list(keys)}",
                "42703",
            )
        raw[key] = value
    if full and set(raw) != set(keys):
        missing = [k for k in keys if k not in raw]
        raise error(f"the PARTITION clause must give every partition column; missing {missing}", "42000")
    return coerce_spec(table.schema, raw)


def partition_text(
    keys: Sequence[str], values: Sequence[Any], types: Sequence[DataType], default_name: str
) -> str:
    """``k1=v1/k2=v2`` as Spark's SHOW PARTITIONS prints it (ISO dates, Hive-escaped)."""
    return "/".join(
        f"{escape_path_name(k)}={escape_path_name(partition_value_string(v, t, default_name, legacy=False))}"
        for k, v, t in zip(keys, values, types, strict=True)
    )


def _matches(values: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    for k, wanted in spec.items():
        have = values[k]
        if have != wanted and (have is None or wanted is None or str(have) != str(wanted)):
            return False
    return True


def show_partitions(s: SqlSession, n: ast.ShowPartitions, stmt: Statement) -> StatementResult:
    """SHOW PARTITIONS t [PARTITION (...)]: one ``partition`` row per live partition."""
    if not s.is_managed(n.table):
        return _to_spark(s, stmt)
    table = s.table(n.table)
    keys = table.partition_keys
    if not keys:
        raise SqlAnalysisError(
            f"SHOW PARTITIONS needs a partitioned table; '{table.name}' is not partitioned",
            line=stmt.line,
            column=stmt.column,
            sqlstate="42000",
        )
    spec = checked_spec(table, n.partition, stmt) if n.partition else {}
    types = [table.schema.field(k).type for k in keys]
    # Spark's (and so Paimon's) SHOW PARTITIONS prints a NULL value as ``null``, not as the
    # table's partition.default-name (which is only the directory name).
    texts = [
        partition_text(keys, [p[k] for k in keys], types, "null")
        for p in live_partitions(table)
        if _matches(p, spec)
    ]
    return rows(s, stmt, pa.table({"partition": pa.array(texts, pa.string())}))


# -- DESCRIBE ---------------------------------------------------------------------------------------
def describe_table(s: SqlSession, n: ast.DescribeTable, stmt: Statement) -> StatementResult:
    """DESCRIBE [TABLE] [EXTENDED] t [PARTITION (...)] [col]."""
    if not s.is_managed(n.table):
        return _to_spark(s, stmt)
    if n.table.system_table is not None:
        return _describe_frame_columns(s, n, stmt)
    table = s.table(n.table)
    schema = table.schema
    if n.column is not None:
        f = schema.field(n.column)
        return rows(
            s,
            stmt,
            pa.table(
                {
                    "info_name": ["col_name", "data_type", "comment"],
                    "info_value": pa.array([f.name, paimon_to_spark_ddl(f.type), f.description], pa.string()),
                }
            ),
        )
    out: list[tuple[str, str, str | None]] = [
        (f.name, paimon_to_spark_ddl(f.type), f.description) for f in schema.fields
    ]
    if table.partition_keys:
        out.append(("# Partition Information", "", ""))
        out.append(("# col_name", "data_type", "comment"))
        out.extend(
            (f.name, paimon_to_spark_ddl(f.type), f.description)
            for f in schema.fields
            if f.name in table.partition_keys
        )
    if n.partition is not None:
        spec = checked_spec(table, n.partition, stmt, full=True)
        details = partition_details(table, spec, stmt)
        if n.extended or n.formatted:
            out.append(("", "", ""))
            out.append(("# Detailed Partition Information", "", ""))
            out.extend((k, v, "") for k, v in details)
    elif n.extended or n.formatted:
        out.append(("", "", ""))
        out.append(("# Detailed Table Information", "", ""))
        out.extend((k, v, "") for k, v in table_details(table))
    return rows(
        s,
        stmt,
        pa.Table.from_pylist(
            [dict(zip(_DESCRIBE_SCHEMA.names, r, strict=True)) for r in out], schema=_DESCRIBE_SCHEMA
        ),
    )


def _describe_frame_columns(s: SqlSession, n: ast.DescribeTable, stmt: Statement) -> StatementResult:
    """A system table: its columns as Spark sees them."""
    df = s.frame(f"SELECT * FROM {n.table}", stmt)
    fields = [f for f in df.schema.fields if n.column is None or f.name.lower() == n.column.lower()]
    return rows(
        s,
        stmt,
        pa.table(
            {
                "col_name": pa.array([f.name for f in fields], pa.string()),
                "data_type": pa.array([f.dataType.simpleString() for f in fields], pa.string()),
                "comment": pa.array([None] * len(fields), pa.string()),
            }
        ),
    )


def table_details(table: Table) -> list[tuple[str, str]]:
    """The ``# Detailed Table Information`` key/value pairs of DESCRIBE TABLE EXTENDED."""
    schema = table.schema
    opts = table.core_options
    ident = table.identifier
    name = f"{CATALOG_NAME}.{ident.database}.{ident.table}"
    if ident.branch and ident.branch != "main":
        name += f"$branch_{ident.branch}"
    latest = table.latest_snapshot()
    bucket_key = ",".join(schema.logical_bucket_keys) if opts.bucket > 0 else ""
    items: list[tuple[str, str]] = [
        ("Name", name),
        ("Type", "MANAGED"),
        ("Provider", CATALOG_NAME),
    ]
    if schema.comment:
        items.append(("Comment", schema.comment))
    items += [
        ("file.path", table.path),
        ("file.format", opts.file_format),
        ("bucket", str(opts.bucket)),
        ("bucket-key", bucket_key),
        ("change-tracking", "true" if opts.change_tracking else "false"),
        ("primary-key", ",".join(schema.primary_keys)),
        ("partition", ",".join(schema.partition_keys)),
        ("schema-id", str(schema.id)),
        ("latest-snapshot-id", "" if latest is None else str(latest.id)),
        ("record-count", "0" if latest is None else str(latest.total_record_count)),
        ("merge-engine", opts.merge_engine if schema.primary_keys else ""),
        ("changelog-producer", opts.changelog_producer),
        # The design's log system is Kafka; dyntable keeps changes in the table's own snapshots
        # and changelog files, so there is no external log and changes live as long as those.
        ("log.system", "none"),
        ("log.retention", format_duration(opts.changelog_time_retained)),
        ("options", "[" + ", ".join(f"{k}={v}" for k, v in sorted(table.options.items())) + "]"),
    ]
    return items


def partition_details(table: Table, spec: dict[str, Any], stmt: Statement) -> list[tuple[str, str]]:
    """The ``# Detailed Partition Information`` pairs of one live partition (``spec`` is full).

    Raises:
        SqlAnalysisError: the partition holds no data (428FT).
    """
    from engine import predicate as P

    keys = table.partition_keys
    predicate = P.and_(*[P.is_null(k) if v is None else P.equal(k, v) for k, v in spec.items()])
    splits = [
        sp
        for sp in table.new_scan().with_filter(predicate).plan().splits
        if _matches(dict(zip(keys, sp.partition_values, strict=True)), spec)
    ]
    if not splits:
        raise SqlAnalysisError(
            f"partition {spec} of '{table.name}' does not exist (it holds no data)",
            line=stmt.line,
            column=stmt.column,
            sqlstate="428FT",
        )
    values = splits[0].partition_values
    types = [table.schema.field(k).type for k in keys]
    opts = table.core_options
    files = {f.file_name: f for sp in splits for f in sp.files}
    directory = table.partition_dir(values)
    return [
        ("partition", partition_text(keys, values, types, opts.partition_default_name)),
        ("file.path", f"{table.path.rstrip('/')}/{directory}"),
        ("num-files", str(len(files))),
        ("record-count", str(sum(f.row_count for f in files.values()))),
        ("size-in-bytes", str(sum(f.file_size for f in files.values()))),
    ]


# -- SHOW CREATE TABLE ------------------------------------------------------------------------------
def create_table_statement(table: Table) -> str:
    """A CREATE TABLE statement that recreates ``table``'s schema (columns, keys, options)."""
    schema = table.schema
    options = dict(schema.options)
    computed = computed_columns(options)
    watermarks = {k[len(WATERMARK_PREFIX) :]: v for k, v in options.items() if k.startswith(WATERMARK_PREFIX)}
    lines = []
    for f in schema.fields:
        if f.name in computed:
            line = f"  {_sql_ident(f.name)} AS {computed[f.name]}"
        else:
            line = f"  {_sql_ident(f.name)} {type_to_sql(f.type)}"
        if f.description is not None:
            line += f" COMMENT {_sql_string(f.description)}"
        lines.append(line)
    for column, expression in sorted(watermarks.items()):
        lines.append(f"  WATERMARK FOR {_sql_ident(column)} AS {expression}")
    if schema.primary_keys:
        lines.append(f"  PRIMARY KEY ({', '.join(_sql_ident(k) for k in schema.primary_keys)}) NOT ENFORCED")
    ident = table.identifier
    name = ".".join(quote_name(p) for p in (ident.database, ident.table))
    text = f"CREATE TABLE {name} (\n" + ",\n".join(lines) + "\n)"
    if schema.comment is not None:
        text += f"\nCOMMENT {_sql_string(schema.comment)}"
    if schema.partition_keys:
        text += f"\nPARTITIONED BY ({', '.join(_sql_ident(k) for k in schema.partition_keys)})"
    visible = sorted((k, v) for k, v in options.items() if not k.startswith(INTERNAL_OPTION_PREFIXES))
    if visible:
        text += (
            "\nWITH (\n" + ",\n".join(f"  {_sql_string(k)} = {_sql_string(v)}" for k, v in visible) + "\n)"
        )
    return text


def show_create_table(s: SqlSession, n: ast.ShowCreateTable, stmt: Statement) -> StatementResult:
    """SHOW CREATE TABLE t: one ``createtab_stmt`` row."""
    if not s.is_managed(n.table):
        return _to_spark(s, stmt)
    if n.table.system_table is not None:
        raise SqlAnalysisError(
            f"'{n.table}' is a system table; SHOW CREATE TABLE needs a table",
            line=stmt.line,
            column=stmt.column,
            sqlstate="42809",
        )
    return rows(s, stmt, pa.table({"createtab_stmt": [create_table_statement(s.table(n.table))]}))


def table_properties(table: Table) -> dict[str, str]:
    """The properties Paimon's Spark table reports: the options plus ``primary-key``, less the
    internal computed-column and watermark options."""
    props = {k: v for k, v in table.options.items() if not k.startswith(INTERNAL_OPTION_PREFIXES)}
    if table.primary_keys:
        props["primary-key"] = ",".join(table.primary_keys)
    return props


def show_tblproperties(s: SqlSession, n: ast.ShowTableProperties, stmt: Statement) -> StatementResult:
    """SHOW TBLPROPERTIES t [('key')]: ``key``/``value`` rows sorted by key.

    The properties are those Paimon's Spark table reports: the options plus ``primary-key``,
    less Spark's reserved keys (the comment is shown by DESCRIBE). A key the table lacks gives
    one row saying so, as Spark does.
    """
    if not s.is_managed(n.table):
        return _to_spark(s, stmt)
    table = s.table(n.table)
    props = table_properties(table)
    if n.key is not None:
        value = props.get(n.key, f"Table {table.name} does not have property: {n.key}")
        pairs = [(n.key, value)]
    else:
        pairs = sorted(props.items())
    return rows(s, stmt, pa.table({"key": [k for k, _ in pairs], "value": [v for _, v in pairs]},
                                  schema=pa.schema([("key", pa.string()), ("value", pa.string())])))


HANDLERS: dict[type, Any] = {
    ast.DescribeTable: describe_table,
    ast.ShowCreateTable: show_create_table,
    ast.ShowTableProperties: show_tblproperties,
    ast.ShowPartitions: show_partitions,
}
