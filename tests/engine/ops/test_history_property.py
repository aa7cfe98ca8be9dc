"""Property: random histories of writes, compactions, tags, rollbacks, expirations, retention
marks and branch operations (create, write, delete, fast-forward, replace_main) keep every tag's
and branch's rows and every referenced file, and tearing everything down leaks nothing.

The model is a dict per table kind (append: a multiset of rows; primary key: key → row). Two
kinds of expiration run: ``expire`` removes the oldest snapshot file and then deletes, via
reachability, exactly the files only it referenced (so tag deletion has real work);
``expire_snapshots`` is the engine's (``engine.ops.expire_snapshots``, keeping 1-4 snapshots).
``mark`` moves the retention mark to a snapshot's commit time; tags and snapshots below it are
then checked by reading their snapshot directly (time travel to them is refused, which is
checked too).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import open_catalog
from engine.errors import BehindRetentionMarkError
from engine.history.retention_mark import advance, read_mark
from engine.ops.reachability import (
    ReachabilityCollector,
    all_anchors,
    delete_files,
    reachable_files,
    unreferenced,
)
from engine.scan.planner import TableScan, store_at
from tests.engine.ops.conftest import SCHEMA, content, data_and_manifest_files, expire_snapshot_file, rows
from tests.engine.ops.test_history_invariant import assert_added_once, java_live

TAGS = ("t0", "t1", "t2")

op = st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 7), min_size=1, max_size=4), st.sampled_from("ab")),
    st.tuples(st.just("compact")),
    st.tuples(st.just("tag"), st.sampled_from(TAGS)),
    st.tuples(st.just("tag"), st.sampled_from(TAGS)),  # twice: tags should be common
    st.tuples(st.just("delete_tag"), st.sampled_from(TAGS)),
    st.tuples(st.just("rename_tag"), st.sampled_from(TAGS), st.sampled_from(TAGS)),
    st.tuples(st.just("rollback_tag"), st.sampled_from(TAGS)),
    st.tuples(st.just("rollback_snapshot"), st.integers(0, 20)),
    st.tuples(st.just("expire"), st.integers(1, 6)),
    st.tuples(st.just("expire_snapshots"), st.integers(1, 4)),
    st.tuples(st.just("mark"), st.integers(0, 20)),
)


# ---- branch rules (create / write / delete / fast-forward / replace_main) ---------------------------
# Kept in one block (strategy, model, step, check) so other rules merge next to it untouched.

BRANCHES = ("b1", "b2")
SOURCES = (None, "head", "head") + TAGS  # an empty branch, one of main's head, one of a tag
KEYS = st.lists(st.integers(0, 7), min_size=1, max_size=3)

# Steps on an existing branch name it by index (``pick``), so they rarely miss.
branch_op = st.one_of(
    st.tuples(st.just("create_branch"), st.sampled_from(BRANCHES), st.sampled_from(SOURCES)),
    st.tuples(st.just("write_branch"), st.integers(0, 1), KEYS),
    st.tuples(st.just("write_branch"), st.integers(0, 1), KEYS),
    st.tuples(st.just("delete_branch"), st.integers(0, 1)),
    st.tuples(st.just("fast_forward"), st.integers(0, 1)),
    st.tuples(st.just("replace_main"), st.integers(0, 1), st.booleans()),
)
#: Histories with branches start with a write and a branch of it, so every example has one.
branch_history = st.lists(st.one_of(op, branch_op, branch_op), min_size=1, max_size=12).map(
    lambda ops: [("write", [1, 2], "a"), ("create_branch", "b1", "head")] + ops)
BRANCH_STEPS = {"create_branch", "write_branch", "delete_branch", "fast_forward", "replace_main"}


class BranchModel:
    """Expected rows of every branch and of every branch's tags (copied from main's at creation)."""

    def __init__(self, catalog, primary_key: bool) -> None:
        self.catalog = catalog
        self.primary_key = primary_key
        self.rows: dict[str, list[tuple]] = {}
        self.tags: dict[str, dict[str, list[tuple]]] = {}
        self.writes = 0

    def table(self, name):
        return self.catalog.get_table(f"db.h$branch_{name}")

    def step(self, t, step, main_rows: list[tuple], tag_rows: dict[str, list[tuple]],
             snapshot_rows: dict[int, list[tuple]]) -> list[tuple] | None:
        """Apply one branch step; returns main's new expected rows when main changed, else None."""
        kind, name = step[0], step[1]
        if kind != "create_branch":
            if not self.rows:
                return None
            name = sorted(self.rows)[name % len(self.rows)]
        if kind == "create_branch" and name not in self.rows:
            source = step[2]
            head = t.latest_snapshot()
            if source is None:
                t.refs.branches.create(name)
                self.rows[name], self.tags[name] = [], {}
            elif source == "head" and head is not None:
                t.refs.branches.create(name, from_snapshot=head.id)
                self.rows[name], self.tags[name] = snapshot_rows[head.id], {}
                tag_rows[f"branch-base-{name}"] = snapshot_rows[head.id]  # the pin of the branch's base
            elif source in tag_rows:
                t.refs.branches.create(name, from_tag=source)
                self.rows[name], self.tags[name] = tag_rows[source], {source: tag_rows[source]}
                tag_rows[f"branch-base-{name}"] = tag_rows[source]
        elif kind == "write_branch" and name in self.rows:
            self.writes += 1
            data = rows(sorted(set(step[2])), f"b{self.writes}-", "a")
            self.table(name).write_arrow(data)
            new = list(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))
            if self.primary_key:
                merged = {r[0]: r for r in self.rows[name]} | {r[0]: r for r in new}
                self.rows[name] = sorted(merged.values())
            else:
                self.rows[name] = sorted(self.rows[name] + new)
        elif kind == "delete_branch" and name in self.rows:
            t.refs.branches.delete(name)
            del self.rows[name], self.tags[name]
            tag_rows.pop(f"branch-base-{name}", None)
        elif kind in ("fast_forward", "replace_main") and name in self.rows:
            if self.table(name).latest_snapshot() is None:
                return None
            if kind == "fast_forward":
                t.refs.branches.fast_forward(name)
            else:
                head = t.latest_snapshot()
                result = t.refs.branches.replace_main(name, keep_backup=step[2])
                if result.backup_tag is not None:
                    tag_rows[result.backup_tag] = snapshot_rows[head.id]
            return self.rows[name]
        return None

    def check(self, t) -> None:
        assert sorted(t.refs.branches.names()) == sorted(self.rows)
        for name, expected in self.rows.items():
            b = self.table(name)
            assert content(b) == expected, name
            assert set(b.refs.tags.names()) == set(self.tags[name])
            for tag, tagged in self.tags[name].items():
                assert content(b, tag=tag) == tagged, (name, tag)

    def tear_down(self, t, tag_rows: dict[str, list[tuple]]) -> None:
        for name in sorted(self.rows):
            t.refs.branches.delete(name)
            del self.rows[name], self.tags[name]
            tag_rows.pop(f"branch-base-{name}", None)
            self.check(t)


