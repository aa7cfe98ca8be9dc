"""Row-level writes on managed tables: DELETE, UPDATE, MERGE INTO, TRUNCATE.

```
 target pinned at its latest snapshot ──► temp view  (every read of one statement sees one version)
 user's fragments + view ──► Spark query (session.bind binds other managed tables they name)
   primary-key table:  changed rows only, with a rowkind column ('-D', '+U', '+I') ──► write (append)
   append table with deletion vectors: rows marked in DVs, no file rewritten (dml_deletion_vectors)
   append table:       copy-on-write: the affected partitions rewritten ──► write (overwrite of
                       exactly those partitions; rows an UPDATE/MERGE moves or inserts elsewhere
                       are added to their partitions)
```
Merge engines (Paimon's rules, its Spark ``RowLevelOp`` and ``validatePKUpsertDeletable``):
* DELETE works on every table (a ``first-row`` table once compacted, as in Paimon: files still
  on level 0 where it deletes refuse the statement with SQLSTATE 55000). A ``-D`` row removes a
  key only under ``deduplicate``,
  ``partial-update`` with ``partial-update.remove-record-on-delete`` and ``aggregation`` with
  ``aggregation.remove-record-on-delete`` (and never with ``ignore-delete``, which drops it). Any
  other key table (``first-row``, ``aggregation``, ``partial-update`` by default) is rewritten
  copy-on-write like an append table: the merged rows that survive, of the partitions holding a
  deleted row (the whole table if unpartitioned), replace those partitions in one overwrite
  commit based on the snapshot read, so a concurrent change to them fails the statement instead
  of being lost. (Paimon rewrites the affected files only; dyntable's unit is the partition.)
* UPDATE and MERGE need a table whose written row becomes the row: append, ``deduplicate`` or
  ``partial-update``; ``first-row`` and ``aggregation`` tables refuse them (SQLSTATE 0A000), as
  Paimon does, instead of ignoring or aggregating the new values.
* Key columns (and partition columns of key tables) keep their values: UPDATE may set one only
  to itself (``SET id = id``, Paimon's rule); a MERGE clause may set one to any expression that
  leaves every matched row's key unchanged (``SET a = s.a`` when joined on ``t.a = s.a``),
  checked on the joined data before the write (Paimon accepts any key assignment when joined on
  the key, so a changing one would silently move rows).
* MERGE scoping (Spark's): NOT MATCHED clauses see only the source (unqualified names resolve
  there), NOT MATCHED BY SOURCE clauses only the target, MATCHED clauses both.

Invariants:
* all data work runs in Spark (no rows reach the driver, except the small list of affected
  partitions and counts); one data commit per statement through ``writes.write_frame``;
* a failing statement changes nothing: every check (unknown or key columns, a target row matched
  by two source rows) runs before the write, and a failing write job publishes no snapshot;
* the user's fragments keep their aliases: the target view is aliased as the statement's alias
  (or the table's name), the MERGE source as its alias (or its name).
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine import ROWKIND, MergeConfig, OverwriteSpec, Table
from sqlext.errors import UnsupportedStatementError
from sqlext.execute import dml_deletion_vectors
from sqlext.execute.assignments import (
    key_change_error,
    resolve_assignments,
)
from sqlext.execute.dml_common import (
    HELPER,
    analysis_error,
    column_names,
    count_result,
    merge_result,
)
from sqlext.execute.merge_plan import MergePlan, merge_evolution
from sqlext.execute.partitions import checked_spec
from sqlext.execute.results import StatementResult
from sqlext.execute.writes import write_frame
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.session import SqlSession

def _to_spark(s: SqlSession, stmt: Statement) -> StatementResult:
    from py4j.protocol import Py4JJavaError


    try:
        return StatementResult(stmt, s.spark_sql(stmt.text, stmt), None)
    except Py4JJavaError as e:
        # Spark refuses row-level changes on its own v1 tables and views with a bare Java error.
        text = str(e.java_exception.getMessage() or e).strip().splitlines()
        raise UnsupportedStatementError(
            f"Spark cannot run this statement on a table dyntable does not manage: {text[0] if text else e}",
            line=stmt.line,
            column=stmt.column,
        ) from None


def _target(s: SqlSession, name: ast.TableName, stmt: Statement) -> Table | None:
    """The managed table a DML statement writes (None: not managed, Spark runs the statement)."""
    if not s.is_managed(name):
        return None
    if name.system_table is not None:
        raise analysis_error(stmt, f"system table '{name}' is read-only", "42809")
    table = s.table(name)
    if table.primary_keys and ROWKIND in table.schema.field_names:
        raise UnsupportedStatementError(
            f"row-level changes on '{table.name}' need the column name '{ROWKIND}' for the change kind; "
            "rename that column",
            line=stmt.line,
            column=stmt.column,
        )
    return table


def _deletes_remove_rows(table: Table) -> bool:
    """Whether a written ``-D`` row removes its key from this primary-key table."""
    config = MergeConfig.from_options(table.options, table.primary_keys)
    if config.ignore_delete:
        return False
    return (
        config.engine == "deduplicate"
        or (config.engine == "partial-update" and config.partial_update_remove_record_on_delete)
        or (config.engine == "aggregation" and config.aggregation_remove_record_on_delete)
    )


def _check_rewritable(table: Table, verb: str, stmt: Statement) -> None:
    """UPDATE / MERGE need a table where a written row replaces the row (Paimon's rule)."""
    if not table.primary_keys:
        return
    engine = MergeConfig.from_options(table.options, table.primary_keys).engine
    if engine not in ("deduplicate", "partial-update"):
        raise UnsupportedStatementError(
            f"{verb} is not supported on '{table.name}': its merge engine '{engine}' would "
            f"{'keep the first row' if engine == 'first-row' else 'aggregate the new values'} instead of "
            "replacing the row; only append, 'deduplicate' and 'partial-update' tables support "
            f"{verb} (DELETE works on every table)",
            line=stmt.line,
            column=stmt.column,
        )


class _Pinned:
    """Fresh temp views of ``table`` at one snapshot: every pass of a statement reads the same rows.

    Each query gets its own view: the data source keeps the filters Spark pushed into a view's
    reader, so a view reused by a second query could filter that query's rows too.
    """

    def __init__(self, s: SqlSession, table: Table) -> None:
        self.s = s
        latest = table.latest_snapshot()
        self.snapshot_id = latest.id if latest is not None else None
        self.request = ReadRequest(s.target(table.name),
                                   travel=ReadVersion(snapshot_id=latest.id) if latest is not None else None)
        # An empty table (no snapshot, or no live file) is read as an empty frame of its schema
        # without asking the data source for splits it does not have.
        self.empty = latest is None or not (
            table.new_read_builder().at(snapshot_id=latest.id).new_scan().plan().splits)

    def view(self) -> str:
        name = f"__dyntable_dml_{self.s.next_id()}"
        df = self.s.read(self.request)
        if self.empty:
            df = self.s.spark.createDataFrame([], df.schema)
        df.createOrReplaceTempView(name)
        return name


# -- affected partitions (copy-on-write) ---------------------------------------------------------------
def _matching_partitions(
    s: SqlSession, table: Table, pinned: _Pinned, alias: str, cond: str, stmt: Statement
) -> tuple[list[dict[str, Any]], int]:
    """The partitions holding rows where ``cond`` is true, and how many such rows (one small job)."""
    keys = table.partition_keys
    a = quoted(alias)
    if not keys:
        n = s.frame(f"SELECT count(*) AS c FROM {pinned.view()} AS {a} WHERE {cond}", stmt).collect()[0][0]
        return ([{}] if n else []), int(n)
    cols = ", ".join(f"{a}.{quoted(k)}" for k in keys)
    found = s.frame(
        f"SELECT {cols}, count(*) AS {HELPER}n FROM {pinned.view()} AS {a} WHERE {cond} GROUP BY {cols}",
        stmt,
    ).collect()
    specs = [{k: row[i] for i, k in enumerate(keys)} for row in found]
    return specs, int(sum(row[len(keys)] for row in found))


def _in_partitions(
    s: SqlSession, df: DataFrame, table: Table, specs: list[dict[str, Any]], columns: list[str] | None = None
) -> DataFrame:
    """Rows of ``df`` whose partition columns (``columns``, default the keys) equal one of ``specs``.

    A broadcast semi-join with the small list, NULL-safe (a NULL partition value is a partition).
    """
    keys = list(table.partition_keys)
    if not keys:
        return df
    cols = columns or keys
    schema = df.select(*[F.col(quoted(c)).alias(f"{HELPER}p{i}") for i, c in enumerate(cols)]).schema
    parts = s.spark.createDataFrame([tuple(spec[k] for k in keys) for spec in specs], schema)
    on = reduce(
        lambda x, y: x & y, [df[quoted(c)].eqNullSafe(parts[f"{HELPER}p{i}"]) for i, c in enumerate(cols)]
    )
    return df.join(F.broadcast(parts), on=on, how="left_semi")


def _require_compacted(table: Table, snapshot_id: int | None, stmt: Statement) -> None:
    """DELETE on a ``first-row`` table rewrites its files only once they are compacted, as Paimon 2.0
    does: a file still on level 0 (or holding retractions) refuses the statement (Paimon's "please
    use 'COMPACT' procedure first"), nothing written. Reads of a ``first-row`` table skip level 0,
    so rows there could not even be matched. (Paimon looks at the files the WHERE may touch after
    its filter push-down; dyntable at every file of the snapshot.)"""
    if snapshot_id is None:
        return
    splits = table.new_read_builder().at(snapshot_id=snapshot_id).new_scan().plan().splits
    pending = [f for split in splits for f in split.files if f.level == 0 or (f.delete_row_count or 0) > 0]
    if pending:
        raise analysis_error(
            stmt,
            f"DELETE on '{table.name}' (merge engine 'first-row') needs its files compacted first: "
            f"{len(pending)} file(s) of the rows to delete are not (Paimon rewrites only compacted files); "
            f"run CALL sys.compact(table => '{table.name}') and DELETE again",
            "55000",
        )


def _overwrite_of(table: Table, specs: list[dict[str, Any]]) -> OverwriteSpec:
    """What an overwrite replaces: exactly the affected partitions (the whole table if unpartitioned)."""
    return OverwriteSpec(partitions=tuple(specs)) if table.partition_keys else OverwriteSpec()


# -- DELETE -----------------------------------------------------------------------------------------------
def delete(s: SqlSession, n: ast.Delete, stmt: Statement) -> StatementResult:
    """DELETE FROM t [WHERE c]: key tables write deletes, append tables rewrite the affected partitions."""
    table = _target(s, n.table, stmt)
    if table is None:
        return _to_spark(s, stmt)
    if table.new_write_builder().writes_deletion_vectors():
        return dml_deletion_vectors.delete(s, table, n, stmt)
    pinned = _Pinned(s, table)
    alias = n.alias or n.table.table
    if n.where is None:
        count = s.spark.table(pinned.view()).count()
        if count:
            table.truncate()
        return count_result(s, stmt, count, "deleted")
    cond, a = n.where.text, quoted(alias)
    if table.primary_keys and _deletes_remove_rows(table):
        df = s.frame(f"SELECT {a}.*, '-D' AS {ROWKIND} FROM {pinned.view()} AS {a} WHERE {cond}", stmt)
        count = write_frame(s, table, df, column_names(table), overwrite=None, stmt=stmt)
        return count_result(s, stmt, count, "deleted")
    keyed = table.primary_keys
    first_row = bool(keyed) and MergeConfig.from_options(table.options, keyed).engine == "first-row"
    if first_row:
        _require_compacted(table, pinned.snapshot_id, stmt)
    specs, count = _matching_partitions(s, table, pinned, alias, cond, stmt)
    if count == 0:
        return count_result(s, stmt, 0, "deleted")
    keep = s.frame(f"SELECT {a}.* FROM {pinned.view()} AS {a} WHERE NOT ({cond}) OR ({cond}) IS NULL", stmt)
    keep = _in_partitions(s, keep, table, specs)
    # A first-row table's reads skip level 0: the rewrite's files go up as an ordinary write's do,
    # even on a 'write-only' table, or the surviving rows would vanish until the next compaction.
    hints = {"write-only": "false"} if first_row else None
    write_frame(s, table, keep, column_names(table), overwrite=_overwrite_of(table, specs), stmt=stmt,
                hints=hints, base_snapshot_id=pinned.snapshot_id)
    return count_result(s, stmt, count, "deleted")


# -- UPDATE -----------------------------------------------------------------------------------------------
def update(s: SqlSession, n: ast.Update, stmt: Statement) -> StatementResult:
    """UPDATE t SET ... [WHERE c]: key tables write new rows, append tables rewrite affected partitions."""
    table = _target(s, n.table, stmt)
    if table is None:
        return _to_spark(s, stmt)
    _check_rewritable(table, "UPDATE", stmt)
    if table.new_write_builder().writes_deletion_vectors():
        return dml_deletion_vectors.update(s, table, n, stmt)
    alias = n.alias or n.table.table
    a = quoted(alias)
    resolved = resolve_assignments(table, n.assignments, (alias, n.table.table), stmt, a)
    assigned = resolved.values
    pinned = _Pinned(s, table)
    cond = n.where.text if n.where is not None else None
    where = f" WHERE {cond}" if cond is not None else ""
    # Paimon's rule: UPDATE may name a key column only to set it to itself.
    same = {f"{p}{k}".lower() for k in resolved.keys for p in ("", f"{alias}.", f"{n.table.table}.")}
    if any(resolved.values[k].strip("() ").replace("`", "").lower() not in same for k in resolved.keys):
        raise key_change_error(table, resolved, stmt)
    if table.primary_keys:
        select = ", ".join(
            f"({assigned[c]}) AS {quoted(c)}" if c in assigned else f"{a}.{quoted(c)}"
            for c in column_names(table)
        )
        df = s.frame(f"SELECT {select}, '+U' AS {ROWKIND} FROM {pinned.view()} AS {a}{where}", stmt)
        count = write_frame(s, table, df, column_names(table), overwrite=None, stmt=stmt)
        return count_result(s, stmt, count, "updated")
    if cond is None:
        select = ", ".join(
            f"({assigned[c]}) AS {quoted(c)}" if c in assigned else f"{a}.{quoted(c)}"
            for c in column_names(table)
        )
        df = s.frame(f"SELECT {select} FROM {pinned.view()} AS {a}", stmt)
        count = write_frame(s, table, df, column_names(table), overwrite=OverwriteSpec(), stmt=stmt,
                            base_snapshot_id=pinned.snapshot_id)
        return count_result(s, stmt, count, "updated")
    specs, count = _matching_partitions(s, table, pinned, alias, cond, stmt)
    if count == 0:
        return count_result(s, stmt, 0, "updated")
    select = ", ".join(
        f"CASE WHEN ({cond}) THEN ({assigned[c]}) ELSE {a}.{quoted(c)} END AS {quoted(c)}"
        if c in assigned
        else f"{a}.{quoted(c)}"
        for c in column_names(table)
    )
    # Filter by the ORIGINAL partition values (an assignment may move a row to another partition).
    keys = list(table.partition_keys)
    originals = ", ".join(f"{a}.{quoted(k)} AS {HELPER}o{i}" for i, k in enumerate(keys))
    df = s.frame(f"SELECT {select}{', ' + originals if keys else ''} FROM {pinned.view()} AS {a}", stmt)
    df = _in_partitions(s, df, table, specs, [f"{HELPER}o{i}" for i in range(len(keys))]).select(
        *[quoted(c) for c in column_names(table)]
    )
    write_frame(s, table, df, column_names(table), overwrite=_overwrite_of(table, specs), stmt=stmt,
                base_snapshot_id=pinned.snapshot_id)
    return count_result(s, stmt, count, "updated")


# -- TRUNCATE ---------------------------------------------------------------------------------------------
def truncate(s: SqlSession, n: ast.Truncate, stmt: Statement) -> StatementResult:
    """TRUNCATE TABLE t [PARTITION (...)]: one snapshot removing every file (of the partition)."""
    table = _target(s, n.table, stmt)
    if table is None:
        return _to_spark(s, stmt)
    from sqlext.execute.common import done

    if n.partition is None:
        result = table.truncate()
    else:
        result = table.drop_partitions([checked_spec(table, n.partition, stmt)])
    return done(stmt, f"Table {table.name} truncated" + ("" if result.snapshot_ids else " (it was empty)"))


# -- MERGE ------------------------------------------------------------------------------------------------
def merge(s: SqlSession, n: ast.Merge, stmt: Statement) -> StatementResult:
    """MERGE INTO t USING s ON c WHEN ...: one joined query, checked, then one write."""
    table = _target(s, n.target, stmt)
    if table is None:
        return _to_spark(s, stmt)
    _check_rewritable(table, "MERGE INTO", stmt)
    table, merge_schema = merge_evolution(s, table, n, stmt)
    if table.new_write_builder().writes_deletion_vectors():
        return dml_deletion_vectors.merge(s, table, n, stmt, merge_schema=merge_schema)
    pinned = _Pinned(s, table)
    plan = MergePlan(s, table, n, stmt, pinned.view(), merge_schema=merge_schema)
    if table.primary_keys and plan.ids("delete") and not _deletes_remove_rows(table):
        # The written -D would be dropped (ignore-delete) or refused by the merge engine at read time.
        raise UnsupportedStatementError(
            f"MERGE ... THEN DELETE is not supported on '{table.name}': its options do not let a delete "
            "row remove a key (partial-update needs 'partial-update.remove-record-on-delete' = 'true'; "
            "'ignore-delete' drops deletes); run DELETE FROM instead",
            line=stmt.line,
            column=stmt.column,
        )
    joined = plan.joined_frame().localCheckpoint()  # evaluated once: checks, counts and the write agree
    plan.check_cardinality(joined)
    plan.check_keys(joined)
    counts = plan.counts(joined)
    total = counts["update"] + counts["delete"] + counts["insert"]
    if total:
        if table.primary_keys:
            write_frame(s, table, plan.changes(joined), column_names(table), overwrite=None, stmt=stmt)
        else:
            _merge_copy_on_write(s, table, plan, joined, stmt, pinned.snapshot_id)
    return merge_result(s, stmt, counts)


def _merge_copy_on_write(
    s: SqlSession, table: Table, plan: MergePlan, joined: DataFrame, stmt: Statement,
    base_snapshot_id: int | None,
) -> None:
    """Append table: rewrite the partitions holding updated/deleted rows; inserted rows are added."""
    keys = list(table.partition_keys)
    inserts = plan.inserted_rows(joined)
    touched = plan.touched(joined)
    if keys:
        original = [plan.target_column(k) for k in keys]
        found = touched.select(*[F.col(c) for c in original]).distinct().collect()
        specs = [{k: row[i] for i, k in enumerate(keys)} for row in found]
    else:
        original, specs = [], ([{}] if touched.take(1) else [])
    if not specs:
        write_frame(s, table, inserts, column_names(table), overwrite=None, stmt=stmt)
        return
    kept = plan.target_rows(joined)
    if keys:
        kept = _in_partitions(s, kept, table, specs, original)
    out = plan.project(kept).unionByName(inserts)
    write_frame(s, table, out, column_names(table), overwrite=_overwrite_of(table, specs), stmt=stmt,
                base_snapshot_id=base_snapshot_id)


HANDLERS: dict[type, Any] = {
    ast.Delete: delete,
    ast.Update: update,
    ast.Merge: merge,
    ast.Truncate: truncate,
}
