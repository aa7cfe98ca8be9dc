"""Real concurrent processes on one table: a tagger (create, replace, delete tags of snapshots that
are expiring), a committer that expires after every commit, and an orphan cleaner. Whatever the
interleaving, every file a snapshot, tag or branch references must exist afterwards, and every
tag must read exactly the rows of the snapshot it names (issue #20, races 3, 4, 7, 10).

Snapshot ``k`` holds the rows ``0 .. k-1`` (one appended row per commit), so a tag's content is
known from its snapshot id alone. The operations' refusals (a snapshot expired meanwhile, a tag
that exists or does not) are legitimate outcomes; any other error fails the test.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import time

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import (
    NoSuchSnapshotError,
    NoSuchTagError,
    TagAlreadyExistsError,
)
from engine.ops.reachability import ConcurrentChangeError, reachable_files

SCHEMA = pa.schema([("id", pa.int64())])
ROUNDS = 25
FUTURE = 2**62


def _table(warehouse: str):
    return open_catalog(warehouse).get_table("db.t")


def committer(warehouse: str, start: int) -> None:
    t = _table(warehouse)
    for k in range(start, start + ROUNDS):
        t.write_arrow(pa.table({"id": [k]}, schema=SCHEMA))
        try:
            t.refresh().maintenance.expire_snapshots(retain_max=2, older_than=FUTURE)
        except ConcurrentChangeError:
            pass  # the table kept changing under three attempts: refused, nothing deleted


def tagger(warehouse: str, seed: int) -> None:
    rng = random.Random(seed)
    t = _table(warehouse)
    for i in range(ROUNDS * 2):
        t = t.refresh()
        ids = t.store.snapshots.list_ids()
        name = f"t{i % 3}"
        try:
            if rng.random() < 0.2:
                t.refs.tags.delete(name)
            elif ids:
                sid = rng.choice(ids[:2])  # the oldest: the ones being expired
                if name in t.refs.tags.all():
                    t.refs.tags.replace(name, sid)
                else:
                    t.refs.tags.create(name, sid)
        except (NoSuchSnapshotError, NoSuchTagError, TagAlreadyExistsError, ConcurrentChangeError):
            pass  # includes SnapshotExpiredConcurrentlyError: the tag was removed again


def cleaner(warehouse: str, cutoff_ms: int) -> None:
    t = _table(warehouse)
    for _ in range(ROUNDS // 2):
        try:
            t.maintenance.remove_orphan_files(older_than=cutoff_ms, force=True)
        except ConcurrentChangeError:
            pass


@pytest.mark.parametrize("seed", [1, 2])
def test_tagger_committer_and_cleaner_in_three_processes(warehouse, seed):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    for k in range(3):
        t.write_arrow(pa.table({"id": [k]}, schema=SCHEMA))
    time.sleep(0.05)
    cutoff = int(time.time() * 1000)  # only the set-up's files are old enough for the cleaner
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=committer, args=(warehouse, 3)),
        ctx.Process(target=tagger, args=(warehouse, seed)),
        ctx.Process(target=cleaner, args=(warehouse, cutoff)),
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    t = t.refresh()
    missing = [p for p in reachable_files(t.store.io, t.path).files if not os.path.exists(p)]
    assert not missing
    for name, tag in t.refs.tags.all().items():
        got = sorted(t.to_arrow(tag=name).column("id").to_pylist())
        assert got == list(range(tag.snapshot.id)), name
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(3 + ROUNDS))
