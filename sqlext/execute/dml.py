"""Row-level writes on managed tables: the UPDATE and MERGE INTO executors (DELETE and TRUNCATE are
planners, ``row_level``; the runner's side and the pieces shared with it are in ``row_level_writes``).

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

from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine import ROWKIND, OverwriteSpec, Table
from sqlext.errors import UnsupportedStatementError
from sqlext.execute import dml_deletion_vectors
from sqlext.execute.assignments import (
    key_change_error,
    resolve_assignments,
)
from sqlext.execute.dml_common import HELPER, column_names, count_rows, merge_rows
from sqlext.execute.merge_plan import MergePlan, merge_evolution
from sqlext.execute.planning import Matched
from sqlext.execute.results import StatementResult
from sqlext.execute.row_level import check_rewritable, deletes_remove_rows, target
from sqlext.execute.row_level_writes import (
    Pinned,
    in_partitions,
    matching_partitions,
    overwrite_of,
    run_on_engine,
)
from sqlext.execute.writes import write_frame
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession

# -- UPDATE -----------------------------------------------------------------------------------------------
def update(s: SqlSession, n: ast.Update, stmt: Statement) -> StatementResult:
    """UPDATE t SET ... [WHERE c]: key tables write new rows, append tables rewrite affected partitions."""
    table = target(s.context, n.table, stmt)
    if table is None:
        return run_on_engine(s, stmt)
    check_rewritable(table, "UPDATE", stmt)
    if table.new_write_builder().writes_deletion_vectors():
        return dml_deletion_vectors.update(s, table, n, stmt)
    alias = n.alias or n.table.table
    a = quoted(alias)
    resolved = resolve_assignments(table, n.assignments, (alias, n.table.table), stmt, a)
    assigned = resolved.values
    pinned = Pinned.latest(s, table)
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
        return s.runner.run(count_rows(count, "updated"), stmt)
    if cond is None:
        select = ", ".join(
            f"({assigned[c]}) AS {quoted(c)}" if c in assigned else f"{a}.{quoted(c)}"
            for c in column_names(table)
        )
        df = s.frame(f"SELECT {select} FROM {pinned.view()} AS {a}", stmt)
        count = write_frame(s, table, df, column_names(table), overwrite=OverwriteSpec(), stmt=stmt,
                            base_snapshot_id=pinned.snapshot_id)
        return s.runner.run(count_rows(count, "updated"), stmt)
    specs, count = matching_partitions(s, table, pinned, Matched(alias, cond), stmt)
    if count == 0:
        return s.runner.run(count_rows(0, "updated"), stmt)
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
    df = in_partitions(s, df, table, specs, [f"{HELPER}o{i}" for i in range(len(keys))]).select(
        *[quoted(c) for c in column_names(table)]
    )
    write_frame(s, table, df, column_names(table), overwrite=overwrite_of(table, specs), stmt=stmt,
                base_snapshot_id=pinned.snapshot_id)
    return s.runner.run(count_rows(count, "updated"), stmt)


# -- MERGE ------------------------------------------------------------------------------------------------
def merge(s: SqlSession, n: ast.Merge, stmt: Statement) -> StatementResult:
    """MERGE INTO t USING s ON c WHEN ...: one joined query, checked, then one write."""
    table = target(s.context, n.target, stmt)
    if table is None:
        return run_on_engine(s, stmt)
    check_rewritable(table, "MERGE INTO", stmt)
    table, merge_schema = merge_evolution(s, table, n, stmt)
    if table.new_write_builder().writes_deletion_vectors():
        return dml_deletion_vectors.merge(s, table, n, stmt, merge_schema=merge_schema)
    pinned = Pinned.latest(s, table)
    plan = MergePlan(s, table, n, stmt, pinned.view(), merge_schema=merge_schema)
    if table.primary_keys and plan.ids("delete") and not deletes_remove_rows(table):
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
    return s.runner.run(merge_rows(counts), stmt)


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
        kept = in_partitions(s, kept, table, specs, original)
    out = plan.project(kept).unionByName(inserts)
    write_frame(s, table, out, column_names(table), overwrite=overwrite_of(table, specs), stmt=stmt,
                base_snapshot_id=base_snapshot_id)


HANDLERS: dict[type, Any] = {
    ast.Update: update,
    ast.Merge: merge,
}
