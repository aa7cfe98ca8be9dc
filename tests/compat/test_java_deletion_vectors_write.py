"""Primary-key tables with deletion vectors written by dyntable and by Java Paimon 0.9, in turns.

After every step (a write, an update, a delete, a compaction) by either engine, dyntable's
engine and Java's batch read return the same rows; tables dyntable wrote are also read by
pypaimon (2.1) when its venv is available, which applies 32-bit DVs. pypaimon cannot read tables
Java 0.9 wrote at all (``test_java_deletion_vectors_read.py`` says why), so it reads only the
dyntable-made tables. The DVs dyntable writes are the ones Java's scan reports.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog
from tests.compat.java_oracle import JavaOracle, JavaPaimon, arrow_rows, sort_rows

pytestmark = pytest.mark.java

COLUMNS = [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("n", "INT")]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])
ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "fields.v.aggregate-function": "last_non_null_value"},
}


@pytest.fixture
def java(paimon_java: JavaOracle, tmp_path) -> JavaPaimon:
    return JavaPaimon(str(tmp_path / "wh"), paimon_java)


def _rows(ids, tag: str, n=None, kinds=None) -> pa.Table:
    ids = list(ids)
    cols = {"id": pa.array(ids, pa.int64()), "v": pa.array([f"{tag}{i}" for i in ids]),
            "n": pa.array([n if n is not None else i % 50 for i in ids], pa.int32())}
    if kinds is not None:
        cols["rowkind"] = pa.array(kinds)
    return pa.table(cols)


def _java_rows(t: pa.Table) -> list[list]:
    return [[r["id"], r["v"], r["n"]] for r in t.to_pylist()]


def _same_everywhere(java: JavaPaimon, name: str, pypaimon=None) -> list[tuple]:
    ours = arrow_rows(open_catalog(java.warehouse).get_table(name).to_arrow())
    assert ours == java.read(name)
    if pypaimon is not None:
        assert sort_rows(tuple(r.values()) for r in pypaimon.read(java.warehouse, name).to_pylist()) == ours
    return ours


def _java_dvs(java: JavaPaimon, name: str) -> dict[str, dict]:
    return {f["file"]: f["deletion_file"] for f in java.files(name) if f["deletion_file"] is not None}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_dv_table_dyntable_writes_reads_the_same_in_java_and_pypaimon(java, engine, request):
    pypaimon = request.getfixturevalue("pypaimon") if engine == "deduplicate" else None
    catalog = open_catalog(java.warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true", **ENGINES[engine]})
    t.write_arrow(_rows(range(1500), "a"))
    _same_everywhere(java, "db.t", pypaimon)
    t.refresh().write_arrow(_rows(range(0, 1500, 7), "b"))
    _same_everywhere(java, "db.t", pypaimon)
    assert _java_dvs(java, "db.t"), "the update left DVs on the base files"
    assert all(f["level"] > 0 for f in java.files("db.t"))
    if engine != "aggregation":
        t.refresh().write_arrow(_rows(range(3, 1500, 11), "d", kinds=["-D"] * len(range(3, 1500, 11))))
        rows = _same_everywhere(java, "db.t", pypaimon)
        assert 3 not in {r[0] for r in rows}
    t.refresh().compact(full=True)
    _same_everywhere(java, "db.t", pypaimon)
    assert not _java_dvs(java, "db.t"), "a full compaction applied and dropped every DV"


@pytest.mark.parametrize("engine", list(ENGINES))
def test_java_and_dyntable_take_turns_on_one_dv_table(java, engine):
    java.create_table("db.j", COLUMNS, primary_keys=["id"],
                      options={"deletion-vectors.enabled": "true", "bucket": "2", "file.format": "parquet",
                               **ENGINES[engine]})
    java.write("db.j", _java_rows(_rows(range(2000), "a")))
    java.write("db.j", _java_rows(_rows(range(0, 2000, 5), "b")))
    _same_everywhere(java, "db.j")
    table = open_catalog(java.warehouse).get_table("db.j")
    table.write_arrow(_rows(range(1, 2000, 9), "c"))  # dyntable marks rows of Java's files
    _same_everywhere(java, "db.j")
    java.write("db.j", _java_rows(_rows(range(2, 2000, 13), "e")))  # Java marks rows of ours
    _same_everywhere(java, "db.j")
    if engine != "aggregation":
        ids = range(4, 2000, 17)
        table.refresh().write_arrow(_rows(ids, "x", kinds=["-D"] * len(ids)))
        _same_everywhere(java, "db.j")
        gone = range(6, 2000, 19)
        java.write("db.j", [[i, None, None] for i in gone], row_kinds=["-D"] * len(gone))
        _same_everywhere(java, "db.j")
    java.compact("db.j", full=False)
    _same_everywhere(java, "db.j")
    table.refresh().compact(full=False)
    table.refresh().write_arrow(_rows(range(0, 2000, 3), "f", n=1))
    _same_everywhere(java, "db.j")
    java.compact("db.j", full=True)
    _same_everywhere(java, "db.j")
    table.refresh().write_arrow(_rows(range(7, 2000, 23), "g"))
    table.refresh().compact(full=True)
    _same_everywhere(java, "db.j")
    assert not _java_dvs(java, "db.j")


def _cdc(ids, tag: str, deleted) -> pa.Table:
    """Upserts of ``ids`` with every id in ``deleted`` a ``-D`` instead: one batch of mixed kinds."""
    ids = list(ids)
    kinds = ["-D" if i in deleted else "+U" for i in ids]
    return _rows(ids, tag, kinds=kinds)


def test_level_0_moved_up_unrewritten_reads_the_same_in_java_and_pypaimon(java, pypaimon):
    """A CDC batch (updates, inserts, deletes) written by two task writers, as a Spark job does: the
    compaction moves both level-0 files up without rewriting them (each into a level of its own;
    their deletes and the rows they supersede marked in DVs) and leaves the base in place; Java and
    pypaimon read the same rows, and Java writes and compacts on top of it."""
    catalog = open_catalog(java.warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.m", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(3000), "a"))
    base = {f["file"] for f in java.files("db.m")}
    deleted = set(range(5, 3000, 20))
    builder = t.refresh().new_write_builder(commit_user="job")
    messages = []
    for task, ids in enumerate((range(0, 3600, 3), range(1, 3600, 3))):  # updates, deletes, inserts >= 3000
        messages += builder.new_task_write("job", task).write_all([_cdc(ids, f"t{task}", deleted)])
    builder.new_commit().commit(messages)
    rows = _same_everywhere(java, "db.m", pypaimon)
    assert not deleted & {r[0] for r in rows if r[0] % 3 != 2}
    files = java.files("db.m")
    assert base <= {f["file"] for f in files}, "the base files stay, marked in DVs"
    levels = {b: sorted({f["level"] for f in files if f["bucket"] == b and f["file"] not in base})
              for b in {f["bucket"] for f in files}}
    assert all(len(lv) == 2 and 0 not in lv for lv in levels.values()), levels
    # Java writes on top (its lookup reads our files minus their DVs), then compacts
    java.write("db.m", _java_rows(_rows(range(0, 3600, 4), "j")))
    _same_everywhere(java, "db.m")
    java.compact("db.m", full=False)
    _same_everywhere(java, "db.m")
    # (pypaimon reads no table Java 0.9 wrote manifests for: test_java_deletion_vectors_read.py)
    t.refresh().write_arrow(_cdc(range(2, 3600, 5), "c", {7, 17, 3002}))
    _same_everywhere(java, "db.m")
    java.compact("db.m", full=True)
    _same_everywhere(java, "db.m")
    assert not _java_dvs(java, "db.m")
