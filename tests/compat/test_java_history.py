"""dyntable's history operations leave tables that Java Paimon can expire and every engine still reads.

Each test builds a history with dyntable's engine, runs one history operation (rollback past a
full compaction, rollback to a tag, fast-forward after main compacted, replace_main, a branch made
from a snapshot id), then lets Paimon's own Java ``ExpireSnapshotsImpl`` expire main down to its
newest snapshot, and finally reads main, the branch and the tags with Java Paimon, dyntable and
pypaimon: all three must return the expected rows, and Java must read every snapshot and tag left.

Why this is the test that matters: Paimon's history invariant is "a data file is added once and
deleted once". Java's expiration deletes the files an expiring snapshot's delta DELETEs (unless a
tag still holds them) and knows nothing of dyntable's branches, and Java's and pypaimon's scans
drop an ADD of a file that a scanned manifest DELETEs. A history that re-adds a deleted file, or
a branch whose base only main's snapshots hold, loses data once a Java job maintains the table.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.meta.snapshot import CommitKind
from tests.compat.harness import PyPaimon, PyPaimonError, _read_ipc, cast_to_schema
from tests.compat.java_oracle import JavaOracle, JavaOracleError, JavaPaimon, arrow_rows

pytestmark = [pytest.mark.java, pytest.mark.compat]

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
NAME = "db.h"


@pytest.fixture
def catalog(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


@pytest.fixture
def java(paimon_java: JavaOracle, catalog) -> JavaPaimon:
    return JavaPaimon(catalog.warehouse, paimon_java)


def _kv(ids, v) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids]}, schema=KV)


def _create(catalog, pk: bool = True):
    if pk:
        return catalog.create_table(NAME, KV, primary_keys=["id"], options={"bucket": "1"})
    return catalog.create_table(NAME, KV)


def _ours(catalog, *, branch: str | None = None, tag: str | None = None) -> list[tuple]:
    name = f"{NAME}$branch_{branch}" if branch else NAME
    return arrow_rows(catalog.get_table(name).to_arrow(tag=tag))


def _pypaimon_rows(pypaimon: PyPaimon, warehouse: str, table: str, **options: str) -> list[tuple]:
    out = pypaimon._tmp(".arrow")
    try:
        pypaimon.call("read", warehouse=warehouse, table=table, out=str(out), options=options)
        return arrow_rows(cast_to_schema(_read_ipc(out), KV))
    finally:
        out.unlink(missing_ok=True)


def _brief(error: str, message: str) -> str:
    """An engine's failure as a short comparable string: file paths cut to their names."""
    message = re.sub(r"(?:file:)?/[^\s'\",]*/([^/\s'\",]+)", r"\1", message)
    return f"error {error.rsplit('.', 1)[-1]}: {message[:160]}"


def reads(java: JavaPaimon, pypaimon: PyPaimon, catalog, *, branch: str | None = None,
          tag: str | None = None) -> dict[str, object]:
    """What each engine reads (main or ``branch``, latest or ``tag``); a failure reads as its error."""
    out: dict[str, object] = {}
    try:
        out["java"] = java.read(NAME, branch=branch, tag=tag)
    except JavaOracleError as exc:
        out["java"] = _brief(exc.root_error, exc.root_message)
    try:
        out["dyntable"] = _ours(catalog, branch=branch, tag=tag)
    except Exception as exc:  # any failure is the finding; the comparison below reports it
        out["dyntable"] = _brief(type(exc).__name__, str(exc))
    options = {"scan.tag-name": tag} if tag else {}
    try:
        out["pypaimon"] = _pypaimon_rows(pypaimon, catalog.warehouse,
                                         f"{NAME}$branch_{branch}" if branch else NAME, **options)
    except PyPaimonError as exc:
        out["pypaimon"] = _brief(exc.error_type, exc.remote_message)
    return out


def all_read(expected: list[tuple]) -> dict[str, object]:
    return {"java": expected, "dyntable": expected, "pypaimon": expected}


def _compacted(t) -> None:
    t.compact(full=True)
    assert t.latest_snapshot().commit_kind == CommitKind.COMPACT  # the history really holds a compaction


# ---- rollback ----------------------------------------------------------------------------------


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_rollback_past_a_full_compaction_then_java_expires(java, pypaimon, catalog, pk):
    t = _create(catalog, pk)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2, 4], "w2-"))  # snapshot 2: the rollback target
    target = _ours(catalog)
    _compacted(t)  # snapshot 3 DELETEs the files of snapshots 1 and 2
    t.write_arrow(_kv([5], "w4-"))
    head = _ours(catalog)
    result = t.rollback_to(2)
    assert _ours(catalog) == target
    java.expire_snapshots(NAME, retain_max=1)
    assert java.snapshot_ids(NAME) == [result.current_snapshot_id]
    assert reads(java, pypaimon, catalog) == all_read(target)
    assert result.backup_tag in java.tags(NAME)
    assert reads(java, pypaimon, catalog, tag=result.backup_tag) == all_read(head)
    assert java.unreadable(NAME) == {}


