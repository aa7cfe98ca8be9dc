"""engine.ops.merge_branch on tables with deletion vectors: main reads the branch's changes at once.

Append tables: the rows a branch deleted (deletion vectors over its own new files or over base
files) stay deleted in the target, a second merge changes nothing, and a deletion whose file the
target rewrote meanwhile is refused before anything is written. Primary-key tables: the merged
keys are compacted out of level 0 by the merge itself, so DV readers (which skip level 0) see them.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import AppendDeletionCommit, Table
from engine.append_deletions import dv_scan_files
from engine.errors import InvalidArgumentError
from engine.ops.merge_branch import merge_branch
from engine.schema_changes import SetOption

APPEND = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
KEYED = pa.schema([pa.field("id", pa.int32(), False), ("v", pa.string())])
DV = {"deletion-vectors.enabled": "true"}


def rows(t: Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.refresh().to_arrow().to_pylist())


def ids(values, v="x") -> pa.Table:
    values = list(values)
    return pa.table({"id": pa.array(values, pa.int64()), "v": [f"{v}{i}" for i in values]}, schema=APPEND)


def delete_where(t: Table, predicate) -> int:
    """Mark the rows whose id satisfies ``predicate`` deleted (deletion vectors, as SQL DELETE does)."""
    snap = t.refresh().latest_snapshot()
    found = {}
    for f in dv_scan_files(t.store, snap):
        col = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=["id"]).column("id").to_numpy()
        pos = np.setdiff1d(np.flatnonzero(predicate(col)), f.deleted)
        if pos.size:
            found[f.name] = pos
    c = AppendDeletionCommit(t.store, snap)
    n = c.delete(found)
    c.commit()
    return n


def dv_append(catalog, options=None) -> tuple[Table, Table]:
    t = catalog.create_table("db.T", APPEND, options={**DV, **(options or {})})
    t.write_arrow(ids(range(1, 6), "b"))
    t.refs.tags.create("base", 1)
    t.refs.branches.create("dev", from_tag="base")
    return t, catalog.get_table("db.T$branch_dev")


@pytest.mark.parametrize(("bucket", "rolled"), [("-1", False), ("2", False), ("-1", True)])
def test_append_branch_deletions_reach_the_target(catalog, bucket, rolled):
    """``rolled``: every deletion vector in its own index file (several per partition)."""
    options = {"bucket": bucket, **({"bucket-key": "id"} if bucket != "-1" else {}),
               **({"deletion-vector.index-file.target-size": "1 b"} if rolled else {})}
    t, dev = dv_append(catalog, options)
    dev.write_arrow(ids(range(10, 14), "n"))
    assert delete_where(dev, lambda c: np.isin(c, [2, 11])) == 2  # a base row and a row of its own
    t.write_arrow(ids([20], "m"))  # main went on meanwhile
    assert delete_where(t, lambda c: c == 4) == 1  # and deleted a base row of its own
    expected = sorted([*[(i, f"b{i}") for i in (1, 3, 5)], *[(i, f"n{i}") for i in (10, 12, 13)],
                       (20, "m20")])
    dry = merge_branch(t.store, "dev", dry_run=True)
    assert (dry.upserted, dry.deleted, dry.snapshot_id) == (3, 1, None)
    new_files = len({e.file.file_name for e in dev.store.live_entries(dev.refresh().latest_snapshot())}
                    - {e.file.file_name for e in t.store.live_entries(t.refs.tags.get("base").snapshot)})
    done = merge_branch(t.store, "dev")
    assert (done.files, done.upserted, done.deleted) == (new_files, 3, 1)
    assert rows(t) == expected
    assert merge_branch(t.store, "dev").snapshot_id is None  # nothing new
    # the branch deletes more (of its merged file and of the base): only those are applied
    delete_where(dev, lambda c: np.isin(c, [3, 13]))
    again = merge_branch(t.store, "dev")
    assert (again.files, again.upserted, again.deleted) == (0, 0, 2)
    assert rows(t) == [r for r in expected if r[0] not in (3, 13)]
    assert merge_branch(t.store, "dev").snapshot_id is None


def test_append_deletion_the_target_cannot_take_is_refused_before_any_change(catalog):
    t, dev = dv_append(catalog)
    delete_where(dev, lambda c: c == 2)
    t.write_arrow(ids([6], "b"))
    t.compact(full=True)  # main rewrote the base file: the branch's positions no longer name its rows
    before = t.refresh().latest_snapshot().id
    with pytest.raises(InvalidArgumentError, match="has rewritten since"):
        merge_branch(t.store, "dev")
    assert t.refresh().latest_snapshot().id == before


def test_append_branch_deletions_into_a_target_without_deletion_vectors_are_refused(catalog):
    t, dev = dv_append(catalog)
    delete_where(dev, lambda c: c == 2)
    catalog.alter_table(t.identifier, [SetOption("deletion-vectors.modifiable", "true"),
                                         SetOption("deletion-vectors.enabled", "false")])
    with pytest.raises(InvalidArgumentError, match="deletion"):
        merge_branch(t.store, "dev")
    assert rows(t) == [(i, f"b{i}") for i in range(1, 6)]


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_primary_key_merge_is_visible_to_deletion_vector_readers(catalog, bucket):
    t = catalog.create_table("db.K", KEYED, primary_keys=["id"], options={**DV, "bucket": bucket})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=KEYED))
    t.refs.tags.create("base", t.latest_snapshot().id)
    t.refs.branches.create("dev", from_tag="base")
    dev = catalog.get_table("db.K$branch_dev")
    dev.write_arrow(pa.table({"id": [2, 3, 4], "v": ["B", "c", "D"], "rowkind": ["+U", "-D", "+I"]},
                             schema=pa.schema([*KEYED, ("rowkind", pa.string())])))
    assert rows(dev) == [(1, "a"), (2, "B"), (4, "D")]
    done = merge_branch(t.store, "dev")
    assert (done.upserted, done.deleted) == (2, 1)
    assert rows(t) == [(1, "a"), (2, "B"), (4, "D")]
    live = t.refresh().store.live_entries(t.latest_snapshot())
    assert all(e.file.level > 0 for e in live)  # nothing the merge wrote waits in level 0
    assert merge_branch(t.store, "dev").snapshot_id is None


def test_deleting_in_a_merged_file_the_target_compacted_away_is_refused(catalog):
    t, dev = dv_append(catalog)
    dev.write_arrow(ids(range(10, 13), "n"))
    delete_where(dev, lambda c: c == 10)
    merge_branch(t.store, "dev")
    t.refresh().compact(full=True)  # main rewrites the merged copy (and applies its deletion)
    expected = sorted([*[(i, f"b{i}") for i in range(1, 6)], (11, "n11"), (12, "n12")])
    assert rows(t) == expected
    assert merge_branch(t.store, "dev").snapshot_id is None  # what was deleted before is gone there
    delete_where(dev, lambda c: c == 11)
    with pytest.raises(InvalidArgumentError, match="earlier merge copied"):
        merge_branch(t.store, "dev")
    assert rows(t) == expected


def test_primary_key_merge_into_a_write_only_target_is_visible(catalog):
    """A write-only table leaves compaction to a dedicated job; the merge still compacts what it
    wrote, so its result is visible when it returns."""
    t = catalog.create_table("db.W", KEYED, primary_keys=["id"],
                             options={**DV, "bucket": "2", "write-only": "true"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=KEYED))
    t.compact(full=True)  # the dedicated job
    t.refs.tags.create("base", t.latest_snapshot().id)
    t.refs.branches.create("dev", from_tag="base")
    dev = catalog.get_table("db.W$branch_dev")
    dev.write_arrow(pa.table({"id": [2, 4], "v": ["B", "D"]}, schema=KEYED))
    dev.compact(full=True)
    merge_branch(t.store, "dev")
    assert rows(t) == [(1, "a"), (2, "B"), (3, "c"), (4, "D")]
