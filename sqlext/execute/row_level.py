"""Planners of the row-level DML on managed tables: DELETE, UPDATE and TRUNCATE, and the checks
MERGE INTO shares with them (MERGE is still an executor in ``dml.py``, which calls these).

A planner checks the statement against the table and its metadata and returns what is to happen
(``planning.RowLevelWrite``, ``MarkDeletions``, ``TruncateTable``, or ``Rows`` when metadata
answers alone); the session's runner finds the rows (``row_level_writes``) and writes. Nothing here
runs Spark. The rules are Paimon's (its Spark ``RowLevelOp``, ``DeleteFromPaimonTableCommand``):

* every statement reads the target at one snapshot, picked here: the write's base snapshot too, so a
  concurrent change to what an overwrite replaces fails the statement instead of being lost;
* DELETE without WHERE empties the table in one snapshot (the count of a deletion-vector table
  from its metadata, of others from a count of the snapshot's rows); with WHERE:
  - a deletion-vector table marks the matched rows' positions (``MarkDeletions``);
  - a primary-key table whose merge engine lets a ``-D`` row remove its key writes those rows
    (``deduplicate``; ``partial-update`` / ``aggregation`` with ``…remove-record-on-delete``; never
    with ``ignore-delete``);
  - a data-evolution table needs deletion vectors (Paimon's rule; refused otherwise, 0A000);
  - an append table is rewritten copy-on-write: the data files holding a matched row are replaced
    by their surviving rows (Paimon's rule: other files, even of the same partition, stay);
  - any other key table is rewritten copy-on-write: the partitions holding a matched row (the whole
    table if unpartitioned) are replaced by their surviving rows. A ``first-row`` table must be
    compacted first (files on level 0 refuse the statement, SQLSTATE 55000), and its rewrite goes
    up as an ordinary write's does (``write-only`` off: its reads skip level 0);
* UPDATE needs a table whose written row becomes the row (append, ``deduplicate``,
  ``partial-update``; others refuse it, SQLSTATE 0A000) and may set a key column (or a partition
  column of a key table with fixed buckets) only to itself (42000). A deletion-vector table marks
  the matched rows and adds their new values; a key table writes the new rows (``+U``); a
  data-evolution table writes only the changed columns by row id (``UpdateColumns``); an append
  table is rewritten copy-on-write (the whole table without WHERE; else the data files holding a
  matched row: an assignment may move a row to another partition, where it is added);
* TRUNCATE TABLE t [PARTITION (...)] removes every file (of the partition) in one snapshot.
"""

from __future__ import annotations

from engine import ROWKIND, MergeConfig, Snapshot, Table, is_data_evolution, metadata_names
from sqlext.errors import UnsupportedStatementError
from sqlext.execute.assignments import key_change_error, resolve_assignments
from sqlext.execute.dml_common import HELPER, analysis_error, column_names, count_rows
from sqlext.execute.partitions import checked_spec
from sqlext.execute.planning import (
    MarkDeletions,
    Matched,
    Plan,
    Planner,
    PlannerContext,
    RowLevelWrite,
    TargetQuery,
    ToEngine,
    TruncateTable,
    UpdateColumns,
)
from sqlext.execute.table_options import column_defaults
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement

# A statement on a table dyntable does not manage: Spark runs it (it may read managed tables), and
# Spark's bare refusal of a row-level change on its own tables becomes a typed error.
TO_ENGINE = ToEngine(bind=True, row_level=True)


def target(ctx: PlannerContext, name: ast.TableName, stmt: Statement) -> Table | None:
    """The managed table a row-level statement writes (None: not managed, Spark runs the statement)."""
    if not ctx.is_managed(name):
        return None
    if name.system_table is not None:
        raise analysis_error(stmt, f"system table '{name}' is read-only", "42809")
    table = ctx.table(name)
    if table.primary_keys and ROWKIND in table.schema.field_names:
        raise UnsupportedStatementError(
            f"row-level changes on '{table.name}' need the column name '{ROWKIND}' for the change kind; "
            "rename that column",
            line=stmt.line,
            column=stmt.column,
        )
    return table


def deletes_remove_rows(table: Table) -> bool:
    """Whether a written ``-D`` row removes its key from this primary-key table."""
    config = MergeConfig.from_options(table.options, table.primary_keys)
    if config.ignore_delete:
        return False
    return (
        config.engine == "deduplicate"
        or (config.engine == "partial-update" and config.partial_update_remove_record_on_delete)
        or (config.engine == "aggregation" and config.aggregation_remove_record_on_delete)
    )


def check_rewritable(table: Table, verb: str, stmt: Statement) -> None:
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


def require_compacted(table: Table, snapshot_id: int | None, stmt: Statement) -> None:
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


