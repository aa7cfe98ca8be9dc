"""The ``where`` argument of procedures (``compact``, ``rewrite_file_index``): a SQL predicate over
the partition columns, evaluated by Spark over the table's partition list. Spark-side: procedures
run it when the runner invokes them, never while CALL is planned."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sqlext.errors import ProcedureArgumentError
from sqlext.execute.partitions import live_partitions

if TYPE_CHECKING:
    from engine import Table
    from sqlext.session import SqlSession


def partitions_where(session: SqlSession, table: Table, where: str) -> list[dict[str, Any]]:
    """The live partitions for which the SQL predicate ``where`` (over partition columns) is true.

    The partition list is small (metadata), so it becomes a tiny Spark DataFrame and the predicate
    is evaluated by Spark: the full SQL expression language works, and a reference to a
    non-partition column fails analysis.

    Raises:
        ProcedureArgumentError: the table is not partitioned, or ``where`` is not a valid
            predicate over the partition columns.
    """
    from pyspark.errors import PySparkException

    from engine.arrow_types import to_arrow_type

    keys = table.partition_keys
    if not keys:
        raise ProcedureArgumentError("argument 'where': the table is not partitioned")
    parts = live_partitions(table)
    if not parts:
        return []
    schema = pa.schema([pa.field(k, to_arrow_type(table.schema.field(k).type)) for k in keys])
    arrow = pa.Table.from_pylist(parts, schema=schema)
    try:
        rows = session.arrow_frame(arrow).where(where).collect()
    except PySparkException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ProcedureArgumentError(
            f"argument 'where' must be a predicate over the partition columns {list(keys)}: {first}"
        ) from None
    return [{k: row[k] for k in keys} for row in rows]
