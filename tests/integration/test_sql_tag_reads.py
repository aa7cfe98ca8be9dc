"""SQL reads by tags: an OPTIONS hint with incremental-between between two tags."""

from __future__ import annotations


def run(session, sql):
    result = list(session.execute(sql))[-1]
    return sorted(tuple(r) for r in result.dataframe.collect()) if result.dataframe is not None else None


def test_select_incremental_between_two_tags(session):
    run(session, "CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    run(session, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    run(session, "ALTER TABLE t CREATE TAG t1")
    run(session, "INSERT INTO t VALUES (2, 'B'), (3, 'c')")
    run(session, "ALTER TABLE t CREATE TAG t2")
    got = run(session, "SELECT * FROM t /*+ OPTIONS('incremental-between' = 't1,t2') */")
    assert got == [(2, "B"), (3, "c")]
    # The audit log of the same range shows every change with its kind (Paimon's way to see them).
    kinds = run(session, "SELECT * FROM `t$audit_log` /*+ OPTIONS('incremental-between' = 't1,t2') */")
    assert kinds == [("+I", 2, "B"), ("+I", 3, "c")]
