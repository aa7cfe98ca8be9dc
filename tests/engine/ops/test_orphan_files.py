"""engine.ops.orphan_files: only unreferenced, old files of the table's own directories go."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import pytest

from engine import open_catalog
from engine.io.faults import FailingFileIO
from engine.ops.maintenance_log import read_records
from engine.ops.orphan_files import (
    OrphanCutoffTooRecentError,
    list_candidates,
    remove_orphan_files,
    remove_table_orphan_files,
)
from engine.ops.reachability import UnsafeToDeleteError, reachable_files
from engine.table import Table
from tests.engine.crash_scenarios import BY_NAME, TABLE, read_state
from tests.engine.ops.conftest import SCHEMA, content, expire_snapshot_file, rows

TWO_DAYS_MS = 2 * 86_400_000


def age(root: str, ms: int = TWO_DAYS_MS) -> None:
    """Make every file under ``root`` look ``ms`` old (what a day of waiting would do)."""
    when = time.time() - ms / 1000
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (when, when))


def plant(path: str, size: int = 10) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Path(path).write_bytes(b"x" * size)
    return path


def all_files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def unreferenced_candidates(t: Table) -> set[str]:
    listed = {s.path for s, _ in list_candidates(t.store.io, t.path).candidates}
    return listed - set(reachable_files(t.store.io, t.path).files)


def assert_intact(t: Table) -> None:
    for path in reachable_files(t.store.io, t.path).paths():
        assert os.path.exists(path), path


@pytest.mark.parametrize("fixture", ["append_table", "pk_table"])
def test_a_clean_table_loses_nothing(request, fixture):
    t = request.getfixturevalue(fixture)
    t.compact(full=True)
    before, files = content(t), all_files(t.path)
    age(t.path)
    result = t.maintenance.remove_orphan_files()
    # Compaction leaves the replaced files referenced by older snapshots: nothing is an orphan.
    assert result.count == 0 and result.bytes == 0
    assert content(t) == before
    assert all_files(t.path) - files == {r for r in all_files(t.path) if "/maintenance-log/" in r}


@pytest.mark.parametrize("fixture", ["append_table", "pk_table"])
def test_orphans_of_every_kind_go_and_nothing_else(request, fixture):
    t = request.getfixturevalue(fixture)
    root = t.path
    live = reachable_files(t.store.io, root).paths()
    some_bucket = os.path.dirname(next(p for p in live if p.endswith(".parquet")))
    orphans = {
        plant(os.path.join(some_bucket, "data-crashed-0.parquet"), 100),
        plant(os.path.join(some_bucket, ".data-half.parquet.tmp"), 7),
        plant(os.path.join(root, "manifest", "manifest-failed-0"), 20),
        plant(os.path.join(root, "manifest", "manifest-list-failed-1"), 20),
        plant(os.path.join(root, "index", "index-failed-0"), 5),
        plant(os.path.join(root, "statistics", "stat-failed-0"), 5),
        plant(os.path.join(root, "p=zz", "bucket-0", "data-job-0.parquet"), 30),
        plant(os.path.join(root, "snapshot", ".snapshot-9." + "a" * 32 + ".tmp"), 3),
        plant(os.path.join(root, "tag", ".tag-x." + "b" * 32 + ".tmp"), 3),
        plant(os.path.join(root, ".dyntable", "aborted-jobs", "0d8c-job-token"), 7),
    }
    keep = {
        plant(os.path.join(root, "snapshot", "snapshot-notes.txt")),  # not a temp file: not ours to judge
        plant(os.path.join(root, ".dyntable", "maintenance-log", "0000000000001-old.json")),
        plant(os.path.join(root, ".dyntable", "partition-expiration-check")),
        plant(os.path.join(root, "README.txt")),  # not one of the table's directories
        plant(os.path.join(root, "other", "data-x.parquet")),
    }
    before = content(t)
    age(root)
    dry = t.maintenance.remove_orphan_files(dry_run=True)
    assert set(dry.paths()) == orphans and dry.dry_run
    assert dry.bytes == sum(os.path.getsize(p) for p in orphans)
    assert all(os.path.exists(p) for p in orphans)
    done = t.maintenance.remove_orphan_files()
    assert set(done.paths()) == orphans
    assert not any(os.path.exists(p) for p in orphans)
    assert all(os.path.exists(p) for p in keep | set(live))
    # the partition directory the orphan job left is gone with its bucket directory
    assert not os.path.exists(os.path.join(root, "p=zz"))
    assert os.path.join(root, "p=zz") in done.removed_dirs
    assert content(t) == before
    runs = [r for r in read_records(t.store.io, root) if r.procedure == "remove_orphan_files"]
    assert sorted((r.dry_run, r.deleted_files, r.deleted_bytes, r.error) for r in runs) == [
        (False, len(orphans), dry.bytes, None),
        (True, len(orphans), dry.bytes, None),
    ]


def test_a_branch_private_directory_loses_its_temporary_files_only(append_table):
    t = append_table
    t.refs.branches.create("b", from_snapshot=t.latest_snapshot().id)
    private = os.path.join(t.path, "branch", "branch-b", ".dyntable", "retention-mark")
    orphan = plant(os.path.join(private, ".mark-2." + "c" * 32 + ".tmp"), 4)
    mark = plant(os.path.join(private, "mark-1"), 4)  # a published mark: the branch's record
    age(t.path)
    assert t.maintenance.remove_orphan_files().paths() == [orphan]
    assert os.path.exists(mark) and not os.path.exists(orphan)


def test_young_orphans_and_the_cutoff_guard(append_table):
    t = append_table
    orphan = plant(os.path.join(t.path, "manifest", "manifest-young-0"))
    result = t.maintenance.remove_orphan_files()  # default: one day ago
    assert result.count == 0 and result.kept_recent == 1 and os.path.exists(orphan)
    now = int(time.time() * 1000)
    with pytest.raises(OrphanCutoffTooRecentError, match="less than one hour"):
        t.maintenance.remove_orphan_files(older_than=now - 60_000)
    with pytest.raises(OrphanCutoffTooRecentError, match="future"):
        t.maintenance.remove_orphan_files(older_than=now + 3_600_000, force=True)
    assert os.path.exists(orphan)
    # force: an operator who knows no writer runs may clean up to now
    os.utime(orphan, (time.time() - 10, time.time() - 10))
    assert t.maintenance.remove_orphan_files(older_than=now, force=True).paths() == [orphan]
    # refusals are logged too (records of one millisecond have no defined order: compare sorted)
    errors = sorted((r.error or "").split(":")[0] for r in read_records(t.store.io, t.path))
    assert errors == ["", "", "OrphanCutoffTooRecentError", "OrphanCutoffTooRecentError"]


def test_tags_branches_and_consumers_keep_their_files(catalog):
    t = catalog.create_table("db.refs", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(rows([1, 2], "a"))
    t.refs.tags.create("keep")
    tagged = content(t, tag="keep")
    t.write_arrow(rows([1, 2], "b"))
    t.compact(full=True)
    t.refs.branches.create("br", from_tag="keep")
    t.branch_table("br").write_arrow(rows([7], "br"))
    branch_rows = content(t.branch_table("br"))
    t.refs.consumers.reset("reader", 2)
    # Only the tag (and the branch) still reference snapshot 1's files once it expires.
    for sid in t.store.snapshots.list_ids()[:-1]:
        expire_snapshot_file(t, sid)
    age(t.path)
    needed = set(reachable_files(t.store.io, t.path).files)
    tag_files = {p for p in needed if p.endswith(".parquet")}
    result = t.maintenance.remove_orphan_files()
    # What only the expired snapshots used goes (snapshot 2's run, its manifests); nothing needed does.
    assert result.count > 0 and not set(result.paths()) & needed
    assert all(os.path.exists(p) for p in tag_files)
    assert content(t, tag="keep") == tagged
    assert content(t.branch_table("br")) == branch_rows
    assert_intact(t)


def _corrupt(path: str) -> None:
    Path(path).write_bytes(b"\x00not what it was")
    # Decoded manifests are cached by name (they are immutable); a new process would read the file.
    from engine.meta import manifest_store

    cache = manifest_store._MANIFEST_CACHE
    with cache._lock:
        cache._items.clear()
        cache._weight = 0


@pytest.mark.parametrize("what", ["manifest", "manifest-list", "snapshot", "tag", "branch-snapshot"])
def test_fail_closed_on_unreadable_metadata(append_table, what):
    t = append_table
    t.refs.tags.create("t1", 1)
    t.refs.branches.create("b", from_tag="t1")
    root = t.path
    snap = t.store.snapshots.get(1)
    targets = {
        "manifest": lambda: t.store.paths.manifest_file(
            t.store.manifests.read_list(snap.delta_manifest_list)[0].file_name
        ),
        "manifest-list": lambda: t.store.paths.manifest_file(snap.base_manifest_list),
        "snapshot": lambda: t.store.paths.snapshot_file(2),
        "tag": lambda: t.store.paths.tag_file("t1"),
        "branch-snapshot": lambda: t.branch_table("b").store.paths.snapshot_file(1),
    }
    bad = targets[what]()
    orphan = plant(os.path.join(root, "manifest", "manifest-orphan-0"))
    age(root)
    _corrupt(bad)
    files = all_files(root)
    with pytest.raises(UnsafeToDeleteError) as info:
        t.maintenance.remove_orphan_files()
    assert info.value.path == bad and bad in str(info.value)
    assert os.path.exists(orphan)
    assert all_files(root) - files <= {p for p in all_files(root) if "/maintenance-log/" in p}
    assert files <= all_files(root)
    [record] = [r for r in read_records(t.store.io, root) if r.procedure == "remove_orphan_files"]
    assert record.error.startswith("UnsafeToDeleteError") and record.deleted_files == 0


def test_leftovers_of_an_aborted_job_are_found(catalog):
    """A distributed write that died: task files named by the job token, the abort marker."""
    t = catalog.create_table("db.job", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    token = "0b7d3c1e-aaaa-bbbb-cccc-000000000001"
    writer_files = [
        plant(os.path.join(t.path, f"p={p}", "bucket-0", f"data-{token}-{n}.parquet"), 50)
        for p, n in (("a", 256), ("new", 512))
    ]
    marker = plant(os.path.join(t.path, ".dyntable", "aborted-jobs", token), 7)
    age(t.path)
    result = t.maintenance.remove_orphan_files()
    assert set(result.paths()) == {*writer_files, marker}
    assert content(t) == sorted(tuple(r.values()) for r in rows([1, 2]).to_pylist())


def _crash_copies(tmp_path: Path, scenario: str, stride: int):
    """Copies of a crash scenario's table after the process "died" at its N-th file operation, for
    every N: from that call on every call fails, so no cleanup of the writer runs (like SIGKILL)."""
    s = BY_NAME[scenario]
    template = str(tmp_path / "template")
    s.setup(template)

    def run(warehouse: str, n: int) -> FailingFileIO:
        plain = open_catalog(warehouse).get_table(TABLE)
        io = FailingFileIO(plain.store.io, "any", n, times=-1, torn=True)
        try:
            s.run(Table(None, plain.identifier, io, plain.store.paths, plain.store.schema))
        except Exception:  # noqa: BLE001, S110 - the injected crash
            pass
        return io

    probe = str(tmp_path / "probe")
    shutil.copytree(template, probe)
    plain = open_catalog(probe).get_table(TABLE)
    calls = FailingFileIO(plain.store.io, "any", 10**9)
    s.run(Table(None, plain.identifier, calls, plain.store.paths, plain.store.schema))
    shutil.rmtree(probe)
    for n in range(1, calls.calls + 1, stride):
        warehouse = str(tmp_path / f"trial-{n}")
        shutil.copytree(template, warehouse)
        run(warehouse, n)
        yield warehouse
        shutil.rmtree(warehouse)


def _crash_sweep(tmp_path: Path, scenario: str, stride: int = 1) -> None:
    leftovers = 0
    for warehouse in _crash_copies(tmp_path, scenario, stride):
        t = open_catalog(warehouse).get_table(TABLE)
        state = read_state(warehouse)
        age(t.path)
        leftovers += len(unreferenced_candidates(t))
        t.maintenance.remove_orphan_files()
        assert unreferenced_candidates(t) == set(), warehouse
        assert read_state(warehouse) == state
        assert_intact(t)
    assert leftovers > 0  # the crashes did leave orphans behind, and they were all found


@pytest.mark.parametrize(("scenario", "stride"), [("append-write", 1), ("pk-write", 5)])
def test_cleanup_after_crashed_writers_leaves_no_unreferenced_old_file(tmp_path, scenario, stride):
    """Default run: every call of an append write, every fifth of a primary-key write (with compaction)."""
    _crash_sweep(tmp_path, scenario, stride)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scenario",
    [
        "pk-write",
        "pk-compact-full",
        "append-compact-full",
        "overwrite-partition",
        "pk-overwrite-partition",
        "drop-partition",
        "truncate",
    ],
)
def test_cleanup_after_crashed_writers_every_scenario(tmp_path, scenario):
    _crash_sweep(tmp_path, scenario)


@pytest.mark.parametrize("operation", ["delete", "list", "read", "write"])
def test_a_crash_at_any_call_of_the_cleanup_keeps_every_live_reference(tmp_path, operation):
    """The cleanup itself crashes at its N-th call: the table reads the same, a rerun finishes."""
    s = BY_NAME["pk-write"]
    template = str(tmp_path / "template")
    s.setup(template)
    t0 = open_catalog(template).get_table(TABLE)
    for i in range(4):
        plant(os.path.join(t0.path, "p=a", "bucket-0", f"data-orphan-{i}.parquet"))
        plant(os.path.join(t0.path, "manifest", f"manifest-orphan-{i}"))
    age(t0.path)
    expected = read_state(template)
    counter = FailingFileIO(t0.store.io, operation, 10**9)
    remove_table_orphan_files(counter, t0.path, parallelism=1)
    assert counter.calls > 0
    for n in range(1, counter.calls + 1):
        warehouse = str(tmp_path / f"trial-{operation}-{n}")
        shutil.copytree(template, warehouse)
        t = open_catalog(warehouse).get_table(TABLE)
        io = FailingFileIO(t.store.io, operation, n)
        try:
            remove_table_orphan_files(io, t.path, parallelism=1)
        except Exception:  # noqa: BLE001, S110 - the injected crash
            pass
        assert read_state(warehouse) == expected, n
        assert_intact(t)
        t.maintenance.remove_orphan_files()
        assert unreferenced_candidates(t) == set()
        shutil.rmtree(warehouse)


@pytest.mark.s3
def test_orphans_on_object_storage(s3_root, s3_endpoint):
    """On S3 (moto): prefixes are directories, LastModified is the age; live files stay."""
    cat = open_catalog(s3_root, **s3_endpoint)
    cat.create_database("db")
    t = cat.create_table("db.s3", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3], p="b"))
    before = content(t)
    io = t.store.io
    orphans = [f"{t.path}/p=a/bucket-0/data-crashed-0.parquet", f"{t.path}/manifest/manifest-list-dead-0",
               f"{t.path}/p=gone/bucket-0/data-job-1.parquet"]
    for p in orphans:
        io.write_bytes(p, b"x" * 9)
    now = int(time.time() * 1000) + 2000  # cutoff after every LastModified (whole seconds on S3)
    dry = remove_orphan_files(io, t.path, older_than=now - 1000, force=True, now_ms=now, dry_run=True)
    assert sorted(dry.paths()) == sorted(orphans) and dry.bytes == 27
    done = remove_orphan_files(io, t.path, older_than=now - 1000, force=True, now_ms=now)
    assert sorted(done.paths()) == sorted(orphans)
    assert not any(io.exists(p) for p in orphans)
    assert content(open_catalog(s3_root, **s3_endpoint).get_table("db.s3")) == before


@pytest.mark.parametrize("options", [{"bucket": "1", "changelog-producer": "lookup"}, {"bucket": "-1"}],
                         ids=["changelog-files", "dynamic-bucket-index"])
def test_changelog_and_index_files_are_referenced(catalog, options):
    t = catalog.create_table("db.cl", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options=options)
    for v in "abc":
        t.write_arrow(rows([1, 2, 3], v))
    t.compact(full=True)
    files = all_files(t.path)
    kinds = {os.path.basename(p).split("-")[0] for p in files}
    assert ("changelog" in kinds) if "changelog-producer" in options else ("index" in kinds)
    before = content(t)
    age(t.path)
    assert t.maintenance.remove_orphan_files().count == 0
    assert files <= all_files(t.path) and content(t) == before


@pytest.mark.parametrize("older_than", [2**62, 10**17, dt.timedelta(days=-(10**8))])
def test_a_far_future_cutoff_is_refused_like_any_future_one(append_table, older_than):
    """Beyond year 9999 no date can be shown: the refusal names the epoch millis instead of crashing."""
    t = append_table
    orphan = plant(os.path.join(t.path, "manifest", "manifest-far-0"))
    with pytest.raises(OrphanCutoffTooRecentError, match="is in the future"):
        t.maintenance.remove_orphan_files(older_than=older_than, force=True)
    assert os.path.exists(orphan)