# ---- end of branch rules ---------------------------------------------------------------------------


def expire_oldest(t) -> None:
    """Drop the oldest snapshot (never the only one) and the files nothing else references now."""
    ids = t.store.snapshots.list_ids()
    if len(ids) < 2:
        return
    io, root = t.store.io, t.path
    collector = ReachabilityCollector(io, root)
    anchors = all_anchors(io, root)
    oldest = [a for a in anchors if a.kind == "snapshot" and a.name == str(ids[0])]
    candidates = collector.collect(oldest)
    expire_snapshot_file(t, ids[0])
    delete_files(io, unreferenced(candidates, collector.collect(all_anchors(io, root))))


def snapshot_content(t, snap) -> list[tuple]:
    """A snapshot's rows read directly (no time-travel resolution, so no retention-mark check)."""
    store = store_at(t.store, snap)
    data = [
        b for split in TableScan(store).with_snapshot(snap).plan().splits for b in t.new_read().read(split)
    ]
    import pyarrow as pa

    table = pa.concat_tables(data) if data else t.new_read().output_schema.empty_table()
    return sorted(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


def check(t, tag_rows, snapshot_rows) -> None:
    assert set(t.refs.tags.all()) == set(tag_rows)
    if t.latest_snapshot() is not None:  # Paimon's invariant: Java reads and expires this history alike
        assert_added_once(t.store)
        head = t.latest_snapshot()
        assert java_live(t.store, head) == {e.identifier for e in t.store.live_entries(head)}
    mark = read_mark(t.store.io, t.path)
    tags = t.refs.tags.all()
    for name, expected in tag_rows.items():
        snap = tags[name].snapshot
        if mark is not None and snap.id < mark.snapshot_id and snap.id != t.store.snapshots.latest_id():
            with pytest.raises(BehindRetentionMarkError):
                t.to_arrow(tag=name)
            assert snapshot_content(t, snap) == expected, name
        else:
            assert content(t, tag=name) == expected, name
    for sid in t.store.snapshots.list_ids():
        if mark is None or sid >= mark.snapshot_id:
            assert content(t, snapshot_id=sid) == snapshot_rows[sid], sid
    for path in reachable_files(t.store.io, t.path).paths():
        assert os.path.exists(path), path
    head = t.latest_snapshot()
    if head is not None:
        assert content(t) == snapshot_rows[head.id]


def _below_mark(t, target) -> bool:
    """Whether rollback ``target`` (a tag or snapshot id) names a snapshot below the retention mark."""
    mark = read_mark(t.store.io, t.path)
    if mark is None:
        return False
    snapshot_id = t.refs.tags.get(target).snapshot.id if isinstance(target, str) else target
    return snapshot_id < mark.snapshot_id


def run_history(primary_key: bool, ops) -> None:
    warehouse = tempfile.mkdtemp(prefix="dyntable-hist-")
    try:
        catalog = open_catalog(warehouse)
        catalog.create_database("db")
        t = catalog.create_table("db.h", SCHEMA, primary_keys=["id"] if primary_key else [],
                                 options={"bucket": "1"} if primary_key else {})
        model: dict[int, tuple] | list[tuple] = {} if primary_key else []
        snapshot_rows: dict[int, list[tuple]] = {}
        tag_rows: dict[str, list[tuple]] = {}
        counter = 0
        branches = BranchModel(catalog, primary_key)

        def current() -> list[tuple]:
            return sorted(model.values()) if primary_key else sorted(model)

        def record() -> None:
            head = t.latest_snapshot()
            if head is not None:
                for sid in range(max(snapshot_rows, default=0) + 1, head.id + 1):
                    snapshot_rows[sid] = current()

        for step in ops:
            kind = step[0]
            if kind == "write":
                counter += 1
                data = rows(sorted(set(step[1])), f"w{counter}-", "a")
                t.write_arrow(data)
                for r in zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True):
                    if primary_key:
                        model[r[0]] = r  # type: ignore[index]
                    else:
                        model.append(r)  # type: ignore[union-attr]
                record()
            elif kind == "compact" and t.latest_snapshot() is not None:
                t.compact(full=True)
                record()
            elif kind == "tag" and t.latest_snapshot() is not None and step[1] not in tag_rows:
                t.refs.tags.create(step[1])
                tag_rows[step[1]] = current()
            elif kind == "delete_tag" and step[1] in tag_rows:
                t.refs.tags.delete(step[1])
                del tag_rows[step[1]]
            elif kind == "rename_tag" and step[1] in tag_rows and step[2] not in tag_rows:
                t.refs.tags.rename(step[1], step[2])
                tag_rows[step[2]] = tag_rows.pop(step[1])
            elif kind in ("rollback_tag", "rollback_snapshot"):
                if kind == "rollback_tag":
                    if step[1] not in tag_rows:
                        continue
                    target, expected = step[1], tag_rows[step[1]]
                else:
                    ids = t.store.snapshots.list_ids()
                    if not ids:
                        continue
                    target = ids[step[1] % len(ids)]
                    expected = snapshot_rows[target]
                try:
                    result = t.refs.rollback_to(target)
                except BehindRetentionMarkError:
                    # Below the retention mark: refused before anything changed (checked below).
                    assert _below_mark(t, target)
                    check(t, tag_rows, snapshot_rows)
                    continue
                if result.backup_tag is not None:
                    tag_rows[result.backup_tag] = snapshot_rows[result.previous_snapshot_id]
                model = {r[0]: r for r in expected} if primary_key else list(expected)
                record()
            elif kind == "expire":
                for _ in range(step[1]):
                    expire_oldest(t)
            elif kind == "expire_snapshots":
                t.maintenance.expire_snapshots(retain_max=step[1], older_than=2**62)
            elif kind == "mark":
                ids = t.store.snapshots.list_ids()
                if ids:
                    advance(t.store, 0, now_ms=t.store.snapshots.get(ids[step[1] % len(ids)]).time_millis)
            elif kind in BRANCH_STEPS:
                try:
                    main_rows = branches.step(t, step, current(), tag_rows, snapshot_rows)
                except BehindRetentionMarkError:
                    # A branch from a tag or snapshot below the mark: refused, nothing changed.
                    assert read_mark(t.store.io, t.path) is not None
                    check(t, tag_rows, snapshot_rows)
                    continue
                if main_rows is not None:
                    model = {r[0]: r for r in main_rows} if primary_key else list(main_rows)
                    record()
            check(t, tag_rows, snapshot_rows)
            branches.check(t)

        branches.tear_down(t, tag_rows)  # exact cleanup: what the branches alone held goes
        check(t, tag_rows, snapshot_rows)
        # Tear down: every snapshot but the head (tags now hold their files alone), then every tag
        # one by one. What remains is exactly the head's.
        while len(t.store.snapshots.list_ids()) > 1:
            expire_oldest(t)
        check(t, tag_rows, snapshot_rows)
        for name in sorted(tag_rows):
            t.refs.tags.delete(name)
            del tag_rows[name]
            check(t, tag_rows, snapshot_rows)
        left = {p for p in data_and_manifest_files(t.path) if "/.dyntable/" not in p}  # log and mark
        assert left == reachable_files(t.store.io, t.path).paths()
        assert len(all_anchors(t.store.io, t.path)) == (1 if t.latest_snapshot() else 0)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


