"""Row-level writes on managed tables: how the runner carries out a MERGE INTO (``run_merge``), and
the rules of all row-level DML. The statements are planned without Spark (DELETE, UPDATE and
TRUNCATE in ``row_level``, MERGE in ``merge_clauses``); the runner's side of the other plans is in
``row_level_writes`` and ``dml_deletion_vectors``.

```
 target pinned at its latest snapshot ──► temp view  (every read of one statement sees one version)
 user's fragments + view ──► Spark query (session.bind binds other managed tables they name)
   primary-key table:  changed rows only, with a rowkind column ('-D', '+U', '+I') ──► write (append)
   append table with deletion vectors: rows marked in DVs, no file rewritten (dml_deletion_vectors)
   data-evolution:     changed columns by row id, deletions on anchors (dml_data_evolution)
   append table:       copy-on-write: the data files holding an updated/deleted row rewritten ──►
                       write (an overwrite of exactly those files, Paimon's rule; rows an
                       UPDATE/MERGE moves or inserts elsewhere are added to their partitions)
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
  of being lost. (Paimon rewrites the affected files only; for key tables dyntable's unit is the
  partition, for append tables the file, as Paimon's.)
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

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from engine import OverwriteSpec, Table
from sqlext.execute import dml_data_evolution, dml_deletion_vectors
from sqlext.execute.dml_common import column_names, merge_rows
from sqlext.execute.dml_deletion_vectors import FILE, positioned_frame
from sqlext.execute.merge_plan import MergeJob
from sqlext.execute.planning import MergeInto
from sqlext.execute.results import StatementResult
from sqlext.execute.row_level_writes import (
    Pinned,
    in_files,
    rewrites_files,
    tracking_columns,
)
from sqlext.execute.writes import write_frame
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession

# -- MERGE ------------------------------------------------------------------------------------------------
def run_merge(s: SqlSession, plan: MergeInto, stmt: Statement) -> StatementResult:
    """Carry out a ``MergeInto`` plan: one joined query, checked, then one write."""
    if plan.data_evolution:
        return dml_data_evolution.merge(s, plan, stmt)
    if plan.deletion_vectors:
        return dml_deletion_vectors.merge(s, plan, stmt)
    table = plan.table
    job = MergeJob(s, plan.clauses, stmt)
    snapshot_id = plan.snapshot.id if plan.snapshot is not None else None
    tracking = tracking_columns(table)  # a row-tracking table's rows keep their ids
    # An append table: only the files holding a matched row are rewritten; its rows are read with
    # their data file's name (``FILE``), natively where Spark can.
    by_file = rewrites_files(table) and plan.snapshot is not None
    if by_file:
        view = f"__dyntable_dml_{s.next_id()}"
        positioned_frame(s, table, plan.snapshot).createOrReplaceTempView(view)
    else:
        view = Pinned(s, table, snapshot_id).view()
    # evaluated once: checks, counts, write agree
    joined = job.joined_frame(view, (*tracking, FILE) if by_file else tracking).localCheckpoint()
    job.check_cardinality(joined)
    job.check_keys(joined)
    counts = job.counts(joined)
    total = counts["update"] + counts["delete"] + counts["insert"]
    if total:
        if table.primary_keys:
            write_frame(s, table, job.changes(joined), column_names(table), overwrite=None, stmt=stmt)
        else:
            _merge_rewriting_files(s, table, job, joined, stmt, snapshot_id, tracking, by_file)
    return s.runner.run(merge_rows(counts), stmt)


def _merge_rewriting_files(
    s: SqlSession, table: Table, job: MergeJob, joined: DataFrame, stmt: Statement,
    base_snapshot_id: int | None, tracking: tuple[str, ...], by_file: bool,
) -> None:
    """Append table (Paimon's rule): rewrite only the data files holding an updated or deleted row
    (``by_file``: the joined rows carry their file's name; without, the table is empty), their other
    rows kept; inserted rows are added. One commit replacing exactly those files."""
    inserts = job.inserted_rows(joined)
    touched = job.touched(joined).select(FILE).distinct().collect() if by_file else []
    names = [r[0] for r in touched if r[0] is not None]
    if not names:
        write_frame(s, table, inserts, column_names(table), overwrite=None, stmt=stmt)
        return
    kept = job.target_rows(joined)
    kept = in_files(s, kept, names, FILE)
    # Inserted rows have no _ROW_ID: they take new ids at commit.
    out = job.tracked(kept, tracking).unionByName(inserts, allowMissingColumns=bool(tracking))
    write_frame(s, table, out, column_names(table), overwrite=OverwriteSpec(files=tuple(names)), stmt=stmt,
                base_snapshot_id=base_snapshot_id, row_ids=bool(tracking))
