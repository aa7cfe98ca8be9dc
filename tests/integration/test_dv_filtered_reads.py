"""Filtered SQL reads of primary-key tables with deletion vectors return exactly the live rows.

The expectation is built in Python from the writes themselves (a dict of key → row, updated and
deleted as the statements do), never from a dyntable read. Each query runs with the native scan
on and off; a DV'd row never shows, whatever the projection, the filter's columns, the partition,
the snapshot, or level-0 files written since the last compaction. The source must filter the
rows before they reach Spark (its scan's output row count is the filtered count).
"""

from __future__ import annotations

import pyarrow as pa

from sqlext.source.native import ENABLED
from tests.integration.sql_helpers import run
from tests.integration.test_sql_dml import table

DV = "'deletion-vectors.enabled' = 'true'"


def _values(rows: dict[int, tuple]) -> str:
    return ", ".join(f"({k}, '{v}', {n}, '{p}')" for k, (v, n, p) in sorted(rows.items()))


def _writes() -> list[tuple[str, dict[int, tuple]]]:
    """Base rows, an update of every third key, a delete of every 13th, then an update of a few
    keys: as (kind, rows). The last batch is small so that its compaction moves it up and marks
    the rows it replaces in DVs (a larger one may trigger a full compaction, which leaves none)."""
    base = {k: (f"a{k}", k % 11, "x" if k % 3 else "y") for k in range(200)}
    update = {k: (f"b{k}", (k * 7) % 11, "x" if k % 3 else "y") for k in range(0, 200, 3)}
    last = {k: (f"c{k}", 5, "x" if k % 3 else "y") for k in (4, 50, 101, 151)}
    return [("insert", base), ("insert", update), ("delete", {k: base[k] for k in range(1, 200, 13)}),
            ("insert", last)]


def _apply(state: dict[int, tuple], kind: str, rows: dict[int, tuple]) -> None:
    for k, row in rows.items():
        if kind == "delete":
            state.pop(k, None)
        else:
            state[k] = row


def _rows(session, sql: str) -> list[tuple]:
    """The rows of ``sql`` (sorted), the same with the native scan on and off."""
    spark = session.spark
    out = []
    try:
        for on in ("true", "false"):
            spark.conf.set(ENABLED, on)
            out.append(sorted(run(session, sql), key=repr))
    finally:
        spark.conf.unset(ENABLED)
    assert out[0] == out[1], sql
    return out[0]


def _make(session, name: str, partitioned: bool = False) -> list[dict[int, tuple]]:
    parts = "PARTITIONED BY (p) " if partitioned else ""
    pk = "id,p" if partitioned else "id"
    run(session, f"CREATE TABLE {name} (id BIGINT, v STRING, n INT, p STRING) {parts}"
                 f"TBLPROPERTIES ('primary-key' = '{pk}', 'bucket' = '2', {DV})")
    states, state = [], {}
    for kind, rows in _writes():
        if kind == "delete":
            run(session, f"DELETE FROM {name} WHERE id IN ({', '.join(map(str, rows))})")
        else:
            run(session, f"INSERT INTO {name} VALUES {_values(rows)}")
        _apply(state, kind, rows)
        states.append(dict(state))
    return states


def _expect(state, keep, columns=("id", "v", "n", "p")) -> list[tuple]:
    index = {"id": 0, "v": 1, "n": 2, "p": 3}
    rows = [(k, *row) for k, row in state.items() if keep(k, *row)]
    return sorted((tuple(r[index[c]] for c in columns) for r in rows), key=repr)


def _has_dvs(session, name: str) -> bool:
    return any(s.deletion_files for s in table(session, name).plan().splits)


def test_filters_on_value_and_key_columns_and_projections_never_show_deleted_rows(session):
    states = _make(session, "dvf")
    assert _has_dvs(session, "dvf")
    live = states[-1]
    assert _rows(session, "SELECT * FROM dvf WHERE n < 3") == _expect(live, lambda k, v, n, p: n < 3)
    assert _rows(session, "SELECT v FROM dvf WHERE n = 4") == _expect(live, lambda k, v, n, p: n == 4, ("v",))
    assert _rows(session, "SELECT v, n FROM dvf WHERE id BETWEEN 10 AND 40") == _expect(
        live, lambda k, v, n, p: 10 <= k <= 40, ("v", "n"))
    assert _rows(session, "SELECT id FROM dvf WHERE v LIKE 'a1%' AND id < 150") == _expect(
        live, lambda k, v, n, p: v.startswith("a1") and k < 150, ("id",))
    assert _rows(session, "SELECT count(*) FROM dvf WHERE id = 14") == [(0,)]  # deleted
    assert _rows(session, "SELECT count(*) FROM dvf WHERE v = 'a3'") == [(0,)]  # updated to b3
    # an unfiltered read still agrees
    assert _rows(session, "SELECT * FROM dvf") == _expect(live, lambda *r: True)


def test_partitioned_table_and_time_travel_to_a_snapshot_with_other_dvs(session):
    states = _make(session, "dvp", partitioned=True)
    live = states[-1]
    sql = "SELECT id, v FROM dvp WHERE p = 'x' AND n > 6"
    assert _rows(session, sql) == _expect(live, lambda k, v, n, p: p == "x" and n > 6, ("id", "v"))
    snapshots = sorted(s.id for s in table(session, "dvp").snapshots())
    # the snapshot of the update (its DVs mark the old rows of every third key, not the deletes)
    updated = next(s for s in snapshots if _count_at(session, s) == len(states[1]))
    travelled = f"SELECT id, v FROM dvp VERSION AS OF {updated} WHERE p = 'x' AND n > 6"
    assert _rows(session, travelled) == _expect(states[1], lambda k, v, n, p: p == "x" and n > 6, ("id", "v"))
    assert _rows(session, travelled) != _rows(session, sql)


def _count_at(session, snapshot: int) -> int:
    return run(session, f"SELECT count(*) FROM dvp VERSION AS OF {snapshot}")[0][0]


def test_level0_files_are_not_read_by_filtered_batch_reads(session):
    states = _make(session, "dvl")
    pending = pa.table({"id": pa.array([0, 3, 500], pa.int64()), "v": ["new0", "new3", "new500"],
                        "n": pa.array([1, 1, 1], pa.int32()), "p": ["x", "y", "x"]})
    table(session, "dvl").with_options({"write-only": "true"}).write_arrow(pending)
    assert any(f.level == 0 for s in table(session, "dvl").plan().splits for f in s.files)
    # As Paimon's batch readers: level 0 (not compacted yet) is not visible.
    assert _rows(session, "SELECT id, v FROM dvl WHERE n = 1") == _expect(
        states[-1], lambda k, v, n, p: n == 1, ("id", "v"))


def test_the_source_hands_spark_only_the_rows_that_pass_the_filter(session):
    states = _make(session, "dvs")
    expected = _expect(states[-1], lambda k, v, n, p: n == 5)
    df = session.sql("SELECT * FROM dvs WHERE n = 5")
    assert sorted((tuple(r) for r in df.collect()), key=repr) == expected
    scanned = _scan_output_rows(df)
    assert scanned == len(expected), f"the source returned {scanned} rows for {len(expected)} results"


def _scan_output_rows(df) -> int:
    """``numOutputRows`` of the plan's dyntable scan, after the query ran."""
    plan = df._jdf.queryExecution().executedPlan()
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.finalPhysicalPlan()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if "dyntable" in leaf.toString():
            return int(leaf.metrics().apply("numOutputRows").value())
    raise AssertionError(f"no dyntable scan in {plan.toString()}")