def test_rollback_to_a_tag_then_java_expires(java, pypaimon, catalog):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    t.create_tag("release")
    tagged = _ours(catalog)
    t.write_arrow(_kv([3, 4], "w3-"))
    _compacted(t)
    t.write_arrow(_kv([1], "w5-"))
    head = _ours(catalog)
    result = t.rollback_to("release")
    java.expire_snapshots(NAME, retain_max=1)
    assert java.snapshot_ids(NAME) == [result.current_snapshot_id]
    assert reads(java, pypaimon, catalog) == all_read(tagged)
    assert reads(java, pypaimon, catalog, tag="release") == all_read(tagged)
    assert reads(java, pypaimon, catalog, tag=result.backup_tag) == all_read(head)
    assert java.unreadable(NAME) == {}
    # dyntable writes on after Java's maintenance; Java expires again; all still agree.
    t.refresh().write_arrow(_kv([9], "after-"))
    java.expire_snapshots(NAME, retain_max=1)
    assert reads(java, pypaimon, catalog) == all_read(sorted([*tagged, (9, "after-9")]))
    assert java.unreadable(NAME) == {}


# ---- branches ----------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["from_tag", "from_snapshot"])
def test_fast_forward_after_main_compacted_then_java_expires(java, pypaimon, catalog, base):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    if base == "from_tag":
        t.create_tag("base")
        t.create_branch("dev", from_tag="base")
    else:
        t.create_branch("dev", from_snapshot=2)
    dev = catalog.get_table(f"{NAME}$branch_dev")
    dev.write_arrow(_kv([3, 7], "dev-"))
    branch_rows = _ours(catalog, branch="dev")
    _compacted(t)  # main DELETEs the files the branch shares with it
    t.write_arrow(_kv([8], "main-"))
    result = t.fast_forward("dev")
    assert _ours(catalog) == branch_rows
    java.expire_snapshots(NAME, retain_max=1)
    assert java.snapshot_ids(NAME) == [result.current_snapshot_id]
    assert reads(java, pypaimon, catalog) == all_read(branch_rows)
    assert reads(java, pypaimon, catalog, branch="dev") == all_read(branch_rows)
    assert java.unreadable(NAME) == {}
    assert java.unreadable(NAME, branch="dev") == {}


def test_replace_main_then_java_expires(java, pypaimon, catalog):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    t.create_tag("base")
    t.create_branch("dev", from_tag="base")
    catalog.get_table(f"{NAME}$branch_dev").write_arrow(_kv([1, 6], "dev-"))
    branch_rows = _ours(catalog, branch="dev")
    _compacted(t)
    t.write_arrow(_kv([8], "main-"))
    old_main = _ours(catalog)
    result = t.replace_main("dev")
    assert result.backup_tag is not None
    java.expire_snapshots(NAME, retain_max=1)
    assert java.snapshot_ids(NAME) == [result.current_snapshot_id]
    assert reads(java, pypaimon, catalog) == all_read(branch_rows)
    assert reads(java, pypaimon, catalog, tag=result.backup_tag) == all_read(old_main)
    assert reads(java, pypaimon, catalog, tag="base") == all_read(arrow_rows(
        pa.concat_tables([_kv([1, 3], "w1-"), _kv([2], "w2-")])))
    assert java.unreadable(NAME) == {}


def test_branch_from_a_snapshot_id_survives_java_expiring_main(java, pypaimon, catalog):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    t.create_branch("dev", from_snapshot=2)  # no tag of main holds snapshot 2
    dev = catalog.get_table(f"{NAME}$branch_dev")
    dev.write_arrow(_kv([4], "dev-"))
    branch_rows = _ours(catalog, branch="dev")
    t.write_arrow(_kv([1], "w3-"))
    _compacted(t)  # main DELETEs snapshot 2's files
    t.write_arrow(_kv([5], "w5-"))
    main_rows = _ours(catalog)
    java.expire_snapshots(NAME, retain_max=1)
    assert reads(java, pypaimon, catalog, branch="dev") == all_read(branch_rows)
    assert reads(java, pypaimon, catalog) == all_read(main_rows)
    assert java.unreadable(NAME, branch="dev") == {}
    # the branch's own history expires too, and it still reads
    java.expire_snapshots(NAME, retain_max=1, branch="dev")
    assert reads(java, pypaimon, catalog, branch="dev") == all_read(branch_rows)


def test_tags_and_backup_tags_survive_java_expiration(java, pypaimon, catalog):
    t = _create(catalog)
    expected_by_tag = {}
    for i in range(4):
        t.write_arrow(_kv([i, 10 + i], f"w{i}-"))
        if i % 2 == 0:
            t.create_tag(f"t{i}")
            expected_by_tag[f"t{i}"] = _ours(catalog)
    _compacted(t)
    t.write_arrow(_kv([1], "w5-"))
    head = _ours(catalog)
    result = t.rollback_to("t2")
    expected_by_tag[result.backup_tag] = head
    java.expire_snapshots(NAME, retain_max=1)
    assert set(java.tags(NAME)) == set(expected_by_tag) == set(t.refresh().tags())
    for tag, expected in expected_by_tag.items():
        assert reads(java, pypaimon, catalog, tag=tag) == all_read(expected), tag
    assert reads(java, pypaimon, catalog) == all_read(expected_by_tag["t2"])
    assert java.unreadable(NAME) == {}
