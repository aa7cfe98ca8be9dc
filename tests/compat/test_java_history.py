"""dyntable's history operations leave tables that Java Paimon can expire and every engine still reads.

Each test builds a history with dyntable's engine, runs one history operation (rollback past a
full compaction, rollback to a tag, fast-forward after main compacted, replace_main, a branch made
from a snapshot id), then lets Paimon's own Java ``ExpireSnapshotsImpl`` expire main down to its
newest snapshot. Main, the branch and the tags are read with Java Paimon, dyntable and pypaimon
before and after that expiration: all three must return the expected rows both times, and Java
must read every snapshot and tag left. A failure lists each disagreement with its phase, so it
tells a history that was wrong from the start from one Java's expiration broke.

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

from engine.meta.snapshot import CommitKind
from tests.compat.harness import PyPaimon, PyPaimonError, _read_ipc, cast_to_schema
from tests.compat.java_oracle import JavaOracleError, JavaPaimon, arrow_rows

pytestmark = [pytest.mark.java, pytest.mark.compat]

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
NAME = "db.h"


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
    message = message.split(", Possible causes")[0]  # Paimon's generic advice on FileNotFound
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


def _ref(ref: str) -> dict[str, str | None]:
    """``"main"``, ``"branch dev"`` or ``"tag t1"`` as read arguments."""
    kind, _, name = ref.partition(" ")
    return {"branch": name if kind == "branch" else None, "tag": name if kind == "tag" else None}


def agree_through_java_expiration(java: JavaPaimon, pypaimon: PyPaimon, catalog,
                                 expected: dict[str, list[tuple]], *,
                                 expire: tuple[str | None, ...] = (None,),
                                 check: tuple[str | None, ...] = (None,)) -> None:
    """Asserts no engine disagrees with ``expected``, before and after Java's expiration.

    Reads each ref (``"main"``, ``"branch dev"``, ``"tag t1"``) with Java, dyntable and pypaimon;
    lets Paimon's ``ExpireSnapshotsImpl`` expire each branch in ``expire`` (None = main) down to
    its newest snapshot; reads again; then asks Java to read every snapshot and tag left on each
    branch in ``check``. The failure lists every disagreement, one per line, so it shows whether
    the history was already wrong (``before``) or Java's expiration broke it (``after``).
    """
    problems: list[str] = []

    def observe(phase: str) -> None:
        for ref, rows in expected.items():
            for engine, got in reads(java, pypaimon, catalog, **_ref(ref)).items():
                if got != rows:
                    problems.append(f"{phase}: {ref}: {engine} read {got}, expected {rows}")

    observe("before Java's expiration")
    for branch in expire:
        left = [s["id"] for s in java.expire_snapshots(NAME, retain_max=1, branch=branch)["snapshots"]]
        if len(left) != 1:
            problems.append(f"Java's expiration of {branch or 'main'} left snapshots {left}")
    observe("after Java's expiration")
    for branch in check:
        problems.extend(f"after Java's expiration: Java cannot read {branch or 'main'}'s {ref}: "
                        f"{_brief(result['error'], result['message'])}"
                        for ref, result in java.verify(NAME, branch=branch).items() if "error" in result)
    assert not problems, "engines disagree:\n" + "\n".join(problems)


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
    result = t.refs.rollback_to(2)
    agree_through_java_expiration(java, pypaimon, catalog, {
        "main": target, f"tag {result.backup_tag}": head})


def test_rollback_to_a_tag_then_java_expires(java, pypaimon, catalog):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    t.refs.tags.create("release")
    tagged = _ours(catalog)
    t.write_arrow(_kv([3, 4], "w3-"))
    _compacted(t)
    t.write_arrow(_kv([1], "w5-"))
    head = _ours(catalog)
    result = t.refs.rollback_to("release")
    agree_through_java_expiration(java, pypaimon, catalog, {
        "main": tagged, "tag release": tagged, f"tag {result.backup_tag}": head})
    # dyntable writes on after Java's maintenance; Java expires again; all still agree.
    t.refresh().write_arrow(_kv([9], "after-"))
    agree_through_java_expiration(java, pypaimon, catalog, {
        "main": sorted([*tagged, (9, "after-9")]), "tag release": tagged})


def test_tags_and_backup_tags_survive_java_expiration(java, pypaimon, catalog):
    t = _create(catalog)
    expected = {}
    for i in range(4):
        t.write_arrow(_kv([i, 10 + i], f"w{i}-"))
        if i % 2 == 0:
            t.refs.tags.create(f"t{i}")
            expected[f"tag t{i}"] = _ours(catalog)
    _compacted(t)
    t.write_arrow(_kv([1], "w5-"))
    head = _ours(catalog)
    result = t.refs.rollback_to("t2")
    expected[f"tag {result.backup_tag}"] = head
    expected["main"] = expected["tag t2"]
    agree_through_java_expiration(java, pypaimon, catalog, expected)
    tags = {"t0", "t2", result.backup_tag}
    assert set(java.tags(NAME)) == tags == set(t.refresh().refs.tags.all())


# ---- branches ----------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["from_tag", "from_snapshot"])
def test_fast_forward_after_main_compacted_then_java_expires(java, pypaimon, catalog, base):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    if base == "from_tag":
        t.refs.tags.create("base")
        t.refs.branches.create("dev", from_tag="base")
    else:
        t.refs.branches.create("dev", from_snapshot=2)
    catalog.get_table(f"{NAME}$branch_dev").write_arrow(_kv([3, 7], "dev-"))
    branch_rows = _ours(catalog, branch="dev")
    _compacted(t)  # main DELETEs the files the branch shares with it
    t.write_arrow(_kv([8], "main-"))
    t.refs.branches.fast_forward("dev")
    agree_through_java_expiration(java, pypaimon, catalog, {"main": branch_rows, "branch dev": branch_rows},
                                   check=(None, "dev"))


def test_replace_main_then_java_expires(java, pypaimon, catalog):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    t.refs.tags.create("base")
    base = _ours(catalog)
    t.refs.branches.create("dev", from_tag="base")
    catalog.get_table(f"{NAME}$branch_dev").write_arrow(_kv([1, 6], "dev-"))
    branch_rows = _ours(catalog, branch="dev")
    _compacted(t)
    t.write_arrow(_kv([8], "main-"))
    old_main = _ours(catalog)
    result = t.refs.branches.replace_main("dev")
    assert result.backup_tag is not None
    agree_through_java_expiration(java, pypaimon, catalog, {
        "main": branch_rows, f"tag {result.backup_tag}": old_main, "tag base": base})


def test_branch_from_a_snapshot_id_survives_java_expiring_main(java, pypaimon, catalog):
    t = _create(catalog)
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    t.refs.branches.create("dev", from_snapshot=2)  # no tag of main holds snapshot 2
    catalog.get_table(f"{NAME}$branch_dev").write_arrow(_kv([4], "dev-"))
    branch_rows = _ours(catalog, branch="dev")
    t.write_arrow(_kv([1], "w3-"))
    _compacted(t)  # main DELETEs snapshot 2's files
    t.write_arrow(_kv([5], "w5-"))
    main_rows = _ours(catalog)
    agree_through_java_expiration(java, pypaimon, catalog, {"main": main_rows, "branch dev": branch_rows},
                                   check=(None, "dev"))
    # the branch's own history expires too, and it still reads
    agree_through_java_expiration(java, pypaimon, catalog, {"branch dev": branch_rows}, expire=("dev",),
                                   check=("dev",))
