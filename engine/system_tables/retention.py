"""``t$retention``: what keeps each snapshot, tag, branch, long-lived changelog and file alive,
and when it becomes collectable under the table's current options.

One job: lay out, one row per object, the verdicts of ``engine.ops.expire_snapshots`` (which
snapshots the options hold and why) and the reasons of ``engine.ops.reachability`` (which
anchors reference each file). This is a dyntable table (Paimon has none like it); Paimon's
``$snapshots`` stays column-for-column Java's, so the retention mark shows here
(``behind_retention_mark``), not there.

Columns: ``object_type`` (``snapshot``, ``tag``, ``branch``, ``changelog``, ``retention-mark``,
or the file kind: ``data``, ``changelog-file``, ``manifest``, ``manifest-list``, ``index``, …),
``name`` (snapshot id, tag/branch name, or the file path relative to the table root),
``snapshot_id``, ``file_size``, ``kept_by`` (why it stays: ``latest snapshot``,
``snapshot.num-retained.min = 10``, ``snapshot.time-retained until …``, ``consumer 'c' …``,
``retention mark at …``, ``snapshots 3-7``, ``tag t1``, ``branch b``; null when nothing keeps
it: the next expiration removes it), ``behind_retention_mark``, ``collectable_now`` and
``collectable_after`` (when the time retention lets it go; null while a count or a reference
holds it, or when it is collectable now).

Cost: reads every anchor of every branch and computes, per anchor, its live files (reachability
with ``explain=True``): proportional to anchors × live files. Meant for inspection, not for
polling a huge table.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa

from engine.history.retention_mark import read_mark
from engine.identifier import MAIN_BRANCH
from engine.meta.refs import TagStore
from engine.ops.expire_snapshots import ExpirePolicy, describe_anchors, judge_snapshots
from engine.ops.expiry_files import live_consumers
from engine.ops.reachability import Anchor, FileKindRef, ReachabilityCollector, all_anchors, branch_names
from engine.system_tables.columns import build_table

if TYPE_CHECKING:
    from engine.store import FileStore

_FILE_TYPE = {FileKindRef.CHANGELOG: "changelog-file"}


def read_retention(store: FileStore, now_ms: int | None = None) -> pa.Table:
    io, root, branch = store.io, store.paths.root, store.branch
    now = int(dt.datetime.now(dt.UTC).timestamp() * 1000) if now_ms is None else now_ms
    anchors = all_anchors(io, root)
    mine = [a for a in anchors if a.kind == "snapshot" and a.branch == branch]
    mark = read_mark(io, store.paths.branch_root)  # each branch has its own mark
    verdicts = {
        v.snapshot_id: v
        for v in judge_snapshots(
            [a.snapshot for a in mine], ExpirePolicy.of(store, now_ms=now), live_consumers(store, now), mark
        )
    }
    rows: list[tuple[str, str, int | None, int | None, str | None, bool | None, bool, int | None]] = []

    def behind(sid: int | None, anchor_branch: str = branch) -> bool | None:
        if mark is None or sid is None or anchor_branch != branch:
            return None
        return sid < mark.snapshot_id

    for a in mine:
        v = verdicts[a.snapshot.id]
        rows.append(
            (
                "snapshot",
                a.name,
                a.snapshot.id,
                None,
                "; ".join(v.reasons) or None,
                behind(a.snapshot.id),
                v.expires,
                v.collectable_at_ms,
            )
        )
    for a in anchors:
        if a.kind == "tag" and a.branch == branch:
            tag = TagStore(store.io, store.paths).get(a.name)
            until = None
            if tag.create_time is not None and tag.time_retained_ms is not None:
                # tagCreateTime is a local wall-clock value (Java LocalDateTime)
                until = int(
                    (tag.create_time + dt.timedelta(milliseconds=tag.time_retained_ms)).timestamp() * 1000
                )
            rows.append(
                (
                    "tag",
                    a.name,
                    a.snapshot.id,
                    None,
                    "tag (until deleted" + (", or expire_tags after its retention)" if until else ")"),
                    behind(a.snapshot.id),
                    False,
                    until,
                )
            )
        elif a.kind == "changelog" and a.branch == branch:
            rows.append(
                (
                    "changelog",
                    a.name,
                    a.snapshot.id,
                    None,
                    "changelog.num-retained / changelog.time-retained",
                    None,
                    False,
                    None,
                )
            )
    for name in branch_names(io, root):
        if name != MAIN_BRANCH:
            rows.append(("branch", name, None, None, "branch (until deleted)", None, False, None))
    if mark is not None:
        rows.append(
            (
                "retention-mark",
                f"mark-{mark.version}",
                mark.snapshot_id,
                None,
                f"retention.time (marked {mark})",
                None,
                False,
                None,
            )
        )
    reach = ReachabilityCollector(io, root).collect(anchors, explain=True)
    assert reach.reasons is not None
    prefix = root.rstrip("/") + "/"
    for path, ref in sorted(reach.files.items()):
        keepers = reach.reasons.get(path, [])
        rows.append(
            _file_row(
                path[len(prefix) :] if path.startswith(prefix) else path,
                ref.kind,
                ref.size,
                keepers,
                verdicts,
                branch,
            )
        )
    return build_table(
        "retention",
        {
            "object_type": [r[0] for r in rows],
            "name": [r[1] for r in rows],
            "snapshot_id": [r[2] for r in rows],
            "file_size": [r[3] for r in rows],
            "kept_by": [r[4] for r in rows],
            "behind_retention_mark": [r[5] for r in rows],
            "collectable_now": [r[6] for r in rows],
            "collectable_after": [r[7] for r in rows],
        },
    )


def _file_row(
    name: str, kind: FileKindRef, size: int | None, keepers: list[Anchor], verdicts: dict, branch: str
):
    """A file is collectable once every anchor keeping it is: only snapshots of this branch can
    go by the options; a tag, branch or long-lived changelog holds it until removed."""
    reason = describe_anchors(keepers) or None
    only_snapshots = all(a.kind == "snapshot" and a.branch == branch for a in keepers)
    now, after = False, None
    if keepers and only_snapshots:
        newest = verdicts[max(int(a.name) for a in keepers)]
        now, after = newest.expires, newest.collectable_at_ms
    return (_FILE_TYPE.get(kind, kind.value), name, None, size, reason, None, now, None if now else after)


__all__ = ["read_retention"]
