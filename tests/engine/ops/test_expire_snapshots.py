"""Snapshot expiration: which snapshots go, which files go, what protects the rest, fail-closed
reads, crash safety at every file operation, and the automatic run after commits."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.io.faults import FailingFileIO
from engine.ops import expire_snapshots as ex
from engine.ops.maintenance_log import read_records
from engine.ops.reachability import UnsafeToDeleteError, all_anchors, reachable_files
from engine.ops.rollback import rollback_to
from engine.table import Table
from tests.engine.ops.conftest import SCHEMA, content, rows
from tests.engine.ops.conftest import data_and_manifest_files as _all_files

FUTURE = 2**62  # an older_than every snapshot is older than


def now_plus(ms: int) -> int:
    return int(time.time() * 1000) + ms


def data_and_manifest_files(root: str) -> set[str]:
    """Data and manifest files (not the maintenance log and retention mark under .dyntable/)."""
    return {p for p in _all_files(root) if "/.dyntable/" not in p}


def ids(t) -> list[int]:
    return t.store.snapshots.list_ids()


def all_files_exist(t) -> None:
    for path in reachable_files(t.store.io, t.path).paths():
        assert os.path.exists(path), path


def history(catalog, name="db.h", pk=False, n=6, **options):
    opts = {"bucket": "1"} if pk else {}
    opts.update(options)
    t = catalog.create_table(
        name, SCHEMA, partition_keys=[] if pk else ["p"], primary_keys=["id"] if pk else [], options=opts
    )
    states = {}
    for i in range(n):
        t.write_arrow(rows([i % 3, 10 + i], f"v{i}-", "a" if i % 2 else "b"))
        states[t.latest_snapshot().id] = content(t)
    return t, states


# -- which snapshots -------------------------------------------------------------------------


def test_retain_max_expires_oldest_and_rewrites_earliest(catalog):
    t, states = history(catalog)
    report = t.maintenance.expire_snapshots(retain_max=2)
    assert report.snapshots == (1, 2, 3, 4)
    assert ids(t) == [5, 6]
    assert open(t.store.paths.earliest_hint).read() == "5"
    for sid in (5, 6):
        assert content(t, snapshot_id=sid) == states[sid]
    # exactly the files of the survivors remain
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()
    assert report.count > 0 and report.bytes > 0


def test_time_retention_keeps_young_snapshots_and_min_count(catalog):
    t, _ = history(catalog)
    # everything is younger than snapshot.time-retained (1 h)
    assert t.maintenance.expire_snapshots().snapshots == ()
    assert t.maintenance.expire_snapshots(older_than=FUTURE, retain_min=4).snapshots == (1, 2)
    assert t.maintenance.expire_snapshots(older_than=FUTURE, retain_min=1, max_deletes=1).snapshots == (3,)
    assert ids(t) == [4, 5, 6]


def test_young_snapshot_ends_the_continuous_range(catalog):
    t, _ = history(catalog)
    cut = t.store.snapshots.get(3).time_millis
    report = t.maintenance.expire_snapshots(older_than=cut, retain_min=1)
    assert all(t.store.snapshots.get(s).time_millis >= cut for s in ids(t))
    assert ids(t)[0] == (report.snapshots[-1] + 1 if report.snapshots else 1)


def test_arguments_are_validated(catalog):
    t, _ = history(catalog, n=2)
    with pytest.raises(InvalidArgumentError):
        t.maintenance.expire_snapshots(retain_max=1, retain_min=2)
    with pytest.raises(InvalidArgumentError):
        t.maintenance.expire_snapshots(retain_min=0)
    with pytest.raises(InvalidArgumentError):
        t.maintenance.expire_snapshots(older_than="yesterday")
    assert ids(t) == [1, 2]


# -- which files -----------------------------------------------------------------------------


def test_add_then_delete_is_deleted(catalog):
    t = catalog.create_table("db.o", SCHEMA)
    t.write_arrow(rows([1]))
    first = set(reachable_files(t.store.io, t.path).paths())
    data1 = {p for p in first if p.endswith(".parquet")}
    t.truncate()
    t.write_arrow(rows([2]))
    t.maintenance.expire_snapshots(retain_max=1)
    assert ids(t) == [3]
    assert not any(os.path.exists(p) for p in data1)
    assert content(t) == [(2, "x2", "a")]


def test_delete_then_add_is_kept(catalog):
    t = catalog.create_table("db.o", SCHEMA)
    t.write_arrow(rows([1]))
    t.truncate()
    rollback_to(t.store, 1, backup=False)  # snapshot 3 adds snapshot 1's file again
    t.maintenance.expire_snapshots(retain_max=1)
    assert ids(t) == [3]
    assert content(t) == [(1, "x1", "a")]
    all_files_exist(t)


def test_primary_key_table_with_compactions(catalog):
    t, states = history(catalog, pk=True, n=8)
    t.compact(full=True)
    head = t.latest_snapshot().id
    expected = content(t)
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert ids(t) == [head]
    assert content(t) == expected
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()
    assert report.files.paths(ex.FileKindRef.DATA)


def test_empty_partition_and_bucket_directories_are_removed(catalog):
    t = catalog.create_table("db.e", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1], p="gone"))
    t.write_arrow(rows([2], p="stay"))
    t.drop_partitions([{"p": "gone"}])
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert not os.path.exists(os.path.join(t.path, "p=gone"))
    assert os.path.join(t.path, "p=gone") in report.directories
    assert os.path.isdir(os.path.join(t.path, "p=stay", "bucket-0"))


def test_empty_directories_stay_when_the_table_opts_out(catalog):
    t = catalog.create_table(
        "db.e", SCHEMA, partition_keys=["p"], options={"snapshot.clean-empty-directories": "false"}
    )
    t.write_arrow(rows([1], p="gone"))
    t.drop_partitions([{"p": "gone"}])
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert report.directories == () and os.path.isdir(os.path.join(t.path, "p=gone", "bucket-0"))


# -- references protect files ---------------------------------------------------------------


def test_tags_branches_and_consumers_protect(catalog):
    t, states = history(catalog, n=6)
    t.refs.tags.create("keep", 2)
    t.refs.branches.create("b", from_snapshot=3)
    t.refs.consumers.reset("reader", 5)
    report = t.maintenance.expire_snapshots(retain_max=1, older_than=FUTURE)
    assert report.snapshots == (1, 2, 3, 4)  # the consumer needs 5 and later
    assert content(t, tag="keep") == states[2]
    assert content(t.branch_table("b")) == states[3]
    assert content(t, snapshot_id=5) == states[5]
    all_files_exist(t)
    t.refs.consumers.delete("reader")
    t.refs.branches.delete("b")
    t.refs.tags.delete("keep")
    t.maintenance.expire_snapshots(retain_max=1)
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


def test_idle_consumer_stops_protecting(catalog):
    t, _ = history(catalog, n=4, **{"consumer.expiration-time": "1 min"})
    t.refs.consumers.reset("old", 1)
    past = time.time() - 3600
    os.utime(t.store.paths.consumer_file("old"), (past, past))
    assert t.maintenance.expire_snapshots(retain_max=1).snapshots == (1, 2, 3)


def test_retention_mark_protects(catalog):
    t, _ = history(catalog, n=6, **{"retention.time": "0 s"})
    from engine.history.retention_mark import advance

    advance(t.store, now_ms=t.store.snapshots.get(3).time_millis)
    mark = t.maintenance.retention_mark()
    assert mark is not None
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert ids(t)[0] == mark.snapshot_id
    assert report.snapshots == tuple(range(1, mark.snapshot_id))


def test_automatic_run_is_skipped_while_a_consumer_or_the_mark_holds_the_oldest_snapshot(catalog):
    # Held back, the table must not pay a reference scan over its whole history on every commit.
    t, _ = history(catalog, n=4, **{"snapshot.num-retained.min": "1", "retention.time": "0 s"})
    later = now_plus(2 * 3_600_000)  # every snapshot older than snapshot.time-retained
    assert ex.worth_running(t.store, now_ms=later)
    t.refs.consumers.reset("reader", 1)
    assert not ex.worth_running(t.store, now_ms=later)
    t.refs.consumers.reset("reader", 3)
    assert ex.worth_running(t.store, now_ms=later)
    t.refs.consumers.delete("reader")
    from engine.history.retention_mark import advance

    advance(t.store, now_ms=t.store.snapshots.get(1).time_millis)
    assert t.maintenance.retention_mark().snapshot_id == 1
    assert not ex.worth_running(t.store, now_ms=later)


def test_dry_run_reports_and_changes_nothing(catalog):
    t, _ = history(catalog, n=5)
    t.refs.tags.create("t2", 2)
    before = data_and_manifest_files(t.path)
    dry = t.maintenance.expire_snapshots(retain_max=2, dry_run=True)
    assert data_and_manifest_files(t.path) == before and ids(t) == [1, 2, 3, 4, 5]
    assert dry.dry_run and dry.snapshots == (1, 2, 3)
    reasons = {k.name: k.reason for k in dry.kept}
    assert reasons["5"].startswith("latest snapshot")
    assert any("tag t2" in r for r in reasons.values())
    real = t.maintenance.expire_snapshots(retain_max=2)
    assert sorted(dry.files.paths()) == sorted(real.files.paths())
    assert dry.bytes == real.bytes


# -- changelog-producer tables ----------------------------------------------------------------


def test_changelog_files_expire_with_their_snapshots(catalog):
    t, _ = history(catalog, pk=True, n=5, **{"changelog-producer": "input"})
    changelog_files = {p for p in data_and_manifest_files(t.path) if "/changelog-" in p}
    assert changelog_files
    t.maintenance.expire_snapshots(retain_max=1)
    left = {p for p in data_and_manifest_files(t.path) if "/changelog-" in p}
    assert left < changelog_files
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


def test_long_lived_changelogs_outlive_snapshots_and_expire_by_their_options(catalog):
    t, _ = history(
        catalog,
        pk=True,
        n=8,
        **{
            "changelog-producer": "input",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "2",
            "changelog.num-retained.min": "1",
            "changelog.num-retained.max": "4",
        },
    )
    # the automatic run after each commit kept 2 snapshots and the changelogs of 2 more
    head = ids(t)[-1]
    assert ids(t) == [head - 1, head]
    from engine.ops.expire_changelog import changelog_ids

    assert changelog_ids(t.store) == [head - 3, head - 2]
    anchors = [a for a in all_anchors(t.store.io, t.path) if a.kind == "changelog"]
    assert [a.name for a in anchors] == [str(head - 3), str(head - 2)]
    all_files_exist(t)
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


# -- fail closed ------------------------------------------------------------------------------


def _corrupt(path: str) -> None:
    with open(path, "wb") as f:
        f.write(b"\x00not valid")


@pytest.mark.parametrize("what", ["manifest", "snapshot", "tag", "consumer", "mark"])
def test_unreadable_reference_deletes_nothing(catalog, what):
    t, _ = history(catalog, n=5)
    t.refs.tags.create("t", 3)
    if what == "manifest":
        from engine.meta import manifest_store

        head = t.latest_snapshot()
        target = t.store.paths.manifest_file(
            t.store.manifests.read_list(head.delta_manifest_list)[0].file_name
        )
        manifest_store._MANIFEST_CACHE._items.pop(target, None)  # decoded manifests are cached by path
    elif what == "snapshot":
        target = t.store.paths.snapshot_file(4)
    elif what == "tag":
        target = t.store.paths.tag_file("t")
    elif what == "consumer":
        t.refs.consumers.reset("c", 5)
        target = t.store.paths.consumer_file("c")
    else:
        t.store.io.write_bytes(os.path.join(t.path, ".dyntable/retention-mark/mark-1"), b"{}")
        target = os.path.join(t.path, ".dyntable/retention-mark")
    if what != "mark":
        _corrupt(target)
    before = data_and_manifest_files(t.path)
    with pytest.raises(UnsafeToDeleteError) as err:
        t.maintenance.expire_snapshots(retain_max=1)
    assert err.value.path == target
    assert data_and_manifest_files(t.path) == before
    assert ids(t) == [1, 2, 3, 4, 5]
    assert isinstance(err.value, CorruptMetadataError)


# -- crash safety -------------------------------------------------------------------------------


def _expected(t, tag_rows):
    return {sid: content(t, snapshot_id=sid) for sid in ids(t)}, tag_rows


def _check_live(t, snapshot_rows, tag_rows) -> None:
    for sid in ids(t):
        assert content(t, snapshot_id=sid) == snapshot_rows[sid], sid
    for name, expected in tag_rows.items():
        assert content(t, tag=name) == expected
    all_files_exist(t)


@pytest.mark.parametrize(
    "pk,options",
    [
        (False, {}),
        pytest.param(True, {}, marks=pytest.mark.slow),  # the pk-changelog case covers pk tables by default
        # changelogs outlive their snapshots: the run also writes changelog/changelog-N files
        (True, {"changelog-producer": "input", "changelog.time-retained": "1000 d"}),
    ],
    ids=["append", "pk", "pk-changelog"],
)
def test_crash_at_every_file_operation_keeps_live_references_readable(catalog, tmp_path, pk, options):
    t, _ = history(catalog, pk=pk, n=5, **options)
    t.refs.tags.create("t", 2)
    t.compact(full=True) if pk else t.truncate()
    t.write_arrow(rows([7]))
    template = str(tmp_path / "template")
    shutil.copytree(t.path, template)
    snapshot_rows = {sid: content(t, snapshot_id=sid) for sid in ids(t)}
    tag_rows = {"t": content(t, tag="t")}
    n, fired = 0, True
    while fired:
        n += 1
        shutil.rmtree(t.path)
        shutil.copytree(template, t.path)
        failing = FailingFileIO(t.store.io, "any", n)
        ft = Table(t.catalog, t.identifier, failing, t.store.paths, t.store.schema)
        try:
            ft.maintenance.expire_snapshots(retain_max=1)
        except Exception as e:  # noqa: BLE001 - only injected faults may escape
            assert "injected fault" in str(e), e
        fired = failing.failures > 0
        fresh = t.refresh()
        _check_live(fresh, snapshot_rows, tag_rows)
        fresh.maintenance.expire_snapshots(retain_max=1)  # a later run finishes the work
        _check_live(fresh, snapshot_rows, tag_rows)
    assert n > 20  # every read, listing and delete of the run was failed once
    if options:
        from engine.ops.expire_changelog import changelog_ids

        assert changelog_ids(t.refresh().store)  # the run did write long-lived changelogs


# -- automatic runs ------------------------------------------------------------------------------


def test_automatic_run_after_commits_is_recorded(catalog):
    t, states = history(catalog, n=5, **{"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    assert ids(t) == [4, 5]
    records = [r for r in read_records(t.store.io, t.path) if r.procedure == "expire_snapshots"]
    assert records and all(r.trigger == "automatic" and r.error is None for r in records)
    assert sum(r.details["snapshots"] for r in records) == 3


def test_failing_automatic_run_never_fails_the_commit(catalog):
    t, _ = history(catalog, n=3, **{"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    t.refs.tags.create("bad", 3)
    _corrupt(t.store.paths.tag_file("bad"))
    t.write_arrow(rows([99]))  # commits although the expiration after it fails closed
    assert ids(t)[-1] == 4 and (99, "x99", "a") in content(t)
    failed = [r for r in read_records(t.store.io, t.path) if r.error]
    assert failed and failed[-1].trigger == "automatic" and "UnsafeToDeleteError" in failed[-1].error


def test_async_execution_mode(catalog):
    t, _ = history(
        catalog,
        n=4,
        **{
            "snapshot.num-retained.max": "2",
            "snapshot.num-retained.min": "1",
            "snapshot.expire.execution-mode": "async",
        },
    )
    ex.join_background()
    t.write_arrow(rows([50]))
    ex.join_background()
    assert len(ids(t)) == 2
    assert content(t, snapshot_id=ids(t)[-1]) == content(t)


def test_parallel_delete_uses_the_thread_option(catalog):
    t, _ = history(catalog, n=4, **{"delete-file.thread-num": "3"})
    assert ex.thread_count(t.store) == 3
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("db.bad", SCHEMA, options={"delete-file.thread-num": "0"})


def test_dry_run_reasons_name_the_limit_and_the_young_snapshot(catalog):
    t, _ = history(catalog, n=5)
    dry = t.maintenance.expire_snapshots(retain_min=1, max_deletes=1, older_than=FUTURE, dry_run=True)
    assert dry.snapshots == (1,)
    reasons = {k.name: k.reason for k in dry.kept if k.kind == "snapshot"}
    assert reasons["2"].startswith("snapshot.expire.limit = 1")
    cut = t.store.snapshots.get(3).time_millis
    dry = t.maintenance.expire_snapshots(retain_min=1, older_than=cut, dry_run=True)
    reasons = {k.name: k.reason for k in dry.kept if k.kind == "snapshot"}
    first_kept = min(int(n) for n in reasons)
    assert "committed after older_than" in reasons[str(first_kept)]


def test_automatic_run_is_skipped_when_nothing_can_expire(catalog):
    t, _ = history(catalog, n=3)
    assert not ex.worth_running(t.store)  # young snapshots under the 10-snapshot minimum
    assert ex.worth_running(t.store, now_ms=now_plus(10 * 3_600_000)) is False  # still under the minimum
    t2, _ = history(catalog, "db.h2", n=3, **{"snapshot.num-retained.min": "1"})
    assert not ex.worth_running(t2.store)
    assert ex.worth_running(t2.store, now_ms=now_plus(2 * 3_600_000))  # older than snapshot.time-retained
    t3, _ = history(
        catalog,
        "db.h3",
        pk=True,
        n=6,
        **{
            "changelog-producer": "input",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "2",
            "changelog.num-retained.min": "1",
            "changelog.num-retained.max": "4",
        },
    )
    assert not ex.worth_running(t3.store)  # changelogs exist, all within their options
    assert ex.worth_running(t3.store, now_ms=now_plus(2 * 3_600_000))  # the oldest changelog aged out
