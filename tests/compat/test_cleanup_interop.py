"""pypaimon reads a dyntable table after orphan cleanup and partition expiration: nothing it needs is gone.

Partition expiration is a mark-delete OVERWRITE snapshot: pypaimon must read the head without the
expired partitions and an older snapshot (time travel) with them. Orphan cleanup must leave every
file of every snapshot in place while it deletes the leftovers of crashed writers.
"""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from engine import open_catalog
from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_pypaimon_reads_after_partition_expiration_and_orphan_cleanup(
    pypaimon: PyPaimon, tmp_path, primary_key
):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.c",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"] if primary_key else (),
        options={"bucket": "1", **({} if primary_key else {"bucket-key": "id"})},
    )
    t.write_arrow(
        pa.table(
            {"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["2000-01-01", "2000-01-02", "2999-01-01"]},
            schema=SCHEMA,
        )
    )
    t.write_arrow(pa.table({"id": [4], "v": ["d"], "dt": ["2999-01-01"]}, schema=SCHEMA))
    before = t.latest_snapshot().id
    assert t.maintenance.expire_partitions("1 d").texts() == ["dt=2000-01-01", "dt=2000-01-02"]
    # leftovers of a crashed writer and a failed commit, two days old
    bucket = os.path.join(t.path, "dt=2999-01-01", "bucket-0")
    for path in (
        os.path.join(bucket, "data-crashed-0.parquet"),
        os.path.join(t.path, "manifest", "manifest-dead-0"),
    ):
        with open(path, "wb") as f:
            f.write(b"x" * 64)
    when = time.time() - 2 * 86_400
    for d, _, files in os.walk(t.path):
        for name in files:
            os.utime(os.path.join(d, name), (when, when))
    assert t.maintenance.remove_orphan_files().count == 2
    assert _ids(pypaimon.read(cat.warehouse, "db.c", schema=SCHEMA)) == [3, 4]
    assert _ids(pypaimon.read(cat.warehouse, "db.c", snapshot_id=before, schema=SCHEMA)) == [1, 2, 3, 4]


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_pypaimon_reads_data_files_under_data_file_path_directory(pypaimon: PyPaimon, tmp_path, primary_key):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.d", SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"] if primary_key else (),
        options={"bucket": "1", "data-file.path-directory": "data",
                 **({} if primary_key else {"bucket-key": "id"})},
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["d1", "d2"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3], "v": ["c"], "dt": ["d1"]}, schema=SCHEMA))
    assert os.path.isdir(os.path.join(t.path, "data", "dt=d1", "bucket-0"))
    assert not os.path.exists(os.path.join(t.path, "dt=d1"))
    assert _ids(pypaimon.read(cat.warehouse, "db.d", schema=SCHEMA)) == [1, 2, 3]
