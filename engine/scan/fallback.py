"""Batch reads with a fallback branch (``scan.fallback-branch``, Paimon's FallbackReadFileStoreTable).

One job: add to a batch plan of a partitioned table the splits of the partitions the read branch
lacks, taken from the fallback branch.

Rules (Paimon's):

* A partition the read branch has (among those the read's *partition* conditions select) is
  complete: it is read from that branch alone, with the full filter. A partition only the
  fallback branch has is read from the fallback branch, with the same filter.
* The fallback branch must have the same columns and types as the read branch (nullability
  aside) and the same partition columns; anything else is refused when the read is planned. Its
  other options (primary key, bucket count, merge engine) may differ: its splits carry the
  branch's name and :class:`~engine.read.split_reader.SplitReader` reads them with the branch's
  own table definition.
* Time travel: a read of snapshot ``s`` reads the fallback branch's newest snapshot committed at
  or before ``s``'s commit time (the branches number their snapshots independently).
* Only batch reads of the data fall back: streaming and incremental reads, writes, compaction,
  maintenance and system tables see the read branch alone. A table without partition columns, or
  a read of the fallback branch itself, has nothing to fall back to.
"""

from __future__ import annotations

from dataclasses import replace

from engine.errors import InvalidArgumentError, NoSuchBranchError
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot
from engine.options import SCAN_FALLBACK_BRANCH
from engine.scan.planner import Plan, TableScan, attach_deletion_files
from engine.scan.predicate import split_by_columns
from engine.store import FileStore


def fallback_branch(store: FileStore) -> str | None:
    """The branch a batch read of ``store`` falls back to, or None when none applies."""
    name = store.options.get(SCAN_FALLBACK_BRANCH)
    if not name or not store.partition_keys or name == store.branch:
        return None
    return str(name)


def fallback_store(store: FileStore, branch: str) -> FileStore:
    """The fallback branch at its latest schema, checked against ``store`` (see the module docstring).

    Raises:
        NoSuchBranchError: the branch does not exist.
        InvalidArgumentError: its columns or partition columns differ from ``store``'s.
    """
    paths = store.paths.for_branch(branch)
    schema = SchemaStore(store.io, paths).latest()
    if schema is None:
        raise NoSuchBranchError(
            f"scan.fallback-branch names branch '{branch}', which does not exist; create it or reset the "
            "option (ALTER TABLE … UNSET TBLPROPERTIES ('scan.fallback-branch'))")
    mine = [(f.name, f.type.copy(nullable=True)) for f in store.schema.fields]
    theirs = [(f.name, f.type.copy(nullable=True)) for f in schema.fields]
    if mine != theirs or tuple(schema.partition_keys) != tuple(store.partition_keys):
        raise InvalidArgumentError(
            f"branch '{store.branch}' and its fallback branch '{branch}' (scan.fallback-branch) must have "
            f"the same columns and partition columns: {[f'{n} {t}' for n, t in mine]} partitioned by "
            f"{list(store.partition_keys)} vs {[f'{n} {t}' for n, t in theirs]} partitioned by "
            f"{list(schema.partition_keys)}")
    return FileStore(store.io, paths, schema)


def with_fallback(scan: TableScan, plan: Plan) -> Plan:
    """``plan`` (of ``scan``) plus the fallback branch's splits of the partitions it lacks."""
    branch = fallback_branch(scan.store)
    if branch is None:
        return plan
    other = fallback_store(scan.store, branch)
    target = _fallback_snapshot(other, plan.snapshot if scan.snapshot_id is not None else None)
    if target is None:
        return plan
    partition_filter, _ = split_by_columns(scan.filter, scan.store.partition_keys)
    complete: set[bytes] = set()
    if plan.snapshot is not None:
        by_partition = replace(scan, filter=partition_filter, buckets=None)
        complete = {e.partition for e in by_partition.read_entries(plan.snapshot)}
    fallback_scan = TableScan(other).with_snapshot(target).with_filter(scan.filter)
    if scan.columns is not None:
        fallback_scan = fallback_scan.with_projection(scan.columns)
    entries = [e for e in fallback_scan.read_entries(target) if e.partition not in complete]
    if not entries:
        return plan
    splits = fallback_scan.make_splits(target.id, entries)
    if uses_deletion_vectors(other):
        splits = attach_deletion_files(other, target, splits)
    return Plan(plan.snapshot, plan.splits + tuple(replace(s, branch=branch) for s in splits))


def _fallback_snapshot(other: FileStore, travelled: Snapshot | None) -> Snapshot | None:
    if travelled is None:
        return other.snapshots.latest()
    return other.snapshots.at_or_before(travelled.time_millis)
