"""Concurrent processes on shared tables: nothing acknowledged is lost, nothing failed is visible.

Writer processes upsert into one primary-key table and append to one append table, while a
compaction loop compacts both and an overwriter replaces (and sometimes drops) one partition
that only it uses. Every process logs the outcome of each operation it ran (returned → committed,
with the snapshot id; raised → failed) to its own file, fsynced before it moves on; writer 0 of
each table commits without retries, so that some writes do fail. The parent
then checks the tables against the logs alone, so the assertions hold for every interleaving:

* both tables read, and every snapshot in their history plans (each delta applied to its base);
* append table: the rows of committed writes are present exactly once, failed writes' rows absent;
* primary-key table: every key holds the value of the committed write of that key with the
  highest APPEND snapshot id (the last committed write wins); each write also carries a key
  no other write uses, so a committed write is present and a failed one absent, exactly;
* the overwriter's partition holds exactly the result of its last successful operation;
* no data file, manifest or manifest list is left that no snapshot references.

Run as ``python -m tests.engine.test_concurrency ROLE WAREHOUSE INDEX COMMITS LOG`` for one
process (the parent does this); the processes start together on a READY/GO handshake.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
WRITER_PARTITIONS = ("a", "b")
OWN_PARTITION = "ow"  # only the overwriter writes here
SHARED_KEYS = range(5)  # every primary-key write upserts these, so writers race on the same keys
OPTIONS = {
    "commit.max-retries": "1000",
    "commit.min-retry-wait": "2",
    "commit.max-retry-wait": "100",
}
REPO = Path(__file__).resolve().parents[2]


def create_tables(warehouse: str) -> None:
    from engine import open_catalog

    cat = open_catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table("db.pk", SCHEMA, partition_keys=["p"], primary_keys=["p", "k"],
                     options={**OPTIONS, "bucket": "2", "num-sorted-run.compaction-trigger": "3"})
    cat.create_table("db.ap", SCHEMA, partition_keys=["p"], options=OPTIONS)


# -- what each operation writes (a pure function of role, process index and operation index) ------


def pk_rows(writer: int, op: int) -> dict[str, list[Any]]:
    p = WRITER_PARTITIONS[op % 2]
    owned, unique = 1_000 + writer * 100 + op % 5, 1_000_000 + writer * 1_000 + op
    keys = [*SHARED_KEYS, owned, unique]
    return {"p": [p] * len(keys), "k": keys, "v": [f"pk-w{writer}-op{op}"] * len(keys)}


def ap_rows(writer: int, op: int) -> dict[str, list[Any]]:
    keys = [writer * 1_000_000 + op * 10 + j for j in range(10)]
    return {"p": [WRITER_PARTITIONS[op % 2]] * 10, "k": keys, "v": [f"ap-w{writer}-op{op}"] * 10}


def overwriter_op(op: int) -> tuple[str, str, dict[str, list[Any]]]:
    """(table, action, rows): alternate tables; every 7th operation drops the partition instead."""
    table = ("pk", "ap")[op % 2]
    if op % 7 == 6:
        return table, "drop", {"p": [], "k": [], "v": []}
    keys = [op * 10 + j for j in range(op % 4 + 1)]
    return table, "overwrite", {"p": [OWN_PARTITION] * len(keys), "k": keys, "v": [f"ow-op{op}"] * len(keys)}


# -- the child process -------------------------------------------------------------------------


class _Log:
    def __init__(self, path: str) -> None:
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the process exit

    def record(self, **fields: Any) -> None:
        self._f.write(json.dumps(fields) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())  # durable before the next operation starts


def _outcome(log: _Log, op: int, run: Any, **fields: Any) -> None:
    from engine.errors import CommitStateUnknownError

    try:
        result = run()
    except CommitStateUnknownError as e:
        log.record(op=op, status="unknown", error=repr(e), **fields)
    except Exception as e:  # noqa: BLE001 - a reported failure is a legitimate outcome; it is checked
        log.record(op=op, status="failed", error=f"{type(e).__name__}: {e}", **fields)
    else:
        log.record(op=op, status="ok", snapshots=list(result.snapshot_ids), **fields)


def _hasty(table: Any) -> Any:
    """The table with no commit retries, so that this process's writes do fail when they lose a race."""
    from engine.table import Table

    schema = table.store.schema
    schema = dataclasses.replace(schema, options={**schema.options, "commit.max-retries": "0"})
    return Table(table.catalog, table.identifier, table.store.io, table.store.paths, schema)


