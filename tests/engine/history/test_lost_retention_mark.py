"""A lost retention mark stops expiration instead of letting it expire what the mark protected.

With the mark files removed, expiration once acted as if the table had never been marked and
deleted snapshots at and above the mark. The maintenance log still records the mark, so
expiration (called or automatic) now refuses until the mark is restored or set again.
"""

from __future__ import annotations

import os
import shutil

import pytest

from engine.history import retention_mark as rm
from engine.ops.reachability import UnsafeToDeleteError
from tests.engine.ops.conftest import SCHEMA, content, rows


@pytest.fixture
def marked(catalog):
    t = catalog.create_table("db.m", SCHEMA, options={"retention.time": "0 s"})
    for i in range(6):
        t.write_arrow(rows([i]))
    return t


def test_expiration_refuses_when_the_recorded_mark_is_missing(marked):
    t = marked
    mark = t.maintenance.advance_retention_mark("0 s").mark
    assert mark is not None and mark.snapshot_id == 6
    shutil.rmtree(rm.mark_dir(t.path))  # the mark is lost; the maintenance log still records it
    before = t.store.snapshots.list_ids()
    with pytest.raises(UnsafeToDeleteError, match="maintenance log records a mark at snapshot 6"):
        t.maintenance.expire_snapshots(retain_max=1)
    # The automatic expiration after a commit (it would keep one snapshot) refuses too, quietly.
    t.with_options({"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1",
                    "snapshot.time-retained": "1 ms"}).write_arrow(rows([7]))
    assert t.store.snapshots.list_ids() == [*before, 7]
    assert content(t, snapshot_id=1)  # nothing the lost mark protected was expired


def test_expiration_refuses_a_mark_older_than_the_recorded_one(marked):
    t = marked
    rm.advance(t.store, 0, now_ms=t.store.snapshots.get(2).time_millis)  # mark-1 at snapshot 2
    t.maintenance.advance_retention_mark("0 s")  # mark-2 at snapshot 6, recorded in the log
    os.remove(os.path.join(rm.mark_dir(t.path), "mark-2"))
    assert t.maintenance.retention_mark().snapshot_id == 2  # an older version now looks in force
    with pytest.raises(UnsafeToDeleteError, match="is at snapshot 2"):
        t.maintenance.expire_snapshots(retain_max=1)
    assert t.store.snapshots.list_ids() == [1, 2, 3, 4, 5, 6]


def test_setting_the_mark_again_unblocks_expiration(marked):
    t = marked
    t.maintenance.advance_retention_mark("0 s")
    shutil.rmtree(rm.mark_dir(t.path))
    with pytest.raises(UnsafeToDeleteError):
        t.maintenance.expire_snapshots(retain_max=1)
    t.maintenance.advance_retention_mark("0 s")  # the operator sets it again: recorded anew
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert report.snapshots == (1, 2, 3, 4, 5)


def test_a_table_never_marked_expires_as_before(catalog):
    t = catalog.create_table("db.n", SCHEMA)
    for i in range(3):
        t.write_arrow(rows([i]))
    t.maintenance.expire_snapshots(retain_max=1)  # its log holds expiration records, no mark
    t.write_arrow(rows([9]))
    assert t.maintenance.expire_snapshots(retain_max=1).snapshots == (3,)
