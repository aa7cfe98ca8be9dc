"""A filter on a DOUBLE column holding NaN returns what Spark itself returns on the same rows: NaN is
equal to itself and greater than every other value, whether the rows come from a deletion-vector
read (filtered in the reader), a merge-on-read table, or an append table whose files are skipped
on their statistics (which leave NaN out of min/max)."""

from __future__ import annotations

import pytest

from tests.integration.sql_helpers import run

QUERIES = ("price > 1.0", "price >= 1.0", "price = double('NaN')", "price < 1.0",
           "NOT (price > 1.0)", "price <= double('NaN')")
KINDS = {
    "dv": "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', 'deletion-vectors.enabled' = 'true')",
    "mor": "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')",
    "app": "",
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_nan_filters_match_spark_parquet(session, kind):
    spark = session.spark
    name, reference = f"nan_{kind}", f"nan_ref_{kind}"
    run(session, f"CREATE TABLE {name} (id BIGINT, price DOUBLE) {KINDS[kind]}")
    run(session, f"INSERT INTO {name} VALUES (1, 0.5), (2, double('NaN')), (3, 2.0), (4, NULL)")
    first = 0.5
    if kind != "app":  # a second write, so that the DV / merge paths have something to do
        run(session, f"INSERT INTO {name} VALUES (1, 0.7)")
        first = 0.7
    # Spark's own evaluation of the same rows is the reference.
    spark.sql(f"CREATE OR REPLACE TEMP VIEW {reference} AS SELECT * FROM VALUES (1L, {first}D), "
              f"(2L, double('NaN')), (3L, 2.0D), (4L, CAST(NULL AS DOUBLE)) AS t(id, price)")
    for q in QUERIES:
        ours = sorted(r[0] for r in run(session, f"SELECT id FROM {name} WHERE {q}"))
        theirs = sorted(r[0] for r in spark.sql(f"SELECT id FROM {reference} WHERE {q}").collect())
        assert ours == theirs, q
    assert sorted(r[0] for r in run(session, f"SELECT id FROM {name} WHERE price > 1.0")) == [2, 3]