SETTINGS = dict(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
@settings(max_examples=30, **SETTINGS)
@given(ops=st.lists(op, min_size=1, max_size=12))
def test_random_histories(primary_key, ops):
    run_history(primary_key, ops)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
@settings(max_examples=12, **SETTINGS)
@given(ops=branch_history)
def test_random_histories_with_branches(primary_key, ops):
    run_history(primary_key, ops)


@pytest.mark.slow
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
@settings(max_examples=300, **SETTINGS)
@given(ops=st.one_of(st.lists(op, min_size=1, max_size=30), branch_history))
def test_random_histories_long(primary_key, ops):
    run_history(primary_key, ops)


# =============================================================================================
# Orphan cleanup and partition expiration (issue 12) — kept apart from the histories above so
# that other expiration steps can be added there independently.
#
# A partitioned table (p = an old or a future day) gets writes, compactions, tags, oldest-snapshot
# expirations, writes that crash at their N-th file operation (from then on every call fails, as
# if the process died: no cleanup runs), partition expirations and orphan cleanups. After every
# step every file a live reference needs exists, every tag reads unchanged and the head matches
# the model; after every orphan cleanup no unreferenced file older than its cutoff is left.
# =============================================================================================

import time  # noqa: E402

from engine.io.faults import FailingFileIO  # noqa: E402
from engine.ops.orphan_files import list_candidates  # noqa: E402
from engine.table import Table  # noqa: E402

OLD_DAY, NEW_DAY = "2000-01-01", "2999-01-01"

cleanup_op = st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 7), min_size=1, max_size=4),
              st.sampled_from([OLD_DAY, NEW_DAY])),
    st.tuples(st.just("crash_write"), st.lists(st.integers(0, 7), min_size=1, max_size=3),
              st.sampled_from([OLD_DAY, NEW_DAY]), st.integers(1, 40)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("tag"), st.sampled_from(TAGS)),
    st.tuples(st.just("delete_tag"), st.sampled_from(TAGS)),
    st.tuples(st.just("expire"), st.integers(1, 4)),
    st.tuples(st.just("expire_partitions")),
    st.tuples(st.just("orphan_cleanup")),
)


