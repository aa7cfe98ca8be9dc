"""The one commit pipeline: writes, compaction and overwrites become snapshots here.

Every snapshot of every table is published by one primitive, :func:`engine.meta.publish
.publish_snapshot` (create-if-absent, read-back of a failed create, the deleted-branch check,
the LATEST hint): this module prepares the snapshots of commits, ``engine.ops.republish`` those
of rollback, fast-forward and replace_main; no other module creates a snapshot file.

```
 commit messages (new files, changelog files, compaction before/after)
        │
        ▼
 ┌─ attempt ──────────────────────────────────────────────────────────────────────┐
 │ latest = LATEST snapshot (verified hint)                                        │
 │ already committed? (same commit user + identifier + kind since the last try)   │──► done
 │ entries for `latest`: overwrites delete what is live NOW; primary-key appends  │
 │   re-base their sequence numbers above every concurrent writer's               │
 │ validate the delta against `latest`: every DELETE is live by full identity     │──► CommitConflictError
 │   (partition, bucket, level, file); an overwrite refuses if a non-compaction   │
 │   commit changed its partitions since it started                               │
 │ delta manifest(s), base manifest list (merged when there are many),            │
 │   changelog manifest list; time = max(now, latest.time + 1 ms)                  │
 │ first attempt: every added file still exists ─── no ──► CommitConflictError    │
 │ create snapshot-(latest+1) IF ABSENT ──── lost the race ──► back off, again    │
 │ (publish_snapshot: LATEST hint; a branch deleted meanwhile ──► NoSuchBranchError│
 │  after removing the snapshot and the directories the create recreated)         │
 └────────────────────────────────────────────────────────────────────────────────┘
        │ won                                       │ failed for good
        ▼                                           ▼
      done                            delete everything this commit wrote (data files,
                                      manifests, lists), then raise
```

Promises, in the order of the trusted table formats: a commit is atomic (one create-if-absent);
a snapshot is never published whose delta does not apply to its base; a commit that raises
anything but :class:`CommitStateUnknownError` published nothing and left nothing behind; a
commit that raises :class:`CommitStateUnknownError` deleted nothing (the snapshot may reference
the files); with a streaming identifier, a retry of a published commit is a no-op.

A commit that carries both new files and compaction results publishes APPEND then COMPACT with
the same identifier, as Paimon does; if only the COMPACT part fails, the APPEND stands, the
compaction's own files are deleted and the failure is logged (the write succeeded).

Sequence numbers of primary-key appends are re-based at commit time (``engine.commit_rebase``).
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence

from engine.commit_messages import (
    CommitMessage,
    CommitResult,
    OverwriteSpec,
    compaction_outputs,
    delete_data_files,
    delete_uncommitted,
)
from engine.commit_rebase import (
    SequenceRebase,
    assign_row_ids,
    check_deletion_vector_base,
    check_delta_applies,
    check_partitions_unchanged,
)
from engine.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    NoSuchPartitionError,
    NoSuchSnapshotError,
    StorageError,
)
from engine.features import ROW_ID_FEATURES, check_appendable, check_rewritable, tracks_row_ids
from engine.iceberg import run_after_commit as iceberg_metadata
from engine.meta.binary_row import deserialize_row
from engine.meta.index_files import (
    DELETION_VECTORS_INDEX,
    IndexManifestEntry,
    IndexStore,
    next_index_manifest,
)
from engine.meta.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta
from engine.meta.manifest_merge import merge_manifests
from engine.meta.publish import next_time_millis, publish_snapshot
from engine.meta.row_ranges import check_ranges_kept, is_data_evolution
from engine.meta.snapshot import CommitKind, Snapshot, new_snapshot_uuid
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore

WRITER_VERSION = "dyntable-0.1"
CHANGE_TRACKING_PROPERTY = "dyntable.change-tracking"

log = logging.getLogger(__name__)


def _index_adds(messages: Sequence[CommitMessage], dv: bool = False) -> list[IndexManifestEntry]:
    """The messages' new index files: HASH files (``dv=False``) go with the APPEND snapshot,
    deletion-vector files (``dv=True``) with the COMPACT one, as Paimon commits them: a DV
    describes the files as the compaction leaves them."""
    return [
        IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, f)
        for m in messages
        for f in m.new_index_files
        if (f.index_type == DELETION_VECTORS_INDEX) == dv
    ]


IndexChanges = Callable[[], tuple[list[IndexManifestEntry], Callable[[bytes], bool] | None]]


def _entries(
    kind: FileKind, messages: Sequence[CommitMessage], pick: Callable[[CommitMessage], Sequence[DataFileMeta]]
) -> list[ManifestEntry]:
    return [
        ManifestEntry(kind, m.partition, m.bucket, m.total_buckets, f) for m in messages for f in pick(m)
    ]


class FileStoreCommit:
    """Publishes snapshots for one table branch on behalf of one commit user."""

    def __init__(self, store: FileStore, commit_user: str | None = None) -> None:
        self.store = store
        self.commit_user = commit_user or str(uuid.uuid4())
        opts = store.options
        self.max_retries = opts.commit_max_retries
        self.min_wait_ms = opts.commit_min_retry_wait
        self.max_wait_ms = opts.commit_max_retry_wait
        self.timeout_ms = opts.commit_timeout
        self.merge_min_count = opts.manifest_merge_min_count
        self.manifest_target_size = opts.manifest_target_file_size

    # -- public operations ----------------------------------------------------------------------
    def commit(
        self,
        messages: Sequence[CommitMessage],
        identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        watermark: int | None = None,
        change_tracking: bool = True,
        properties: Mapping[str, str] | None = None,
    ) -> CommitResult:
        """Commit new files (APPEND) and then compaction results (COMPACT).

        With a streaming identifier (anything but the batch identifier) the commit is skipped when
        this commit user already published that identifier or a later one (exactly-once restarts).
        On any failure but CommitStateUnknownError, the messages' files are deleted.
        """
        if self._already_published(identifier, messages):
            return CommitResult(())
        messages = [m for m in messages if not m.is_empty]
        ids: list[int] = []
        added = 0
        changelog = _entries(FileKind.ADD, messages, lambda m: m.changelog_files)
        index_adds = _index_adds(messages)
        if any(m.new_files for m in messages) or changelog or index_adds:
            kind = CommitKind.APPEND if change_tracking else CommitKind.OVERWRITE
            props = dict(properties or {})
            if not change_tracking:
                props[CHANGE_TRACKING_PROPERTY] = "false"
            rebase = SequenceRebase(self.store, messages) if self.store.has_primary_key else None
            plain_adds = _entries(FileKind.ADD, messages, lambda m: m.new_files)
            entries_for = rebase.entries_for if rebase is not None else (lambda _latest: plain_adds)
            try:
                sid, published = self._publish(
                    kind,
                    identifier,
                    entries_for,
                    changelog,
                    watermark,
                    props or None,
                    index_changes=lambda: (index_adds, None),
                    appends_rows=True,
                )
            except CommitStateUnknownError:
                raise
            except BaseException:
                if rebase is not None:
                    rebase.finish(None, failed=True)
                delete_uncommitted(self.store, messages)
                raise
            if rebase is not None:
                rebase.finish(published)
            ids.append(sid)
            added = sum(f.row_count for m in messages for f in m.new_files)
        compact = _entries(FileKind.DELETE, messages, lambda m: m.compact_before) + _entries(
            FileKind.ADD, messages, lambda m: m.compact_after
        )
        dv_adds = _index_adds(messages, dv=True)
        if compact or dv_adds:
            compact_changelog = _entries(FileKind.ADD, messages, lambda m: m.compact_changelog)
            try:
                def compact_entries(latest: Snapshot | None) -> list[ManifestEntry]:
                    check_deletion_vector_base(self.store, messages, latest)
                    return compact

                sid, _ = self._publish(
                    CommitKind.COMPACT,
                    identifier,
                    compact_entries,
                    compact_changelog,
                    watermark,
                    properties,
                    index_changes=(lambda: (dv_adds, None)) if dv_adds else None,
                )
            except CommitStateUnknownError:
                raise
            except Exception as e:
                index = IndexStore(self.store.io, self.store.paths)
                for m in messages:
                    delete_data_files(self.store, m.partition, m.bucket, compaction_outputs(m))
                    for f in m.new_index_files:
                        if f.index_type == DELETION_VECTORS_INDEX:
                            index.delete_file(f)
                if not ids:
                    raise
                # The write itself is committed: its outcome is the APPEND's. Compaction runs again later.
                log.warning(
                    "compaction after commit %s of %s was not committed: %s",
                    ids[-1],
                    self.store.paths.root,
                    e,
                )
                return CommitResult(tuple(ids), added)
            ids.append(sid)
        return CommitResult(tuple(ids), added)

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        spec: OverwriteSpec,
        identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        properties: Mapping[str, str] | None = None,
        base_snapshot_id: int | None = None,
    ) -> CommitResult:
        """Replace the live files that ``spec`` selects with the new files, in one OVERWRITE snapshot.

        ``base_snapshot_id``: the snapshot the new content was computed from (default: the latest
        snapshot when the commit starts). A commit other than a compaction that changed the
        selected partitions since then is a conflict; compactions are not (they keep the rows).
        """
        if self._already_published(identifier, messages):
            return CommitResult(())
        messages = [m for m in messages if not m.is_empty]
        adds = _entries(FileKind.ADD, messages, lambda m: m.new_files)
        if spec.files is not None:
            try:
                return self._replace_files(spec.files, adds, identifier, properties, base_snapshot_id)
            except CommitStateUnknownError:
                raise
            except BaseException:
                delete_uncommitted(self.store, messages)
                raise
        select: Callable[[bytes], bool]
        if spec.dynamic:
            targets = {m.partition for m in messages if m.new_files}
            if not targets:
                return CommitResult(())

            def select(partition: bytes) -> bool:
                return partition in targets
        elif spec.partitions is not None:
            matchers = [self._static_partition_matcher(p) for p in spec.partitions]
            if not matchers:
                return CommitResult(())

            def select(partition: bytes) -> bool:
                return any(m(partition) for m in matchers)
        else:
            select = self._static_partition_matcher(spec.static)
        try:
            return self._replace(
                select, adds, identifier, properties, base_snapshot_id, _index_adds(messages)
            )
        except CommitStateUnknownError:
            raise
        except BaseException:
            delete_uncommitted(self.store, messages)
            raise

    def drop_partitions(
        self, partitions: Sequence[Mapping[str, object]], identifier: int = BATCH_COMMIT_IDENTIFIER, *,
        if_exists: bool = True,
    ) -> CommitResult:
        """Mark-delete every file of the given partitions (one OVERWRITE snapshot).

        ``if_exists=False``: every full spec (one value per partition column) must match a live
        partition of the snapshot the drop lands on, else NoSuchPartitionError and nothing is
        dropped (checked inside the commit, so a concurrent change between the check and the
        drop cannot slip through). A partial spec drops whatever it matches, possibly nothing,
        as Paimon's DROP PARTITION by partial spec does.
        """
        matchers = [self._static_partition_matcher(p) for p in partitions]
        if if_exists:
            return self._replace(lambda part: any(m(part) for m in matchers), [], identifier, None)
        n_keys = len(self.store.partition_keys)

        def all_present(live: Sequence[ManifestEntry]) -> None:
            present = {e.partition for e in live}
            missing = [
                spec for spec, m in zip(partitions, matchers, strict=True)
                if len(spec) == n_keys and not any(m(p) for p in present)
            ]
            if missing:
                raise NoSuchPartitionError(
                    f"partition(s) {', '.join(str(dict(m)) for m in missing)} not found in "
                    f"{self.store.paths.root}; "
                    "nothing was dropped"
                )

        return self._replace(
            lambda part: any(m(part) for m in matchers), [], identifier, None, check_live=all_present
        )

    def truncate(self, identifier: int = BATCH_COMMIT_IDENTIFIER) -> CommitResult:
        return self._replace(lambda _p: True, [], identifier, None)

    def compact_manifests(self, identifier: int = BATCH_COMMIT_IDENTIFIER) -> int:
        """Publish an empty COMPACT snapshot whose only change is the base manifest list merged into
        few manifests of live files (Paimon's ``FileStoreCommit.compactManifest``); returns its id."""
        saved, self.merge_min_count = self.merge_min_count, 1  # always merge, whatever the option says
        try:
            sid, _ = self._publish(CommitKind.COMPACT, identifier, lambda _latest: [], [], None, None)
        finally:
            self.merge_min_count = saved
        return sid

    def delete_files(
        self, messages: Sequence[CommitMessage], identifier: int = BATCH_COMMIT_IDENTIFIER
    ) -> CommitResult:
        """Replace specific files: ``compact_before`` are deleted, ``new_files`` added (row-level
        DELETE/UPDATE)."""
        entries = _entries(FileKind.DELETE, messages, lambda m: m.compact_before) + _entries(
            FileKind.ADD, messages, lambda m: m.new_files
        )
        if not entries:
            return CommitResult(())
        try:
            sid, _ = self._publish(CommitKind.OVERWRITE, identifier, lambda _l: entries, [], None, None)
        except CommitStateUnknownError:
            raise
        except BaseException:
            for m in messages:
                delete_data_files(self.store, m.partition, m.bucket, m.new_files)
            raise
        return CommitResult((sid,), sum(f.row_count for m in messages for f in m.new_files))

    def _already_published(self, identifier: int, messages: Sequence[CommitMessage]) -> bool:
        """A retry of a commit this user already published (streaming identifiers only): drop its copies."""
        if identifier == BATCH_COMMIT_IDENTIFIER:
            return False
        done = self.latest_committed_identifier()
        if done is None or done < identifier:
            return False
        delete_uncommitted(self.store, messages)
        return True

    def latest_committed_identifier(self) -> int | None:
        """The identifier of this commit user's newest snapshot, searching back from the latest."""
        snap = self.find_own_snapshot()
        return None if snap is None else snap.commit_identifier

    def find_own_snapshot(
        self, identifier: int | None = None, not_before_millis: int | None = None
    ) -> Snapshot | None:
        """This commit user's newest snapshot (with ``identifier``, if given), searching back from the latest.

        ``not_before_millis`` stops the search at snapshots committed before that time, so a
        lookup for a recent commit does not read the whole history.
        """
        snapshots = self.store.snapshots
        latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
        if latest is None or earliest is None:
            return None
        for sid in range(latest, earliest - 1, -1):
            try:
                snap = snapshots.get(sid)
            except NoSuchSnapshotError:
                continue
            if not_before_millis is not None and snap.time_millis < not_before_millis:
                return None
            if snap.commit_user == self.commit_user and (
                identifier is None or snap.commit_identifier == identifier
            ):
                return snap
        return None

    # -- helpers ------------------------------------------------------------------------------
    def _static_partition_matcher(self, spec: Mapping[str, object]) -> Callable[[bytes], bool]:
        keys = self.store.partition_keys
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise InvalidArgumentError(
                f"{unknown} "
                f"{'is not a partition column' if len(unknown) == 1 else 'are not partition columns'}; "
                f"partition columns: {list(keys)}"
            )
        if not spec:
            return lambda _p: True
        types = self.store.partition_types
        wanted = {keys.index(k): v for k, v in spec.items()}
        cache: dict[bytes, bool] = {}

        def match(partition: bytes) -> bool:
            hit = cache.get(partition)
            if hit is None:
                values = deserialize_row(partition, types)
                hit = all(_same_value(values[i], v) for i, v in wanted.items())
                cache[partition] = hit
            return hit

        return match

    def _replace(
        self,
        select: Callable[[bytes], bool],
        adds: list[ManifestEntry],
        identifier: int,
        properties: Mapping[str, str] | None,
        base_snapshot_id: int | None = None,
        index_adds: Sequence[IndexManifestEntry] = (),
        check_live: Callable[[Sequence[ManifestEntry]], None] | None = None,
    ) -> CommitResult:
        snapshots = self.store.snapshots
        start = snapshots.latest() if base_snapshot_id is None else snapshots.get(base_snapshot_id)
        if check_live is not None:
            check_live(self.store.live_entries(start, select))
        if not adds and not self.store.live_entries(start, select):
            return CommitResult(())

        def entries_for(latest: Snapshot | None) -> list[ManifestEntry]:
            check_partitions_unchanged(self.store, start, latest, select)
            # Delete what is live now (a compaction since `start` moved or merged files, not rows).
            live = self.store.live_entries(latest, select)
            if check_live is not None:
                check_live(live)
            deletes = [
                ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in live
            ]
            return deletes + adds

        # Index files of the replaced partitions go with their data (Java: OverwriteChangesProvider).
        sid, _ = self._publish(CommitKind.OVERWRITE, identifier, entries_for, [], None, properties,
                               index_changes=lambda: (list(index_adds), select))
        return CommitResult((sid,), sum(e.file.row_count for e in adds))

    def _replace_files(
        self,
        names: Sequence[str],
        adds: list[ManifestEntry],
        identifier: int,
        properties: Mapping[str, str] | None,
        base_snapshot_id: int | None,
    ) -> CommitResult:
        """Replace exactly the live data files ``names`` of the base snapshot with ``adds``, in one
        OVERWRITE snapshot (a row-level rewrite of an append table). Each must still be live, by
        full identity, in the snapshot the commit lands on (``_validate``): a concurrent rewrite,
        DELETE or compaction of one of them is a conflict; other commits, even to the same
        partitions, are not (Paimon's rule for its copy-on-write row-level commands)."""
        snapshots = self.store.snapshots
        start = snapshots.latest() if base_snapshot_id is None else snapshots.get(base_snapshot_id)
        wanted = set(names)
        doomed = [e for e in self.store.live_entries(start) if e.file.file_name in wanted]
        missing = wanted - {e.file.file_name for e in doomed}
        if missing:
            raise CommitConflictError(
                f"data file {sorted(missing)[0]} of {self.store.paths.root} is not live in snapshot "
                f"{start.id if start else 0}; nothing was committed — run the statement again")
        entries = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                   for e in doomed] + adds
        if not entries:
            return CommitResult(())
        sid, _ = self._publish(CommitKind.OVERWRITE, identifier, lambda _l: entries, [], None, properties)
        return CommitResult((sid,), sum(e.file.row_count for e in adds))

    def _already_committed(
        self, after_id: int, latest: Snapshot | None, identifier: int, kind: CommitKind
    ) -> int | None:
        if latest is None:
            return None
        for snap in self.store.snapshots.iter_range(after_id, latest.id):
            if (
                snap.commit_user == self.commit_user
                and snap.commit_identifier == identifier
                and snap.commit_kind is kind
            ):
                return snap.id
        return None

    def _base_manifests(
        self, latest: Snapshot | None, schema_id: int
    ) -> tuple[list[ManifestFileMeta], list[str]]:
        """The new snapshot's base manifests, and the names of those written for it (merges)."""
        if latest is None:
            return [], []
        metas = self.store.manifests.data_manifests(latest)
        if len(metas) < self.merge_min_count:
            return metas, []
        # compact_manifests (merge_min_count 1) asks for the full merge; a commit merges by tiers.
        merged = merge_manifests(
            self.store.manifests, metas, schema_id, self.store.partition_types,
            target_size=self.manifest_target_size, tiered=self.merge_min_count > 1,
        )
        existing = {m.file_name for m in metas}
        return merged, [m.file_name for m in merged if m.file_name not in existing]

    def _publish(
        self,
        kind: CommitKind,
        identifier: int,
        entries_for: Callable[[Snapshot | None], list[ManifestEntry]],
        changelog: list[ManifestEntry],
        watermark: int | None,
        properties: Mapping[str, str] | None,
        index_changes: IndexChanges | None = None,
        appends_rows: bool = False,
        keeps: Collection[str] = (),
    ) -> tuple[int, list[ManifestEntry] | None]:
        """Publish one snapshot; returns its id and its delta entries (None on a retried, already
        published commit). ``appends_rows``: the entries only add new rows (a write's APPEND), so a
        row-tracking table takes them, each new file given its first row id. ``keeps``: the
        features the caller keeps (``engine.features.check_rewritable``): a data-evolution table's
        row-level changes by row id keep its row-id ranges (``engine.write.data_evolution_update``).

        Every metadata file written for an attempt that does not become the snapshot is deleted;
        on CommitStateUnknownError nothing is deleted.
        """
        store = self.store
        # Every snapshot dyntable publishes (writes, compactions, maintenance) passes here: a table
        # whose newer Paimon features this commit would not keep is refused (engine.features).
        # A data-evolution table's compaction keeps its row ids (checked on the entries below).
        keeps_ranges = (kind is CommitKind.COMPACT and not appends_rows
                        and is_data_evolution(store.schema.options))
        if appends_rows:
            check_appendable(store.schema, store.paths.root, "commit to")
        else:
            check_rewritable(store.schema, store.paths.root, "commit to",
                             keeps=ROW_ID_FEATURES if keeps_ranges else keeps)
        # Row tracking: every commit stamps its files (new ids, sequence numbers), as Paimon's does.
        row_ids = tracks_row_ids(store.schema)
        ms = store.manifests
        deadline = None if self.timeout_ms is None else time.monotonic() + self.timeout_ms / 1000
        latest = store.snapshots.latest()
        last_seen = latest.id if latest else 0
        # reused while entries are unchanged
        delta: tuple[list[ManifestEntry], list[ManifestFileMeta]] | None = None
        changelog_list: tuple[str, int, list[ManifestFileMeta]] | None = None
        attempt = 0
        self._storage_failure: StorageError | None = None
        try:
            while True:
                if attempt > 0:
                    latest = store.snapshots.latest()
                    done = self._already_committed(last_seen, latest, identifier, kind)
                    if done is not None:
                        return done, None
                entries = entries_for(latest)
                if keeps_ranges:
                    check_ranges_kept([e.file for e in entries if e.kind is FileKind.DELETE],
                                      [e.file for e in entries if e.kind is FileKind.ADD], store.paths.root)
                next_row_id = latest.next_row_id if latest else None
                if row_ids:
                    sid = (latest.id if latest else 0) + 1
                    entries, next_row_id = assign_row_ids(entries, next_row_id or 0, sid)
                check_delta_applies(self.store, latest, entries)
                schema_id = max(store.schema.id, latest.schema_id if latest else 0)
                if delta is None or delta[0] != entries:
                    if delta is not None:
                        for stale in delta[1]:
                            ms.delete(stale.file_name)
                        delta = None
                    delta = (entries, ms.write_entries_rolling(entries, schema_id, store.partition_types))
                if changelog and changelog_list is None:
                    cl_metas = ms.write_entries_rolling(changelog, schema_id, store.partition_types)
                    changelog_list = (*ms.write_list(cl_metas), cl_metas)
                attempt_files: list[str] = []
                try:
                    base_metas, merged_names = self._base_manifests(latest, schema_id)
                    attempt_files += merged_names
                    base_name, base_size = ms.write_list(base_metas)
                    attempt_files.append(base_name)
                    delta_name, delta_size = ms.write_list(delta[1])
                    attempt_files.append(delta_name)
                    index_name = latest.index_manifest if latest else None
                    if index_changes is not None:
                        adds, drop = index_changes()
                        index_name, written = next_index_manifest(
                            IndexStore(store.io, store.paths, store.options.manifest_compression),
                            index_name,
                            adds,
                            drop,
                            dvs_by_file_name=not store.has_primary_key and store.options.bucket == -1,
                        )
                        if written is not None:
                            attempt_files.append(written)
                    snapshot = self._snapshot(
                        latest,
                        kind,
                        identifier,
                        schema_id,
                        entries,
                        changelog,
                        watermark,
                        properties,
                        (base_name, base_size),
                        (delta_name, delta_size),
                        changelog_list[:2] if changelog_list else None,
                        index_name,
                        next_row_id,
                    )
                    if attempt == 0:
                        self._check_new_files_exist(entries, changelog)
                    if store.pending_schema is not None:
                        # A merge-schema write: its files name a schema version no one has seen.
                        # Published here, after every check that can refuse the commit and just
                        # before the snapshot, so a failed write leaves no schema behind (only a
                        # crash in between, or a conflict found after losing the race for the
                        # snapshot, can; that version is a valid evolution, as an ALTER makes).
                        store.schemas.publish_pending(store.pending_schema)
                        store.pending_schema = None
                    published = publish_snapshot(store.snapshots, snapshot,
                                                 on_storage_error=self._note_storage_failure)
                except CommitStateUnknownError:
                    raise  # the snapshot may exist and name this attempt's files: delete nothing
                except BaseException:
                    for name in attempt_files:
                        ms.delete(name)
                    raise
                if published:
                    delta = None  # referenced now: keep
                    changelog_list = None
                    # Paimon's commit callback: Iceberg metadata (metadata.iceberg.storage) follows
                    # every snapshot published here; it never fails the commit (engine.iceberg).
                    iceberg_metadata(store, (snapshot.id, entries))
                    return snapshot.id, entries
                # Lost the race: the base list depended on `latest`; drop it and try on the new latest.
                for name in attempt_files:
                    ms.delete(name)
                last_seen = latest.id if latest else 0
                attempt += 1
                if attempt > self.max_retries or (deadline is not None and time.monotonic() > deadline):
                    if self._storage_failure is not None:
                        raise StorageError(
                            f"could not publish a snapshot of {store.paths.root} after {attempt} attempts "
                            f"({self._storage_failure}); nothing was committed — retry the operation"
                        ) from self._storage_failure
                    raise CommitConflictError(
                        f"gave up committing to {store.paths.root} after {attempt} attempts: other writers "
                        "kept "
                        "winning; nothing was committed — retry the operation"
                    )
                wait = min(self.max_wait_ms, self.min_wait_ms * (2 ** min(attempt, 10)))
                time.sleep(random.uniform(self.min_wait_ms, max(self.min_wait_ms, wait)) / 1000)
        except CommitStateUnknownError:
            raise
        except BaseException:
            if delta is not None:
                for stale in delta[1]:
                    ms.delete(stale.file_name)
            if changelog_list is not None:
                ms.delete(changelog_list[0])
                for stale in changelog_list[2]:
                    ms.delete(stale.file_name)
            raise

    def _snapshot(
        self, latest: Snapshot | None, kind: CommitKind, identifier: int, schema_id: int,
        entries: list[ManifestEntry], changelog: list[ManifestEntry], watermark: int | None,
        properties: Mapping[str, str] | None, base: tuple[str, int], delta: tuple[str, int],
        changelog_list: tuple[str, int] | None, index_manifest: str | None = None,
        next_row_id: int | None = None,
    ) -> Snapshot:
        added = sum(e.file.row_count for e in entries if e.kind is FileKind.ADD)
        removed = sum(e.file.row_count for e in entries if e.kind is FileKind.DELETE)
        if latest is not None and latest.watermark is not None:
            watermark = latest.watermark if watermark is None else max(watermark, latest.watermark)
        return Snapshot(
            id=(latest.id if latest else 0) + 1,
            schema_id=schema_id,
            base_manifest_list=base[0],
            base_manifest_list_size=base[1],
            delta_manifest_list=delta[0],
            delta_manifest_list_size=delta[1],
            changelog_manifest_list=changelog_list[0] if changelog_list else None,
            changelog_manifest_list_size=changelog_list[1] if changelog_list else None,
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=kind,
            time_millis=next_time_millis(
                latest, int(time.time() * 1000)
            ),  # this module's clock (tests fake it)
            total_record_count=(latest.total_record_count if latest else 0) + added - removed,
            delta_record_count=added - removed,
            changelog_record_count=sum(e.file.row_count for e in changelog) if changelog else None,
            watermark=watermark,
            properties=dict(properties) if properties else None,
            next_row_id=next_row_id,
            writer_version=WRITER_VERSION,
            uuid=new_snapshot_uuid(),
        )

    def _note_storage_failure(self, error: StorageError) -> None:
        self._storage_failure = error

    def _check_new_files_exist(
        self, entries: Sequence[ManifestEntry], changelog: Sequence[ManifestEntry]
    ) -> None:
        """Every file this snapshot ADDs must exist: orphan cleanup (``force``, or a cutoff newer than
        this write) may have deleted files a slow commit wrote, and a snapshot naming them is broken.

        One existence check per added file, once per commit (not per retry): a stat on local disk.
        """
        store = self.store
        part_dirs: dict[bytes, str] = {}
        for e in (*entries, *changelog):
            if e.kind is not FileKind.ADD:
                continue
            f = e.file
            if f.external_path:
                path = store.paths.external_file(f.external_path)
            else:
                part_dir = part_dirs.get(e.partition)
                if part_dir is None:
                    part_dir = part_dirs[e.partition] = store.partition_dir(
                        deserialize_row(e.partition, store.partition_types))
                path = store.paths.data_file(part_dir, e.bucket, f.file_name)
            if not store.io.exists(path):
                raise CommitConflictError(
                    f"data file {path}, written for this commit, is gone (deleted by orphan cleanup or by "
                    "hand "
                    "while the write ran); nothing was committed — run the write again"
                )


def _same_value(stored: object, wanted: object) -> bool:
    """Compare a decoded partition value with a user-given one (strings from SQL are coerced)."""
    if stored == wanted:
        return True
    if stored is None or wanted is None:
        return False
    return str(stored) == str(wanted)
