"""Filtered and limited SQL reads of merge-on-read primary-key tables.

The expectation is built in Python from the writes (a dict of key → newest row), never from a
dyntable read. The source applies the query's pushed filter after the merge, so Spark receives
only the rows that pass (the scan's output row count is the answer's), a value filter never shows
an older version of a key, a comparison Spark evaluates differently from the engine (a string
column against a number) is left to Spark and stays exact, and a plain LIMIT stops each split
early.
"""

from __future__ import annotations

from tests.integration.sql_helpers import run
from tests.integration.test_dv_filtered_reads import _scan_output_rows

OPTIONS = "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2', 'write-only' = 'true')"


def _make(session, name: str) -> dict[int, tuple]:
    """Three overlapping writes (each a level-0 file per bucket: every split merges) and the model."""
    run(session, f"CREATE TABLE {name} (id BIGINT, v STRING, n INT) {OPTIONS}")
    state: dict[int, tuple] = {}
    for gen, keys in enumerate((range(300), range(0, 300, 2), range(0, 300, 5))):
        rows = {k: (f"g{gen}k{k}", (k * (gen + 3)) % 100) for k in keys}
        values = ", ".join(f"({k}, '{v}', {n})" for k, (v, n) in rows.items())
        run(session, f"INSERT INTO {name} VALUES {values}")
        state.update(rows)
    return state


def _splits_merge(session, name: str) -> bool:
    from tests.integration.test_sql_dml import table

    return all(len(s.files) > 1 for s in table(session, name).plan().splits)


def test_only_the_rows_that_pass_cross_and_no_old_version_shows(session):
    state = _make(session, "fm")
    assert _splits_merge(session, "fm")
    df = session.sql("SELECT id, v, n FROM fm WHERE n = 7")
    expected = sorted((k, v, n) for k, (v, n) in state.items() if n == 7)
    assert sorted(tuple(r) for r in df.collect()) == expected and expected
    assert _scan_output_rows(df) == len(expected)
    # every key's first version had n = 3k % 100; none of the superseded ones may come back
    old = run(session, "SELECT count(*) FROM fm WHERE v LIKE 'g0%' AND id % 2 = 0")
    assert old == [(0,)]
    ranged = sorted(r[0] for r in run(session, "SELECT id FROM fm WHERE n >= 90 AND id < 100"))
    assert ranged == sorted(k for k, (_, n) in state.items() if n >= 90 and k < 100)


def test_a_comparison_spark_evaluates_otherwise_is_left_to_spark(session):
    run(session, f"CREATE TABLE fs (id BIGINT, v STRING) {OPTIONS}")
    run(session, "INSERT INTO fs VALUES (1, '5'), (2, '05'), (3, '6'), (4, '7')")
    run(session, "INSERT INTO fs VALUES (3, '9'), (4, '8')")
    # v = 5: Spark compares the text as a number ('05' = 5): the engine would compare text
    df = session.sql("SELECT id FROM fs WHERE v = 5")
    assert sorted(r[0] for r in df.collect()) == [1, 2]
    assert _scan_output_rows(df) == 4  # nothing pushed: every row crossed


def test_a_plain_limit_stops_each_split_early(session):
    state = _make(session, "fl")
    df = session.sql("SELECT id, v FROM fl LIMIT 4")
    rows = df.collect()
    assert len(rows) == 4 and all(state[r.id][0] == r.v for r in rows)
    assert _scan_output_rows(df) <= 4 * 2  # at most 4 rows from each of the 2 buckets' splits
    filtered = session.sql("SELECT id, n FROM fl WHERE n < 50 LIMIT 3").collect()
    assert len(filtered) == 3 and all(state[r.id][1] == r.n < 50 for r in filtered)
    # an ORDER BY needs every row
    top = session.sql("SELECT id FROM fl ORDER BY id DESC LIMIT 2")
    assert [r.id for r in top.collect()] == [299, 298]
    assert _scan_output_rows(top) == len(state)


def test_time_travel_to_an_older_column_type_leaves_the_filter_to_spark(session):
    run(session, f"CREATE TABLE ft (id BIGINT, f FLOAT) {OPTIONS}")
    run(session, "INSERT INTO ft VALUES (1, 0.7), (2, 0.5)")
    run(session, "INSERT INTO ft VALUES (1, 0.7), (3, 0.9)")  # a second run: the splits merge
    run(session, "ALTER TABLE ft ALTER COLUMN f TYPE DOUBLE")
    # Spark widens the FLOAT 0.7 of snapshot 2 to 0.699999988... < 0.7: the engine, given the
    # latest type's literal, would narrow 0.7 to FLOAT and compare equal
    rows = sorted(r[0] for r in run(session, "SELECT id FROM ft VERSION AS OF 2 WHERE f < 0.7"))
    assert rows == [1, 2]
    assert sorted(r[0] for r in run(session, "SELECT id FROM ft WHERE f < 0.7")) == [1, 2]