def _age_all(root: str) -> None:
    when = time.time() - 2 * 86_400
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (when, when))


def _unreferenced(t) -> set[str]:
    listed = {s.path for s, _ in list_candidates(t.store.io, t.path).candidates}
    return listed - set(reachable_files(t.store.io, t.path).files)


def run_cleanup_history(primary_key: bool, ops) -> None:
    warehouse = tempfile.mkdtemp(prefix="dyntable-clean-")
    try:
        catalog = open_catalog(warehouse)
        catalog.create_database("db")
        t = catalog.create_table("db.c", SCHEMA, partition_keys=["p"],
                                 primary_keys=["id", "p"] if primary_key else [],
                                 options={"bucket": "1", **({} if primary_key else {"bucket-key": "id"})})
        model: dict[tuple, tuple] = {}  # (id, p) -> row; append tables key by a write counter too
        tag_rows: dict[str, list[tuple]] = {}
        counter = 0

        def current() -> list[tuple]:
            return sorted(model.values())

        def apply(data) -> None:
            nonlocal counter
            for r in zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True):
                counter += 1
                model[(r[0], r[2]) if primary_key else (counter,)] = r

        for step in ops:
            kind = step[0]
            if kind == "write":
                data = rows(sorted(set(step[1])), f"w{counter}-", step[2])
                t.write_arrow(data)
                apply(data)
            elif kind == "crash_write":
                data = rows(sorted(set(step[1])), f"c{counter}-", step[2])
                before = t.store.snapshots.latest_id()
                io = FailingFileIO(t.store.io, "any", step[3], times=-1, torn=True)
                try:
                    Table(None, t.identifier, io, t.store.paths, t.store.schema).write_arrow(data)
                except Exception:  # noqa: BLE001, S110 - the injected crash
                    pass
                t = catalog.get_table("db.c")
                published = [s for s in t.store.snapshots.list_ids() if before is None or s > before]
                if any(t.store.snapshots.get(s).commit_kind.name == "APPEND" for s in published):
                    apply(data)
            elif kind == "compact" and t.latest_snapshot() is not None:
                t.compact(full=True)
            elif kind == "tag" and t.latest_snapshot() is not None and step[1] not in tag_rows:
                t.refs.tags.create(step[1])
                tag_rows[step[1]] = current()
            elif kind == "delete_tag" and step[1] in tag_rows:
                t.refs.tags.delete(step[1])
                del tag_rows[step[1]]
            elif kind == "expire":
                for _ in range(step[1]):
                    expire_oldest(t)
            elif kind == "expire_partitions" and t.latest_snapshot() is not None:
                t.maintenance.expire_partitions("1 d")
                model = {k: r for k, r in model.items() if r[2] != OLD_DAY}
            elif kind == "orphan_cleanup":
                _age_all(t.path)
                t.maintenance.remove_orphan_files()
                assert _unreferenced(t) == set()
            for name, expected in tag_rows.items():
                assert content(t, tag=name) == expected, name
            for path in reachable_files(t.store.io, t.path).paths():
                assert os.path.exists(path), path
            assert content(t) == current()
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
@settings(max_examples=12, **SETTINGS)
@given(ops=st.lists(cleanup_op, min_size=1, max_size=10))
def test_random_cleanup_histories(primary_key, ops):
    run_cleanup_history(primary_key, ops)