def child(role: str, warehouse: str, index: int, commits: int, log_path: str) -> None:
    from engine import open_catalog
    from engine.errors import CommitConflictError

    cat = open_catalog(warehouse)
    pk, ap = cat.get_table("db.pk"), cat.get_table("db.ap")
    if role in ("pk-writer", "ap-writer") and index == 0:
        pk, ap = _hasty(pk), _hasty(ap)
    log = _Log(log_path)
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        return
    if role == "pk-writer":
        for op in range(commits):
            rows = pk_rows(index, op)
            _outcome(log, op, lambda: pk.write_arrow(pa.table(rows, schema=SCHEMA)), rows=rows)  # noqa: B023
    elif role == "ap-writer":
        for op in range(commits):
            rows = ap_rows(index, op)
            _outcome(log, op, lambda: ap.write_arrow(pa.table(rows, schema=SCHEMA)), rows=rows)  # noqa: B023
    elif role == "overwriter":
        for op in range(commits):
            name, action, rows = overwriter_op(op)
            table = pk if name == "pk" else ap
            if action == "drop":
                run = lambda t=table: t.refresh().drop_partitions([{"p": OWN_PARTITION}])  # noqa: E731
            else:
                data = pa.table(rows, schema=SCHEMA)
                run = lambda t=table, d=data: t.write_arrow(d, overwrite={"p": OWN_PARTITION})  # noqa: E731
            _outcome(log, op, run, table=name, action=action, rows=rows)
    elif role == "compactor":
        # Up to `commits` rounds over both tables, fewer if the others finish first (the parent then
        # creates the stop file); it then waits for the parent's STOP line. A compaction that loses a
        # race is simply retried by the next round.
        stop = Path(log_path + ".stop")
        for op in range(commits):
            if stop.exists():
                break
            for name, table in (("pk", pk), ("ap", ap)):
                try:
                    result = table.refresh().compact(full=op % 3 != 1)
                    log.record(op=op, table=name, status="ok", snapshots=list(result.snapshot_ids))
                except CommitConflictError as e:
                    log.record(op=op, table=name, status="failed", error=str(e))
        sys.stdin.readline()
    else:
        raise SystemExit(f"unknown role {role!r}")


# -- the parent: run, then check against the logs ------------------------------------------------


