"""A deterministic workload for the kill -9 suite, and the model of what it must leave behind.

Run as ``python -m tests.engine.crash_workload WAREHOUSE SEED``: the child applies the seed's
operations to ``db.ap`` (append, partitioned) and ``db.pk`` (primary key, partitioned, automatic
compaction) through a FileIO wrapped by ``engine.io.faults.fault_from_env`` — so the parent can
make it die with SIGKILL at an exact FileIO call — and prints ``ACK <i>`` (flushed) after each
operation returned. The last line of a run that was not killed is ``DONE <calls>``.

The parent replays the same operations on a model: after a kill, the tables must read the model
after every acknowledged operation, with or without the one operation that was running.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pyarrow as pa

from engine import open_catalog
from engine.io.faults import FailingFileIO, fault_from_env
from engine.table import Table

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())])
PARTITIONS = ("a", "b", "c")
Op = tuple[Any, ...]
State = tuple[tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...]]  # (append rows, pk rows)


def create_tables(warehouse: str) -> None:
    cat = open_catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table("db.ap", SCHEMA, partition_keys=["p"], options={"bucket": "1", "bucket-key": "id"})
    cat.create_table("db.pk", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"],
                     options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})


def operations(seed: int, count: int = 10) -> list[Op]:
    """The seed's operations; every row value is unique, so a lost or doubled write shows.

    Both tables get data first; then writes dominate, mixed with compactions, an overwrite and
    partition drops.
    """
    rng = random.Random(seed)
    kinds = (
        ["ap-append"] * 3
        + ["pk-upsert"] * 4
        + ["ap-overwrite", "ap-drop", "pk-compact", "ap-compact", "pk-drop"]
    )
    ops: list[Op] = []
    for i in range(count):
        kind = ("ap-append", "pk-upsert")[i] if i < 2 else rng.choice(kinds)
        p = rng.choice(PARTITIONS)
        ids = sorted(rng.sample(range(6), rng.randint(1, 3)))
        ops.append((kind, p, tuple(ids), f"s{seed}-op{i}"))
    return ops


def _batch(p: str, ids: tuple[int, ...], v: str) -> pa.Table:
    return pa.table({"p": [p] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def apply(ap: Table, pk: Table, op: Op) -> None:
    kind, p, ids, v = op
    if kind == "ap-append":
        ap.write_arrow(_batch(p, ids, v))
    elif kind == "ap-overwrite":
        ap.write_arrow(_batch(p, ids, v), overwrite={"p": p})
    elif kind == "ap-drop":
        ap.drop_partitions([{"p": p}])
    elif kind == "ap-compact":
        ap.compact(full=True)
    elif kind == "pk-upsert":
        pk.write_arrow(_batch(p, ids, v))
    elif kind == "pk-compact":
        pk.compact(full=True)
    elif kind == "pk-drop":
        pk.drop_partitions([{"p": p}])
    else:
        raise AssertionError(kind)


def model(ops: list[Op]) -> State:
    """The two tables' rows after ``ops`` (sorted tuples)."""
    ap: list[tuple[Any, ...]] = []
    pk: dict[tuple[str, int], str] = {}
    for kind, p, ids, v in ops:
        if kind == "ap-append":
            ap += [(p, i, v) for i in ids]
        elif kind == "ap-overwrite":
            ap = [r for r in ap if r[0] != p] + [(p, i, v) for i in ids]
        elif kind == "ap-drop":
            ap = [r for r in ap if r[0] != p]
        elif kind == "pk-upsert":
            pk.update({(p, i): v for i in ids})
        elif kind == "pk-drop":
            pk = {k: val for k, val in pk.items() if k[0] != p}
    return tuple(sorted(ap)), tuple(sorted((p, i, v) for (p, i), v in pk.items()))


def read_state(warehouse: str) -> State:
    cat = open_catalog(warehouse)
    out = []
    for name in ("db.ap", "db.pk"):
        t = cat.get_table(name).to_arrow().select(["p", "id", "v"])
        out.append(tuple(sorted(tuple(r.values()) for r in t.to_pylist())))
    return out[0], out[1]


def main(warehouse: str, seed: int) -> None:
    cat = open_catalog(warehouse)
    plain_ap, plain_pk = cat.get_table("db.ap"), cat.get_table("db.pk")
    # one counter for both tables, so the kill point is a single FileIO call number
    io = fault_from_env(plain_ap.store.io)
    ap = Table(None, plain_ap.identifier, io, plain_ap.store.paths, plain_ap.store.schema)
    pk = Table(None, plain_pk.identifier, io, plain_pk.store.paths, plain_pk.store.schema)
    for i, op in enumerate(operations(seed)):
        apply(ap, pk, op)
        print(f"ACK {i}", flush=True)
    print(f"DONE {io.calls if isinstance(io, FailingFileIO) else -1}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