@pytest.mark.slow
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
@settings(max_examples=200, **SETTINGS)
@given(ops=st.lists(cleanup_op, min_size=1, max_size=30))
def test_random_cleanup_histories_long(primary_key, ops):
    run_cleanup_history(primary_key, ops)


# =============================================================================================
# Two actors (issue 20): one actor's operation runs with the other's interleaved at its N-th
# storage call (``FailingFileIO(action="hook")``: a deterministic interleaving, chosen by
# hypothesis). Actor A writes, overwrites, tags, expires or cleans orphans; actor B tags
# (create or replace), deletes tags, expires or cleans orphans. Refusals caused by the other actor
# (a snapshot expired meanwhile, a tag created or deleted meanwhile, a table that kept changing)
# are legitimate outcomes. After every step: every file a snapshot, tag or branch references
# exists, every tag reads exactly the rows of the snapshot it names, every snapshot and the head
# read their rows. Orphan cleanup runs with a cutoff a day back, and before each step every file
# on disk is aged two days: every file of an earlier step is a candidate, every file of a commit
# in flight is a day younger than the cutoff, so a failure can only come from references racing
# maintenance. (A cutoff read from the clock just before the step is not enough: a file's mtime
# comes from the file system's clock, which lags the wall clock by up to a scheduler tick on
# local disk — a few ms — and is whole seconds on S3; a file written after such a cutoff could
# carry an mtime before it, and cleanup then rightly took a commit's file, ~1 run in 50.)
# =============================================================================================

