"""Write one table per newer Paimon feature with pypaimon; this script runs INSIDE the pypaimon venv.

Its one job: given a warehouse directory, create ``db.<feature>`` for every feature pypaimon 2.1
can write that dyntable's 0.9-era format knowledge may not cover (row tracking, data evolution,
postpone buckets, external data paths, deletion vectors read by merge, BLOB and VARIANT columns,
thin mode, dense statistics, DOUBLE keys with NaN and -0.0, ...), write rows into it the way a
pypaimon user would, and print one JSON object: ``{feature: {"ok": true}}`` or
``{feature: {"ok": false, "error": ...}}`` when pypaimon itself could not write it.

It imports only the standard library, pyarrow and pypaimon, never the dyntable repository (like
``pypaimon_driver.py``). The test (``test_newer_features.py``) then reads and writes every table
with dyntable and re-reads it with pypaimon.

Usage: ``python pypaimon_features.py WAREHOUSE [FEATURE ...]`` (all features when none is named).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(ids: list[int], values: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(values, pa.string())}, schema=ROWS)


class Writer:
    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.catalog = CatalogFactory.create({"warehouse": warehouse})
        self.catalog.create_database("db", True)

    def create(self, name: str, schema: pa.Schema, *, primary_keys=(), partition_keys=(), options=None):
        paimon = Schema.from_pyarrow_schema(schema, partition_keys=list(partition_keys),
                                            primary_keys=list(primary_keys), options=dict(options or {}))
        self.catalog.create_table(f"db.{name}", paimon, False)
        return self.catalog.get_table(f"db.{name}")

    @staticmethod
    def write(table, data: pa.Table) -> None:
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()

    @staticmethod
    def update_by_row_id(table, data: pa.Table, columns: list[str] | None = None) -> None:
        builder = table.new_batch_write_builder()
        update = builder.new_update()
        if columns is not None:
            update = update.with_update_type(columns)
        messages = update.update_by_arrow_with_row_id(data)
        commit = builder.new_commit()
        try:
            commit.commit(messages)
        finally:
            commit.close()


def row_tracking(w: Writer) -> None:
    t = w.create("row_tracking", ROWS, options={"row-tracking.enabled": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.write(t, _rows([4], ["d"]))


def data_evolution(w: Writer) -> None:
    """Every column rewritten by row id: a reader that ignores row ids sees each row twice."""
    t = w.create("data_evolution", ROWS,
                 options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    ids = pa.array([0, 1, 2], pa.int64())
    w.update_by_row_id(t, pa.table({"_ROW_ID": ids, "id": pa.array([1, 2, 3], pa.int64()),
                                    "v": pa.array(["x", "y", "z"], pa.string())}))


def data_evolution_one_column(w: Writer) -> None:
    """One column rewritten by row id: its new files hold only that column (_WRITE_COLS)."""
    t = w.create("data_evolution_one_column", ROWS,
                 options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.update_by_row_id(t, pa.table({"_ROW_ID": pa.array([0, 2], pa.int64()),
                                    "v": pa.array(["x", "z"], pa.string())}), ["v"])


def postpone_bucket(w: Writer) -> None:
    t = w.create("postpone_bucket", ROWS, primary_keys=["id"], options={"bucket": "-2"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))


def _external(w: Writer, name: str, form: Callable[[str], str], **kw: object) -> None:
    target = os.path.join(w.warehouse, f"external-{name}")
    os.makedirs(target, exist_ok=True)
    t = w.create(name, ROWS, options={"data-file.external-paths": form(target),
                                      "data-file.external-paths.strategy": "round-robin",
                                      **kw.pop("options", {})}, **kw)  # type: ignore[arg-type]
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.write(t, _rows([4, 5], ["d", "e"]))


def external_paths_append(w: Writer) -> None:
    _external(w, "external_paths_append", lambda p: "file://" + p)


def external_paths_pk(w: Writer) -> None:
    _external(w, "external_paths_pk", lambda p: "file://" + p, primary_keys=["id"], options={"bucket": "2"})


def dv_merge_on_read(w: Writer) -> None:
    """deletion-vectors.merge-on-read: pypaimon writes level-0 files its readers merge."""
    t = w.create("dv_merge_on_read", ROWS, primary_keys=["id"],
                 options={"bucket": "1", "deletion-vectors.enabled": "true",
                          "deletion-vectors.merge-on-read": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.write(t, _rows([2, 4], ["B", "d"]))


def deletion_vectors(w: Writer) -> None:
    t = w.create("deletion_vectors", ROWS, primary_keys=["id"],
                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))


def dynamic_bucket(w: Writer) -> None:
    t = w.create("dynamic_bucket", ROWS, primary_keys=["id"], options={"bucket": "-1"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.write(t, _rows([2, 5], ["B", "e"]))


def blob_column(w: Writer) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("b", pa.large_binary())])
    t = w.create("blob_column", schema, options={"row-tracking.enabled": "true",
                                                 "data-evolution.enabled": "true", "blob-field": "b"})
    w.write(t, pa.table({"id": [1, 2], "b": pa.array([b"xx", b"yy"], pa.large_binary())}, schema=schema))


VARIANT = pa.struct([pa.field("value", pa.binary(), nullable=False),
                     pa.field("metadata", pa.binary(), nullable=False)])
VARIANT_VALUES = [{"age": 26, "city": "Beijing"}, [1, 2.5, "x"], "text", None]


def _variants(name: str, w: Writer, options: dict[str, str] | None = None) -> None:
    from pypaimon.data.generic_variant import GenericVariant

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("x", VARIANT)])
    t = w.create(name, schema, options=options)
    col = GenericVariant.to_arrow_array(
        [None if v is None else GenericVariant.from_python(v) for v in VARIANT_VALUES])
    w.write(t, pa.table({"id": pa.array(range(len(VARIANT_VALUES)), pa.int64()), "x": col}, schema=schema))


def variant_column(w: Writer) -> None:
    _variants("variant_column", w)


def variant_shredded(w: Writer) -> None:
    shred = {"type": "ROW", "fields": [{"id": 0, "name": "x", "type": {"type": "ROW", "fields": [
        {"id": 0, "name": "age", "type": "BIGINT"}, {"id": 1, "name": "city", "type": "STRING"}]}}]}
    _variants("variant_shredded", w, {"variant.shreddingSchema": json.dumps(shred)})


def thin_mode(w: Writer) -> None:
    t = w.create("thin_mode", ROWS, primary_keys=["id"],
                 options={"bucket": "1", "data-file.thin-mode": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.write(t, _rows([2], ["B"]))


def dense_stats(w: Writer) -> None:
    """Statistics of only some columns (_VALUE_STATS_COLS): pruning must use the right ones."""
    t = w.create("dense_stats", ROWS, primary_keys=["id"],
                 options={"bucket": "1", "metadata.stats-dense-store": "true", "metadata.stats-mode": "none",
                          "fields.v.stats-mode": "full"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"]))
    w.write(t, _rows([7, 8], ["x", "y"]))


def double_keys(w: Writer) -> None:
    """DOUBLE keys with NaN and -0.0, written by pypaimon (Java's Double ordering)."""
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), pa.field("v", pa.string())])
    t = w.create("double_keys", schema, primary_keys=["k"], options={"bucket": "1"})
    nan = float("nan")
    w.write(t, pa.table({"k": [nan, -0.0, 1.0, -5.5], "v": ["n", "mz", "one", "neg"]}, schema=schema))
    w.write(t, pa.table({"k": [2.0, float("nan")], "v": ["two", "n2"]}, schema=schema))


FEATURES: dict[str, Callable[[Writer], None]] = {f.__name__: f for f in (
    row_tracking, data_evolution, data_evolution_one_column, postpone_bucket, external_paths_append,
    external_paths_pk, dv_merge_on_read, deletion_vectors, dynamic_bucket, blob_column, variant_column,
    variant_shredded, thin_mode, dense_stats, double_keys,
)}


def run(scenarios: dict[str, Callable[[Writer], None]], argv: list[str]) -> int:
    """Write the scenarios ``argv`` names (all when none) into the warehouse ``argv[1]``; print one
    JSON object of their outcomes (a failure is reported to the test, which fails on it)."""
    warehouse, names = argv[1], argv[2:] or list(scenarios)
    writer = Writer(warehouse)
    out: dict[str, dict[str, object]] = {}
    for name in names:
        try:
            scenarios[name](writer)
            out[name] = {"ok": True}
        except Exception as e:  # reported to the test, which fails on it
            out[name] = {"ok": False, "error": f"{type(e).__name__}: {e}",
                         "traceback": traceback.format_exc()}
    print(json.dumps(out))
    return 0


def main(argv: list[str]) -> int:
    return run(FEATURES, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
