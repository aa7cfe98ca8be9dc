"""SQL queries prune partitions through the per-statement views (and still answer exactly)."""

from __future__ import annotations


def test_partition_predicate_reaches_the_planner(session):
    session.sql("CREATE TABLE p (id BIGINT, dt STRING) PARTITIONED BY (dt)")
    session.sql("INSERT INTO p VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'a')")
    df = session.sql("SELECT id FROM p WHERE dt = 'a' AND id > 0")
    assert df.inputFiles() and all("/dt=a/" in f for f in df.inputFiles())  # native scan: dt=a files only
    python = session.sql(
        "SELECT id FROM p /*+ OPTIONS('read.native-scan.enabled' = 'false') */ WHERE dt = 'a' AND id > 0"
    )
    assert python.rdd.getNumPartitions() == 1  # the Python source: one split, partition dt=a only
    assert sorted(r.id for r in df.collect()) == [1, 4]
    # an unprunable predicate reads everything but is still exact
    assert sorted(r.id for r in session.sql("SELECT id FROM p WHERE dt = 'a' OR id = 3").collect()) == [
        1,
        3,
        4,
    ]
    # a literal of another type than the column prunes nothing and stays exact
    assert session.sql("SELECT count(*) AS n FROM p WHERE id = '2'").collect()[0].n == 1