from engine.errors import (  # noqa: E402
    NoSuchSnapshotError,
    NoSuchTagError,
    TagAlreadyExistsError,
)
from engine.ops.expire_snapshots import expire_snapshots  # noqa: E402
from engine.ops.orphan_files import remove_orphan_files  # noqa: E402
from engine.ops.reachability import ConcurrentChangeError  # noqa: E402

TWO_TAGS = ("u0", "u1")
ref_op = st.one_of(
    st.tuples(st.just("tag"), st.sampled_from(TWO_TAGS), st.integers(0, 3)),
    st.tuples(st.just("tag"), st.sampled_from(TWO_TAGS), st.just(0)),  # the oldest: the one expiring
    st.tuples(st.just("delete_tag"), st.sampled_from(TWO_TAGS)),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("orphans")),
)
writer_op = st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 9), min_size=1, max_size=3)),
    st.tuples(st.just("overwrite"), st.lists(st.integers(0, 9), min_size=1, max_size=3)),
    ref_op,
    ref_op,
)
# Reference operations make few storage calls: small call numbers are drawn more often.
two_actor_step = st.tuples(writer_op, ref_op, st.one_of(st.integers(1, 8), st.integers(1, 60)))
LEGITIMATE = (NoSuchSnapshotError, NoSuchTagError, TagAlreadyExistsError, ConcurrentChangeError)


def _ref_step(t, step, cutoff_ms: int) -> None:
    kind = step[0]
    try:
        if kind == "tag":
            ids = t.store.snapshots.list_ids()
            if not ids:
                return
            sid = ids[step[2] % len(ids)]
            if step[1] in t.refs.tags.all():
                t.refs.tags.replace(step[1], sid)
            else:
                t.refs.tags.create(step[1], sid)
        elif kind == "delete_tag":
            t.refs.tags.delete(step[1])
        elif kind == "expire":
            expire_snapshots(t.store, retain_max=step[1], older_than=2**62)
        elif kind == "orphans":
            remove_orphan_files(t.store.io, t.path, older_than=cutoff_ms, force=True)
    except LEGITIMATE:
        pass  # SnapshotExpiredConcurrentlyError is a NoSuchSnapshotError: the tag was removed again


