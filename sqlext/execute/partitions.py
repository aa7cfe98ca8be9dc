"""Partitions of a table as statements name and print them: PARTITION (...) clauses checked and
typed, the live partitions of the latest snapshot, and Spark's ``k1=v1/k2=v2`` text.

Metadata only (the schema, the latest snapshot's planned files): no Spark job runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine import Table, coerce_spec, escape_path_name, partition_value_string
from engine.types import DataType
from sqlext.errors import SqlAnalysisError
from sqlext.parse import ast
from sqlext.parse.splitter import Statement


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


def matches(values: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    for k, wanted in spec.items():
        have = values[k]
        if have != wanted and (have is None or wanted is None or str(have) != str(wanted)):
            return False
    return True


def live_partitions(table: Table) -> list[dict[str, Any]]:
    """The partitions holding live files in the latest snapshot (metadata only), sorted."""
    keys = table.partition_keys
    seen: dict[tuple[Any, ...], None] = {}
    for split in table.new_scan().plan().splits:
        seen.setdefault(tuple(split.partition_values), None)
    ordered = sorted(seen, key=lambda vs: tuple((v is None, str(v)) for v in vs))
    return [dict(zip(keys, vs, strict=True)) for vs in ordered]


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
        if matches(dict(zip(keys, sp.partition_values, strict=True)), spec)
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