def delete(ctx: PlannerContext, n: ast.Delete, stmt: Statement) -> Plan:
    """DELETE FROM t [WHERE c] (see the module docstring)."""
    table = target(ctx, n.table, stmt)
    if table is None:
        return TO_ENGINE
    latest = table.latest_snapshot()
    snapshot = latest.id if latest is not None else None
    alias = n.alias or n.table.table
    evolution = data_evolution(table)
    if evolution and not table.new_write_builder().writes_deletion_vectors():
        raise UnsupportedStatementError(
            f"DELETE is not supported on '{table.name}': a data-evolution table "
            "('data-evolution.enabled' = 'true') deletes rows only with deletion vectors, as Paimon does; "
            f"set 'deletion-vectors.enabled' = 'true' (ALTER TABLE {table.name} SET TBLPROPERTIES) first",
            line=stmt.line, column=stmt.column)
    if table.new_write_builder().writes_deletion_vectors():
        if latest is None:
            return count_rows(0, "deleted")
        if n.where is None:
            # Paimon truncates: every file goes, with its DV; the count is in the metadata.
            files = table.new_write_builder().deletion_scan_files(latest)
            count = sum(f.row_count - f.deleted.size for f in files)
            return TruncateTable(table, None, snapshot, count, False, "deleted", "")
        return MarkDeletions(table, latest, Matched(alias, n.where.text), "deleted", by_row_id=evolution)
    if n.where is None:
        if latest is None:
            return count_rows(0, "deleted")
        return TruncateTable(table, None, snapshot, None, True, "deleted", "")
    cond, a = n.where.text, quoted(alias)
    if table.primary_keys and deletes_remove_rows(table):
        changes = TargetQuery(f"{a}.*, '-D' AS {ROWKIND}", alias, cond)
        return RowLevelWrite(table, snapshot, changes, "none", None, "deleted")
    keyed = table.primary_keys
    first_row = bool(keyed) and MergeConfig.from_options(table.options, keyed).engine == "first-row"
    if first_row:
        require_compacted(table, snapshot, stmt)
    kept = TargetQuery(f"{a}.*", alias, f"NOT ({cond}) OR ({cond}) IS NULL")
    # A first-row table's reads skip level 0: the rewrite's files go up as an ordinary write's do,
    # even on a 'write-only' table, or the surviving rows would vanish until the next compaction.
    options = {"write-only": "false"} if first_row else {}
    return RowLevelWrite(table, snapshot, kept, "matched", Matched(alias, cond), "deleted", options=options)


def update(ctx: PlannerContext, n: ast.Update, stmt: Statement) -> Plan:
    """UPDATE t SET ... [WHERE c] (see the module docstring)."""
    table = target(ctx, n.table, stmt)
    if table is None:
        return TO_ENGINE
    check_rewritable(table, "UPDATE", stmt)
    latest = table.latest_snapshot()
    snapshot = latest.id if latest is not None else None
    alias = n.alias or n.table.table
    a = quoted(alias)
    cond = n.where.text if n.where is not None else None
    columns = column_names(table)
    defaults = column_defaults(table, ctx.cast_type)
    if data_evolution(table):
        resolved = resolve_assignments(table, n.assignments, (alias, n.table.table), stmt, a, defaults)
        return update_columns(table, latest, resolved.values, (alias, n.table.table), cond, stmt)
    if table.new_write_builder().writes_deletion_vectors():
        if latest is None:
            return count_rows(0, "updated")
        assigned = resolve_assignments(table, n.assignments, (alias, n.table.table), stmt, a, defaults).values
        select = _select(assigned, columns, a)
        if row_tracked(table):  # the new values keep the row's id; its sequence number: this commit's
            select += f", {a}._ROW_ID AS _ROW_ID, CAST(NULL AS BIGINT) AS _SEQUENCE_NUMBER"
        return MarkDeletions(table, latest, Matched(alias, cond), "updated", select)
    resolved = resolve_assignments(table, n.assignments, (alias, n.table.table), stmt, a, defaults)
    # Paimon's rule: UPDATE may name a key column only to set it to itself.
    same = {f"{p}{k}".lower() for k in resolved.keys for p in ("", f"{alias}.", f"{n.table.table}.")}
    if any(resolved.values[k].strip("() ").replace("`", "").lower() not in same for k in resolved.keys):
        raise key_change_error(table, resolved, stmt)
    assigned = resolved.values
    if table.primary_keys:
        changes = TargetQuery(f"{_select(assigned, columns, a)}, '+U' AS {ROWKIND}", alias, cond)
        return RowLevelWrite(table, snapshot, changes, "none", None, "updated")
    # A row-tracking table's rows keep their _ROW_ID; an updated row's _SEQUENCE_NUMBER becomes
    # NULL, which the commit turns into its snapshot id (Paimon's UpdatePaimonTableCommand).
    tracked = row_tracked(table)
    if cond is None:
        select = _select(assigned, columns, a)
        if tracked:
            select += f", {a}._ROW_ID AS _ROW_ID, CAST(NULL AS BIGINT) AS _SEQUENCE_NUMBER"
        return RowLevelWrite(table, snapshot, TargetQuery(select, alias), "all", None, "updated")
    select = ", ".join(
        f"CASE WHEN ({cond}) THEN ({assigned[c]}) ELSE {a}.{quoted(c)} END AS {quoted(c)}"
        if c in assigned
        else f"{a}.{quoted(c)}"
        for c in columns
    )
    if tracked:
        select += (f", {a}._ROW_ID AS _ROW_ID, CASE WHEN ({cond}) THEN CAST(NULL AS BIGINT) "
                   f"ELSE {a}._SEQUENCE_NUMBER END AS _SEQUENCE_NUMBER")
    # The partitions are found by the ORIGINAL partition values (an assignment may move a row).
    keys = table.partition_keys
    originals = tuple(f"{HELPER}o{i}" for i in range(len(keys)))
    select += "".join(f", {a}.{quoted(k)} AS {o}" for k, o in zip(keys, originals, strict=True))
    return RowLevelWrite(table, snapshot, TargetQuery(select, alias), "matched", Matched(alias, cond),
                         "updated", partition_of=originals)


