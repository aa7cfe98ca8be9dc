"""pypaimon reads dyntable's tables after snapshot expiration (append, primary key, with a tag and
a long-lived changelog): nothing a Paimon reader needs is gone, and the EARLIEST hint is right."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def _rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["id"], r["v"]))


def _batch(ids, v, p="a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
def test_pypaimon_reads_after_expiration(pypaimon: PyPaimon, catalog, pk):
    # pk: changelogs outlive snapshots (changelog/changelog-N files), and expiration also runs
    # automatically after each commit (snapshot.num-retained.max = 3).
    options = (
        {
            "bucket": "2",
            "changelog-producer": "input",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "3",
            "changelog.num-retained.max": "100",
        }
        if pk
        else {}
    )
    t = catalog.create_table(
        "db.e", SCHEMA, partition_keys=[] if pk else ["p"], primary_keys=["id"] if pk else [], options=options
    )
    for i in range(6):
        t.write_arrow(_batch([i, i + 1], f"w{i}-", "a" if i % 2 else "b"))
    if pk:
        t.compact(full=True)
    else:
        t.drop_partitions([{"p": "b"}])
    t.write_arrow(_batch([50], "last"))
    report = t.maintenance.expire_snapshots(retain_max=2)
    assert report.snapshots and report.count > 0
    if pk:
        from engine.ops.expire_changelog import changelog_ids

        assert changelog_ids(t.store)
    ids = [s["id"] for s in pypaimon.snapshots(catalog.warehouse, "db.e")]
    assert ids == t.store.snapshots.list_ids()
    assert _rows(pypaimon.read(catalog.warehouse, "db.e", schema=SCHEMA)) == _rows(t.to_arrow())
    oldest = ids[0]
    assert _rows(pypaimon.read(catalog.warehouse, "db.e", snapshot_id=oldest, schema=SCHEMA)) == _rows(
        t.to_arrow(snapshot_id=oldest)
    )
