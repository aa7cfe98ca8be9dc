"""A branch's next snapshot that gives it another snapshot's content (rollback, fast-forward, replace_main).

One job: publish, as **one new OVERWRITE snapshot** ``head + 1``, a delta that turns the head's
live files into a target's, keeping Paimon's history invariant. Readers see the old head or the
new one, history stays linear, and nothing is deleted. The snapshot goes through the one
publish primitive (``engine.meta.publish``).

**Paimon's history invariant: in one branch's history a data file is ADDed once and DELETEd
once.** Java's scan (``AbstractFileStoreScan.readAndMergeFileEntries``) drops an ADD whose file
any scanned manifest DELETEs, and Java's ``expire_snapshots`` physically deletes every file
named by a DELETE entry of an expiring snapshot's delta (``FileDeletionBase
.planDeletedInDeltaManifest``: by path, so the LSM level does not matter). A republish delta
that ADDed again a file an earlier snapshot of the branch DELETEd (a rollback past a
compaction, a fast-forward to a branch that still has files main compacted away) would be read
without that file by Java, and Java's expiration would delete it while it is live.

So **every file a republish delta ADDs gets a new identity**: a new file name in the same
directory (bucket directory, or the external path's directory), made with
``FileIO.link_or_copy`` (a hard link on local disk: no bytes copied; a server-side copy on object
stores), and the ADD entry names the new file (the same ``DataFileMeta`` otherwise; extra files,
such as data-file indexes, are linked under matching new names). The rule is "every ADD", not
"only files this history deleted", because that is exact and needs no history scan:

* rollback: a file live in the target and not in the head was DELETEd (or moved to another
  level, which Java's path-based expiration treats alike) by a snapshot between them;
* fast-forward / replace_main: the delta ADDs the branch's files main lacks. Files main's
  history had (live in the branch's base, then compacted away on main; or given to main by an
  earlier fast-forward and compacted away since) need a new name; files only the branch wrote
  could keep theirs, but sharing a name between two histories lets either history's
  expiration (Java's deletes by DELETE entry, without looking at other branches) delete a file
  the other still reads. A new name gives each history its own file.

Files the head keeps are not touched, nor are head files that are copies of a file coming back
(a second fast-forward to the same branch links only what is new; see ``_keep_earlier_links``);
index files (the dynamic-bucket HASH index, deletion
vectors) need no new identity: Java expires them by set difference over the index manifests of
the retained snapshots and tags (``FileDeletionBase.cleanUnusedManifests``), never by delta,
and the new snapshot names the target's index manifest. A table with deletion vectors is
refused (their ranges name data files by file name, and dyntable does not maintain them).

The link is also the check that the target's files exist (a rollback to a tag whose files an
expiration removed, a fast-forward racing ``delete_branch``): a missing source file fails the
operation before anything is published, with the links made so far removed. Cost: one link per
re-added file (measured in ``docs/history.md``).

A backup tag (rollback, replace_main) is created first and its name recorded in the snapshot's
``dyntable.backup-tag`` property: an attempt that loses the publish deletes the tag only if it
created it *and* the winning snapshot does not report it (two rollbacks of one head share one
backup tag; the loser must not delete the winner's).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from engine.commit import WRITER_VERSION
from engine.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    DyntableError,
    NoSuchSnapshotError,
    TagAlreadyExistsError,
)
from engine.iceberg import run_after_commit as iceberg_metadata
from engine.io import FileIO
from engine.lsm.deletion_vectors import refuse_renaming_files
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, FileKind, ManifestEntry
from engine.meta.publish import Attempt, next_time_millis, publish_snapshot
from engine.meta.refs import TagStore
from engine.meta.snapshot import CommitKind, Snapshot, Tag, new_snapshot_uuid
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore

BACKUP_TAG_PROPERTY = "dyntable.backup-tag"


@dataclass(frozen=True, slots=True)
class Republished:
    """``snapshot``: the published snapshot (None: the head had the target's content already);
    ``backup_tag``: the tag keeping the replaced head (None when not asked for or nothing changed)."""

    snapshot: Snapshot | None
    backup_tag: str | None


def republish(
    store: FileStore,
    head: Snapshot | None,
    target: Snapshot,
    target_live: Sequence[ManifestEntry],
    schema_id: int,
    properties: Mapping[str, str],
    *,
    action: str,
    backup_tag: str | None = None,
    missing: Callable[[str], DyntableError] | None = None,
) -> Republished:
    """Publish ``head + 1`` with ``target_live`` as its live files (see the module docstring).

    Args:
        action: what is being done, for messages ("roll back to snapshot 3").
        backup_tag: a tag to keep ``head`` by (created first; reused if it tags ``head``).
        missing: builds the error for a target file that does not exist (its path given).

    Raises:
        TagAlreadyExistsError: ``backup_tag`` exists and tags another snapshot (nothing changed).
        CommitConflictError: another commit took ``head + 1``; nothing was changed.
        CommitStateUnknownError: the publish may or may not have happened; nothing was deleted.
    """
    attempt = Attempt(store.io)
    props = dict(properties)
    if backup_tag is not None and head is not None:
        _create_backup(store, attempt, backup_tag, head, action)
        props[BACKUP_TAG_PROPERTY] = backup_tag
    try:
        snapshot = content_snapshot(store, head, target, target_live, schema_id, props, attempt, missing)
    except BaseException:
        attempt.undo()
        raise
    if snapshot is None:  # the head holds the target's files already
        attempt.undo()
        return Republished(None, None)
    try:
        published = publish_snapshot(store.snapshots, snapshot)
    except CommitStateUnknownError:
        raise
    except DyntableError:
        attempt.undo()  # e.g. NoSuchBranchError: the publish was taken back
        raise
    except Exception as e:
        # The snapshot may exist and reference what was written: delete nothing.
        raise CommitStateUnknownError(
            f"publishing snapshot {snapshot.id} of {store.paths.root} ({action}) failed ({e}); it may or may "
            "not exist — look at the table before retrying"
        ) from e
    if not published:
        if backup_tag is not None and _winner_reports(store, snapshot.id, backup_tag):
            attempt.forget(store.paths.tag_file(backup_tag))
        attempt.undo()
        raise CommitConflictError(
            f"another commit to {store.paths.root} landed while trying to {action} (after snapshot "
            f"{head.id if head else 0}); nothing was changed — look at the new head and retry"
        )
    attempt.keep()
    # As after a commit (Paimon calls its commit callbacks after a rollback): Iceberg metadata follows.
    iceberg_metadata(store)  # never raises
    return Republished(snapshot, backup_tag if head is not None else None)


def _create_backup(store: FileStore, attempt: Attempt, name: str, head: Snapshot, action: str) -> None:
    path = store.paths.tag_file(name)
    if attempt.create(path, Tag(head).to_json().encode()):
        return
    if TagStore(store.io, store.paths).get(name).snapshot.id != head.id:
        raise TagAlreadyExistsError(
            f"tag '{name}' exists and does not tag snapshot {head.id}; rename or delete it (or do without a "
            f"backup), then {action} again; nothing was changed"
        )


def _winner_reports(store: FileStore, snapshot_id: int, backup_tag: str) -> bool:
    """Whether the snapshot that won id ``snapshot_id`` names ``backup_tag`` as its backup."""
    try:
        winner = store.snapshots.read_fresh(snapshot_id)
    except (DyntableError, OSError):
        return True  # unknown: keeping a tag is harmless, deleting a reported one is not
    return (winner.properties or {}).get(BACKUP_TAG_PROPERTY) == backup_tag


def content_snapshot(
    store: FileStore,
    head: Snapshot | None,
    target: Snapshot,
    target_live: Sequence[ManifestEntry],
    schema_id: int,
    properties: Mapping[str, str],
    attempt: Attempt,
    missing: Callable[[str], DyntableError] | None = None,
) -> Snapshot | None:
    """The snapshot after ``head`` whose live files are ``target_live`` (None when the head has them).

    Every file written (manifests, lists, data-file links) is recorded in ``attempt``.
    """
    ms = store.manifests
    head_live = {e.identifier: e for e in store.live_entries(head)}
    wanted = {e.identifier: e for e in target_live}
    gone = {key: e for key, e in head_live.items() if key not in wanted}
    adds = [e for key, e in wanted.items() if key not in head_live]
    adds = _keep_earlier_links(gone, adds)
    deletes = [
        ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in gone.values()
    ]
    if head is not None and not deletes and not adds and head.index_manifest == target.index_manifest:
        return None
    if adds:
        refuse_renaming_files(store, "give files a new identity in")
        adds = reidentify(store, adds, attempt, missing)
    delta = deletes + adds
    delta_metas = ms.write_entries_rolling(delta, schema_id, store.partition_types)
    for m in delta_metas:
        attempt.record(store.paths.manifest_file(m.file_name))
    base_name, base_size = ms.write_list(ms.data_manifests(head) if head else [])
    attempt.record(store.paths.manifest_file(base_name))
    delta_name, delta_size = ms.write_list(delta_metas)
    attempt.record(store.paths.manifest_file(delta_name))
    added = sum(e.file.row_count for e in adds)
    removed = sum(e.file.row_count for e in deletes)
    row_ids = [x for x in (head.next_row_id if head else None, target.next_row_id) if x is not None]
    return Snapshot(
        id=(head.id if head else 0) + 1,
        schema_id=schema_id,
        base_manifest_list=base_name,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_name,
        delta_manifest_list_size=delta_size,
        index_manifest=target.index_manifest,
        commit_user=str(uuid.uuid4()),
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.OVERWRITE,
        time_millis=next_time_millis(head),
        total_record_count=(head.total_record_count if head else 0) + added - removed,
        delta_record_count=added - removed,
        watermark=target.watermark,
        properties=dict(properties),
        next_row_id=max(row_ids) if row_ids else None,
        writer_version=WRITER_VERSION,
        uuid=new_snapshot_uuid(),
    )


def reidentify(
    store: FileStore,
    entries: Sequence[ManifestEntry],
    attempt: Attempt,
    missing: Callable[[str], DyntableError] | None = None,
) -> list[ManifestEntry]:
    """``entries`` (ADDs) with each file linked under a new name; every link is recorded in ``attempt``.

    New names are ``<original stem>-link-<one token per call><n><extension>`` (a token per call
    and a counter per file, as Paimon names a writer's files). Links are made in chunks on a few
    threads: a hard link is a cheap system call, a server-side copy on an object store is a
    round trip.

    Raises:
        whatever ``missing`` builds (NoSuchSnapshotError by default) when a source file is gone.
    """
    token = str(uuid.uuid4())
    part_dirs: dict[bytes, str] = {}
    pairs: list[tuple[str, str]] = []
    out = []
    for n, e in enumerate(entries):
        f = e.file
        new_name = _new_name(f.file_name, token, n)
        if f.external_path:
            src = store.paths.external_file(f.external_path)
            directory = src.rsplit("/", 1)[0]
        else:
            part_dir = part_dirs.get(e.partition)
            if part_dir is None:
                values = deserialize_row(e.partition, store.partition_types)
                part_dir = part_dirs[e.partition] = store.partition_dir(values)
            directory = store.paths.bucket_dir(part_dir, e.bucket)
            src = f"{directory}/{f.file_name}"
        dst = f"{directory}/{new_name}"
        pairs.append((src, dst))
        extras = tuple(_extra_name(x, f.file_name, new_name) for x in f.extra_files)
        pairs += [(f"{directory}/{old}", f"{directory}/{new}")
                  for old, new in zip(f.extra_files, extras, strict=True)]
        # An external file keeps its external directory, spelled as its writer spelled it.
        external = f"{f.external_path.rsplit('/', 1)[0]}/{new_name}" if f.external_path else None
        out.append(ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, _renamed(
            f, new_name, extras, external)))
    for _, dst in pairs:
        attempt.record(dst)  # before linking: an interrupted attempt's undo finds every link made
    _link_all(store.io, pairs, missing)
    return out


def _link_all(io: FileIO, pairs: list[tuple[str, str]],
              missing: Callable[[str], DyntableError] | None) -> None:
    def chunk(items: list[tuple[str, str]]) -> None:
        for src, dst in items:
            try:
                io.link_or_copy(src, dst)
            except FileNotFoundError:
                raise (missing(src) if missing is not None else NoSuchSnapshotError(
                    f"{src} is missing: the snapshot being restored lost its files (expired, or deleted by "
                    "orphan cleanup); nothing was changed")) from None

    workers = 1 if len(pairs) < 64 else (4 if io.is_local else 16)
    if workers == 1:
        chunk(pairs)
        return
    size = max(1, -(-len(pairs) // (workers * 4)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dyntable-link") as pool:
        futures = [pool.submit(chunk, pairs[i:i + size]) for i in range(0, len(pairs), size)]
        errors = []
        for fut in futures:
            try:
                fut.result()
            except BaseException as e:  # noqa: BLE001 - re-raised below, after every chunk settled
                errors.append(e)
    if errors:
        raise next((e for e in errors if isinstance(e, DyntableError)), errors[0])


_LINK = "-link-"


def _new_name(old: str, token: str, n: int) -> str:
    """A fresh name that says which file it is a copy of: ``data-<uuid>-<k>-link-<token><n>.parquet``.

    The part before ``-link-`` is the original file's name (without extension), kept through
    copies of copies, so a later republish recognises a copy the head already has (see
    :func:`_keep_earlier_links`).
    """
    dot = old.find(".")
    stem, ext = (old[:dot], old[dot:]) if dot >= 0 else (old, "")
    return f"{stem.split(_LINK, 1)[0]}{_LINK}{token.replace('-', '')}{n}{ext}"


def _origin(name: str) -> str:
    dot = name.find(".")
    stem, ext = (name[:dot], name[dot:]) if dot >= 0 else (name, "")
    return stem.split(_LINK, 1)[0] + ext


def origin_name(name: str) -> str:
    """The name of the file ``name`` is a copy of (itself when it is no copy): see :func:`_new_name`."""
    return _origin(name)


def _keep_earlier_links(gone: dict[tuple[object, ...], ManifestEntry],
                        adds: list[ManifestEntry]) -> list[ManifestEntry]:
    """The ADDs still needed once head files that are copies of the same file stay live instead.

    A head file leaving (in ``gone``) and a file coming back that are copies of one original
    (same name before ``-link-``), in the same partition, bucket and level, with identical
    metadata but for the name, hold the same rows: the head's copy is kept (removed from
    ``gone``) and nothing is added for it. So a second fast-forward to a branch, or a rollback
    to content the head already holds under new names, links only what is really new.
    """
    if not gone or not adds:
        return adds
    by_origin: dict[tuple[object, ...], list[tuple[object, ...]]] = {}
    for key, e in gone.items():
        by_origin.setdefault((e.partition, e.bucket, e.file.level, _origin(e.file.file_name)), []).append(key)
    out = []
    for e in adds:
        candidates = by_origin.get((e.partition, e.bucket, e.file.level, _origin(e.file.file_name)), [])
        match = next((k for k in candidates if _same_but_name(gone[k].file, e.file)), None)
        if match is None:
            out.append(e)
            continue
        candidates.remove(match)
        del gone[match]
    return out


def _same_but_name(a: DataFileMeta, b: DataFileMeta) -> bool:
    return replace(a, file_name=b.file_name, extra_files=b.extra_files, external_path=b.external_path) == b


def _extra_name(extra: str, old: str, new: str) -> str:
    # Paimon names a data file's extra files after it (``<data file>.index``); keep that shape.
    return new + extra[len(old):] if extra.startswith(old) else f"{new}-{extra}"


def _renamed(f: DataFileMeta, name: str, extras: tuple[str, ...], external: str | None) -> DataFileMeta:
    return replace(f, file_name=name, extra_files=extras, external_path=external)


__all__ = ["BACKUP_TAG_PROPERTY", "Republished", "content_snapshot", "origin_name", "reidentify", "republish"]
