"""A fixed-bucket primary-key table whose key does not cover the partition (Paimon 1.3+: each
partition keeps its own keys, no global index), written by dyntable, read by pypaimon 2.1 with
dyntable's rows — every snapshot, including one that deletes a key from its old partition."""

from __future__ import annotations

import pyarrow as pa

from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import arrow_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("dt", pa.string())])
WITH_KIND = pa.schema([*SCHEMA, ("rowkind", pa.string())])


def test_pypaimon_reads_a_fixed_bucket_table_whose_key_lacks_the_partition(pypaimon: PyPaimon, catalog,
                                                                           warehouse):
    t = catalog.create_table("db.f", SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                             options={"bucket": "3"})
    ids = list(range(40))
    t.write_arrow(pa.table({"id": ids, "v": [f"a{i}" for i in ids], "dt": ["x"] * 40}, schema=SCHEMA))
    first = ids[:10]
    t.write_arrow(pa.table({"id": first, "v": [f"b{i}" for i in first], "dt": ["y"] * 10}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": ids[:5], "v": ["-"] * 5, "dt": ["x"] * 5, "rowkind": ["-D"] * 5},
                           schema=WITH_KIND))
    t = t.refresh()
    assert t.to_arrow().num_rows == 45  # keys 0-9 in y, 5-39 in x
    for snap in t.snapshots():
        assert arrow_rows(pypaimon.read(warehouse, "db.f", snapshot_id=snap.id)) == arrow_rows(
            t.to_arrow(snapshot_id=snap.id)), snap.id