def data_evolution(table: Table) -> bool:
    """Whether ``table`` is a data-evolution table (its rows are changed by row id, never rewritten)."""
    return not table.primary_keys and is_data_evolution(table.options)


def changed_columns(table: Table, assigned: dict[str, str], aliases: tuple[str, ...], verb: str,
                    stmt: Statement) -> tuple[str, ...]:
    """The columns a data-evolution change writes: those ``assigned`` a value other than the
    column itself (``SET c = c`` / ``SET c = t.c`` change nothing, as in Paimon), in the table's
    order. A partition column cannot be one: its files stay where their rows are."""
    same = lambda c, v: v.strip("() ").replace("`", "").lower() in {  # noqa: E731
        f"{p}{c}".lower() for p in ("", *(f"{x}." for x in aliases))}
    out = tuple(c for c in column_names(table) if c in assigned and not same(c, assigned[c]))
    moved = [c for c in out if c in table.partition_keys]
    if moved:
        raise UnsupportedStatementError(
            f"{verb} cannot set the partition column '{moved[0]}' of the data-evolution table "
            f"'{table.name}': its rows are changed by row id in their partition (Paimon's rule)",
            line=stmt.line, column=stmt.column)
    return out


def update_columns(table: Table, latest: Snapshot | None, assigned: dict[str, str],
                   aliases: tuple[str, str], cond: str | None, stmt: Statement) -> Plan:
    """UPDATE of a data-evolution table: only the changed columns, written by row id (an UPDATE
    that changes no column writes nothing and still reports the rows it matched)."""
    if latest is None:
        return count_rows(0, "updated")
    alias = aliases[0]
    a = quoted(alias)
    columns = changed_columns(table, assigned, aliases, "UPDATE", stmt)
    matched = f"{HELPER}m"
    hit = f"coalesce(({cond}), false)" if cond is not None else "true"
    select = [f"{a}._ROW_ID AS _ROW_ID", f"{hit} AS {matched}"]
    select += [f"CASE WHEN {hit} THEN ({assigned[c]}) ELSE {a}.{quoted(c)} END AS {quoted(c)}"
               for c in columns]
    return UpdateColumns(table, latest, TargetQuery(", ".join(select), alias), matched, columns, "updated")


def row_tracked(table: Table) -> bool:
    """Whether ``table`` tracks row ids (its rows' ``_ROW_ID`` can be read and must be kept)."""
    return "_ROW_ID" in metadata_names(table.schema)


def _select(assigned: dict[str, str], columns: list[str], alias: str) -> str:
    """The select list of the updated rows: each column's assigned value, or its current one."""
    return ", ".join(f"({assigned[c]}) AS {quoted(c)}" if c in assigned else f"{alias}.{quoted(c)}"
                     for c in columns)


def truncate(ctx: PlannerContext, n: ast.Truncate, stmt: Statement) -> Plan:
    """TRUNCATE TABLE t [PARTITION (...)]: one snapshot removing every file (of the partition)."""
    table = target(ctx, n.table, stmt)
    if table is None:
        return TO_ENGINE
    spec = checked_spec(table, n.partition, stmt) if n.partition is not None else None
    return TruncateTable(table, spec, None, None, False, "", f"Table {table.name} truncated")


PLANNERS: dict[type, Planner] = {ast.Delete: delete, ast.Update: update, ast.Truncate: truncate}