def run_two_actors(steps) -> None:
    warehouse = tempfile.mkdtemp(prefix="dyntable-two-")
    try:
        catalog = open_catalog(warehouse)
        catalog.create_database("db")
        t = catalog.create_table("db.two", SCHEMA, partition_keys=["p"])
        snapshot_rows: dict[int, list[tuple]] = {}
        head: list[tuple] = []
        for step_a, step_b, call in steps:
            _age_all(t.path)  # two days old: every file so far is older than the cutoff
            cutoff = int(time.time() * 1000) - 86_400_000  # a day before any file this step writes
            t = t.refresh()
            b_table = t.refresh()
            io = FailingFileIO(
                t.store.io,
                "any",
                call,
                action="hook",
                hook=lambda _m, _p, b=b_table, s=step_b, c=cutoff: _ref_step(b.refresh(), s, c),
            )
            a = Table(t.catalog, t.identifier, io, t.store.paths, t.store.schema)
            if step_a[0] in ("write", "overwrite"):
                data = rows(step_a[1])
                result = a.write_arrow(data, overwrite=step_a[0] == "overwrite")
                new = sorted(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))
                head = sorted(new if step_a[0] == "overwrite" else head + new)
                for sid in result.snapshot_ids:
                    snapshot_rows[sid] = head
            else:
                _ref_step(a, step_a, cutoff)
            if io.failures == 0:  # A finished before its N-th call: B runs after it
                _ref_step(t.refresh(), step_b, cutoff)
            _check_two_actors(t.refresh(), snapshot_rows, head)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


def _check_two_actors(t, snapshot_rows, head) -> None:
    for path in reachable_files(t.store.io, t.path).paths():
        assert os.path.exists(path), path
    for name, tag in t.refs.tags.all().items():
        assert content(t, tag=name) == snapshot_rows[tag.snapshot.id], name
    for sid in t.store.snapshots.list_ids():
        assert content(t, snapshot_id=sid) == snapshot_rows[sid], sid
    if t.latest_snapshot() is not None:
        assert content(t) == head


@settings(max_examples=25, **SETTINGS)
@given(steps=st.lists(two_actor_step, min_size=2, max_size=8).map(
    lambda s: [(("write", [1, 2]), ("tag", "u0", 0), 99), (("overwrite", [3]), ("tag", "u1", 0), 99)] + s))
def test_two_actors_interleaved(steps):
    run_two_actors(steps)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(steps=st.lists(two_actor_step, min_size=2, max_size=20).map(
    lambda s: [(("write", [1, 2]), ("tag", "u0", 0), 99), (("overwrite", [3]), ("tag", "u1", 0), 99)] + s))
def test_two_actors_interleaved_long(steps):
    run_two_actors(steps)


@pytest.mark.parametrize("call", [7, 9, 12, 20])
def test_two_actors_with_a_file_clock_behind_the_wall_clock(call, monkeypatch):
    """A cleanup interleaved in a write, after the write's first data file is on disk, with file
    times a second behind the wall clock (S3's LastModified is whole seconds; local disks lag by a
    tick): the file is a day younger than the cutoff all the same, and the write commits."""
    from engine.io import fileio
    from engine.io.fileio import FileStatus

    real = fileio._local_status

    def behind(path, entry):
        s = real(path, entry)
        return FileStatus(s.path, s.size, s.is_dir, s.modification_time_ms - 1000)

    monkeypatch.setattr(fileio, "_local_status", behind)
    first = [(("write", [1, 2]), ("tag", "u0", 0), 99), (("overwrite", [3]), ("tag", "u1", 0), 99)]
    run_two_actors([*first, (("write", [4]), ("orphans",), call), (("write", [5]), ("orphans",), call)])