def _read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def run_processes(
    warehouse: str, pk_writers: int, ap_writers: int, commits: int, logs: Path
) -> dict[str, list]:
    """Start every process, release them together, wait; returns each role's logs."""
    roles = ([("pk-writer", i) for i in range(pk_writers)] + [("ap-writer", i) for i in range(ap_writers)]
             + [("overwriter", 0), ("compactor", 0)])
    procs = []

    def stderr_of(role: str, i: int) -> str:
        return (logs / f"{role}-{i}.err").read_text()

    for role, i in roles:
        log = logs / f"{role}-{i}.jsonl"
        err = open(logs / f"{role}-{i}.err", "w")  # noqa: SIM115 - closed below
        cmd = [sys.executable, "-m", "tests.engine.test_concurrency", role, warehouse, str(i), str(commits),
               str(log)]
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                text=True)
        procs.append((role, i, log, proc, err))
    try:
        for role, i, _log, proc, _err in procs:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line.strip() == "READY", f"{role}-{i} did not start:\n{stderr_of(role, i)}"
        for *_, proc, _err in procs:
            proc.stdin.write("GO\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
        compactor = procs[-1]
        for role, i, _log, proc, _err in procs[:-1]:
            assert proc.wait(timeout=600) == 0, f"{role}-{i} crashed:\n{stderr_of(role, i)}"
        Path(str(compactor[2]) + ".stop").touch()
        compactor[3].stdin.write("STOP\n")  # type: ignore[union-attr]
        compactor[3].stdin.flush()  # type: ignore[union-attr]
        assert compactor[3].wait(timeout=600) == 0, f"the compactor crashed:\n{stderr_of('compactor', 0)}"
    finally:
        for *_, proc, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            err.close()
    out: dict[str, list] = {}
    for role, _i, log, _proc, _err in procs:
        out.setdefault(role, []).append(_read_log(log))
    return out


def _rows_of(table: Any) -> list[tuple[str, int, str]]:
    t = table.to_arrow()
    return list(zip(*(t.column(c).to_pylist() for c in ("p", "k", "v")), strict=True))


def _triples(rows: dict[str, list[Any]]) -> Iterable[tuple[str, int, str]]:
    return zip(rows["p"], rows["k"], rows["v"], strict=True)


def referenced_files(table: Any) -> set[str]:
    """Every file (relative to the table root) that some snapshot references, directly or not."""
    from engine.meta.binary_row import deserialize_row

    store = table.store
    root = store.paths.root
    ms = store.manifests
    refs: set[str] = set()
    part_dirs: dict[bytes, str] = {}

    def rel(path: str) -> str:
        return os.path.relpath(path, root)

    for snap in store.snapshots.all():
        refs.add(rel(store.paths.snapshot_file(snap.id)))
        lists = [snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list]
        for name in filter(None, lists):
            refs.add(rel(store.paths.manifest_file(name)))
            for meta in ms.read_list(name):
                refs.add(rel(store.paths.manifest_file(meta.file_name)))
                for e in ms.read_entries(meta.file_name):
                    if e.partition not in part_dirs:
                        values = deserialize_row(e.partition, store.partition_types)
                        part_dirs[e.partition] = store.partition_dir(values)
                    for f in (e.file.file_name, *e.file.extra_files):
                        refs.add(rel(store.paths.data_file(part_dirs[e.partition], e.bucket, f)))
        for name in filter(None, [snap.index_manifest, snap.statistics]):
            refs.add(rel(store.paths.manifest_file(name)))
    return refs


def unreferenced_files(table: Any) -> list[str]:
    root = table.store.paths.root
    on_disk = set()
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            on_disk.add(os.path.relpath(os.path.join(dirpath, f), root))
    metadata = {p for p in on_disk if p.startswith(("schema" + os.sep, "snapshot" + os.sep))
                and not p.startswith("snapshot" + os.sep + "snapshot-")}
    refs = referenced_files(table)
    missing = sorted(r for r in refs if r not in on_disk)
    assert not missing, f"referenced but missing: {missing[:10]}"
    return sorted(on_disk - refs - metadata)


def check(warehouse: str, logs: dict[str, list]) -> dict[str, int]:
    """Every promise of the module docstring, from the logs alone; returns counts for the report."""
    from engine import open_catalog

    cat = open_catalog(warehouse)
    pk, ap = cat.get_table("db.pk"), cat.get_table("db.ap")
    every_log = [entry for per_role in logs.values() for log in per_role for entry in log]
    unknown = [e for e in every_log if e["status"] == "unknown"]
    assert not unknown, f"a local commit's outcome was unknown: {unknown[:3]}"

    for table in (pk, ap):  # every delta applies to its base: each snapshot plans
        for snap in table.snapshots():
            table.plan(snapshot_id=snap.id)
    pk_rows_now, ap_rows_now = _rows_of(pk), _rows_of(ap)

    # Append table: committed rows exactly once, failed rows absent.
    ap_writes = [e for log in logs["ap-writer"] for e in log]
    expected_ap = sorted(t for e in ap_writes if e["status"] == "ok" for t in _triples(e["rows"]))
    assert sorted(r for r in ap_rows_now if r[0] != OWN_PARTITION) == expected_ap

    # Primary-key table: the committed write with the highest APPEND snapshot id wins each key.
    pk_writes = [e for log in logs["pk-writer"] for e in log]
    winner: dict[tuple[str, int], tuple[int, str]] = {}
    for e in pk_writes:
        if e["status"] != "ok":
            continue
        append_id = e["snapshots"][0]
        for p, k, v in _triples(e["rows"]):
            if winner.get((p, k), (-1, ""))[0] < append_id:
                winner[(p, k)] = (append_id, v)
    got = [r for r in pk_rows_now if r[0] != OWN_PARTITION]
    assert len({(p, k) for p, k, _ in got}) == len(got), "a primary key appears twice"
    assert sorted(got) == sorted((p, k, v) for (p, k), (_, v) in winner.items())
    failed_values = {e["rows"]["v"][0] for e in pk_writes if e["status"] == "failed"}
    assert not failed_values & {v for *_, v in got}

    # The overwriter's partition: exactly what its last successful operation left, per table.
    for name, rows_now in (("pk", pk_rows_now), ("ap", ap_rows_now)):
        done = [e for e in logs["overwriter"][0] if e["table"] == name and e["status"] == "ok"]
        expected = sorted(_triples(done[-1]["rows"])) if done else []
        assert sorted(r for r in rows_now if r[0] == OWN_PARTITION) == expected, name

    for table in (pk, ap):
        assert unreferenced_files(table) == [], table.name
    return {
        "committed": sum(1 for e in every_log if e["status"] == "ok"),
        "failed": sum(1 for e in every_log if e["status"] == "failed"),
        "snapshots": len(pk.snapshots()) + len(ap.snapshots()),
    }


def _run(tmp_path: Path, pk_writers: int, ap_writers: int, commits: int) -> dict[str, int]:
    warehouse = str(tmp_path / "warehouse")
    create_tables(warehouse)
    logs_dir = tmp_path / "logs"
    logs_dir.mkdir()
    started = time.monotonic()
    logs = run_processes(warehouse, pk_writers, ap_writers, commits, logs_dir)
    counts = check(warehouse, logs)
    writes = [e for role in ("pk-writer", "ap-writer", "overwriter") for log in logs[role] for e in log]
    assert len(writes) == (pk_writers + ap_writers + 1) * commits  # every operation was logged
    counts["seconds"] = round(time.monotonic() - started)
    return counts


def test_concurrent_writers_compaction_and_overwrites_keep_every_promise(tmp_path):
    counts = _run(tmp_path, pk_writers=4, ap_writers=4, commits=30)
    assert counts["committed"] > 0


@pytest.mark.slow
def test_concurrent_writers_compaction_and_overwrites_at_scale(tmp_path):
    counts = _run(tmp_path, pk_writers=8, ap_writers=8, commits=100)
    assert counts["committed"] > 0


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
