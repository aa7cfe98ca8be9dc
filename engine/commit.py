"""The one commit pipeline: every snapshot of every table is published here.

```
 commit messages (new files, changelog files, compaction before/after)
        │
        ▼
 ┌─ attempt ──────────────────────────────────────────────────────────────────────┐
 │ latest = LATEST snapshot (verified hint)                                        │
 │ already committed? (same commit user + identifier + kind since the last try)   │──► done
 │ conflict check: every file this commit deletes is still live in `latest`;     │──► CommitConflictError
 │   an overwrite refuses if its partitions changed since it started             │
 │ delta manifest(s)  (written once, reused by retries)                           │
 │ base manifest list = latest.base + latest.delta  (merged when there are many)  │
 │ changelog manifest list (if any)                                               │
 │ create snapshot-(latest+1) IF ABSENT ──── lost the race ──► back off, again    │
 └────────────────────────────────────────────────────────────────────────────────┘
        │ won
        ▼
 LATEST hint (best effort)
```
A logical commit that carries both new files and compaction results publishes two snapshots
with the same identifier, APPEND then COMPACT, as Paimon does. Overwrites (INSERT OVERWRITE,
DROP PARTITION, TRUNCATE, DELETE on append tables) publish one OVERWRITE snapshot.
Expiration never runs inside a commit.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    NoSuchSnapshotError,
    StorageError,
)
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, live_files
from engine.meta.snapshot import CommitKind, Snapshot
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore

WRITER_VERSION = "dyntable-0.1"
CHANGE_TRACKING_PROPERTY = "dyntable.change-tracking"


@dataclass(frozen=True, slots=True)
class CommitMessage:
    """What one writer task produced for one (partition, bucket); picklable."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (
            self.new_files or self.changelog_files or self.compact_before or self.compact_after or self.compact_changelog
        )


def delete_uncommitted(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Delete the files that uncommitted messages wrote (nothing refers to them).

    A compaction "upgrade" moves an existing file to another level without rewriting it; such a
    file is live and is kept.
    """
    for m in messages:
        part_dir = store.partition_dir(deserialize_row(m.partition, store.partition_types))
        upgraded = {f.file_name for f in m.compact_before}
        written = [*m.new_files, *m.changelog_files, *m.compact_changelog,
                   *(f for f in m.compact_after if f.file_name not in upgraded)]
        for f in written:
            store.io.delete(store.paths.data_file(part_dir, m.bucket, f.file_name))


@dataclass(frozen=True, slots=True)
class OverwriteSpec:
    """Which live files an overwrite replaces.

    ``static``: partition column → value; every partition matching all of them is replaced
    (empty mapping = the whole table). ``dynamic``: only partitions that receive new rows are
    replaced (Spark's dynamic partition overwrite). ``partitions``: each of the listed full
    partition specs is replaced, even if it receives no rows (DELETE/UPDATE/MERGE rewrites).
    """

    static: Mapping[str, object] = field(default_factory=dict)
    dynamic: bool = False
    partitions: tuple[Mapping[str, object], ...] | None = None  # exactly these partitions (row-level rewrites)


@dataclass(frozen=True, slots=True)
class CommitResult:
    snapshot_ids: tuple[int, ...]

    @property
    def last_snapshot_id(self) -> int | None:
        return self.snapshot_ids[-1] if self.snapshot_ids else None


def _entries(kind: FileKind, messages: Sequence[CommitMessage], pick: Callable[[CommitMessage], Sequence[DataFileMeta]]) -> list[ManifestEntry]:
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
        """
        if identifier != BATCH_COMMIT_IDENTIFIER:
            done = self.latest_committed_identifier()
            if done is not None and done >= identifier:
                return CommitResult(())
        messages = [m for m in messages if not m.is_empty]
        ids: list[int] = []
        adds = _entries(FileKind.ADD, messages, lambda m: m.new_files)
        changelog = _entries(FileKind.ADD, messages, lambda m: m.changelog_files)
        if adds or changelog:
            kind = CommitKind.APPEND if change_tracking else CommitKind.OVERWRITE
            props = dict(properties or {})
            if not change_tracking:
                props[CHANGE_TRACKING_PROPERTY] = "false"
            sid = self._publish(kind, identifier, lambda _l: adds, changelog, watermark, props or None)
            if sid is not None:
                ids.append(sid)
        compact = _entries(FileKind.DELETE, messages, lambda m: m.compact_before) + _entries(
            FileKind.ADD, messages, lambda m: m.compact_after
        )
        if compact:
            compact_changelog = _entries(FileKind.ADD, messages, lambda m: m.compact_changelog)
            sid = self._publish(
                CommitKind.COMPACT, identifier, lambda _l: compact, compact_changelog, watermark, properties,
                check_deletes=True,
            )
            if sid is not None:
                ids.append(sid)
        return CommitResult(tuple(ids))

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

        The replaced files are those live in ``base_snapshot_id`` (default: the latest snapshot
        when the commit starts); a change to them before publishing is a conflict.
        """
        messages = [m for m in messages if not m.is_empty]
        adds = _entries(FileKind.ADD, messages, lambda m: m.new_files)
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
        return self._replace(select, adds, identifier, properties, base_snapshot_id)

    def drop_partitions(self, partitions: Sequence[Mapping[str, object]], identifier: int = BATCH_COMMIT_IDENTIFIER) -> CommitResult:
        """Mark-delete every file of the given partitions (one OVERWRITE snapshot)."""
        matchers = [self._static_partition_matcher(p) for p in partitions]
        return self._replace(lambda part: any(m(part) for m in matchers), [], identifier, None)

    def truncate(self, identifier: int = BATCH_COMMIT_IDENTIFIER) -> CommitResult:
        return self._replace(lambda _p: True, [], identifier, None)

    def delete_files(self, messages: Sequence[CommitMessage], identifier: int = BATCH_COMMIT_IDENTIFIER) -> CommitResult:
        """Replace specific files: ``compact_before`` are deleted, ``new_files`` added (row-level DELETE/UPDATE)."""
        entries = _entries(FileKind.DELETE, messages, lambda m: m.compact_before) + _entries(
            FileKind.ADD, messages, lambda m: m.new_files
        )
        if not entries:
            return CommitResult(())
        sid = self._publish(CommitKind.OVERWRITE, identifier, lambda _l: entries, [], None, None, check_deletes=True)
        return CommitResult(() if sid is None else (sid,))

    def latest_committed_identifier(self) -> int | None:
        """The identifier of this commit user's newest snapshot, searching back from the latest."""
        snapshots = self.store.snapshots
        latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
        if latest is None or earliest is None:
            return None
        for sid in range(latest, earliest - 1, -1):
            try:
                snap = snapshots.get(sid)
            except NoSuchSnapshotError:
                continue
            if snap.commit_user == self.commit_user:
                return snap.commit_identifier
        return None

    # -- helpers ------------------------------------------------------------------------------
    def _static_partition_matcher(self, spec: Mapping[str, object]) -> Callable[[bytes], bool]:
        keys = self.store.partition_keys
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise InvalidArgumentError(
                f"{unknown} {'is not a partition column' if len(unknown) == 1 else 'are not partition columns'}; "
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
    ) -> CommitResult:
        snapshots = self.store.snapshots
        start = snapshots.latest() if base_snapshot_id is None else snapshots.get(base_snapshot_id)
        start_live = self.store.live_entries(start, select)
        start_names = {e.file.file_name for e in start_live}

        def entries_for(latest: Snapshot | None) -> list[ManifestEntry]:
            if (latest.id if latest else None) != (start.id if start else None):
                now_live = self.store.live_entries(latest, select)
                if {e.file.file_name for e in now_live} != start_names:
                    raise CommitConflictError(
                        "another commit changed the partitions being overwritten while this overwrite ran; "
                        "no data was written — run the statement again"
                    )
            deletes = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in start_live]
            return deletes + adds

        if not start_live and not adds:
            return CommitResult(())
        sid = self._publish(CommitKind.OVERWRITE, identifier, entries_for, [], None, properties)
        return CommitResult(() if sid is None else (sid,))

    def _check_deletes(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        deletes = [e for e in entries if e.kind is FileKind.DELETE]
        if not deletes:
            return
        parts = {e.partition for e in deletes}
        live = {e.identifier for e in self.store.live_entries(latest, lambda p: p in parts)}
        missing = [e.file.file_name for e in deletes if e.identifier not in live]
        if missing:
            raise CommitConflictError(
                f"file deletion conflict: {len(missing)} file(s) this commit replaces were already removed by "
                f"another commit (e.g. {missing[0]}); refresh and retry"
            )

    def _already_committed(self, after_id: int, latest: Snapshot | None, identifier: int, kind: CommitKind) -> int | None:
        if latest is None:
            return None
        for snap in self.store.snapshots.iter_range(after_id, latest.id):
            if snap.commit_user == self.commit_user and snap.commit_identifier == identifier and snap.commit_kind is kind:
                return snap.id
        return None

    def _base_manifests(self, latest: Snapshot | None, schema_id: int) -> list[ManifestFileMeta]:
        if latest is None:
            return []
        metas = self.store.manifests.data_manifests(latest)
        if len(metas) < self.merge_min_count:
            return metas
        return self._merge_manifests(metas, schema_id)

    def _merge_manifests(self, metas: list[ManifestFileMeta], schema_id: int) -> list[ManifestFileMeta]:
        """Full manifest merge: keep big add-only manifests whose files are all live, rewrite the rest.

        The result holds only ADD entries, so the order of manifests no longer matters and the
        planning cost follows the number of live files instead of the length of history.
        """
        ms = self.store.manifests
        all_entries: list[ManifestEntry] = []
        per_manifest: list[list[ManifestEntry]] = []
        for meta in metas:
            entries = ms.read_entries(meta.file_name)
            per_manifest.append(entries)
            all_entries.extend(entries)
        live = live_files(all_entries)
        live_ids = {e.identifier for e in live}
        kept: list[ManifestFileMeta] = []
        kept_ids: set[tuple[object, ...]] = set()
        for meta, entries in zip(metas, per_manifest, strict=True):
            if (
                meta.file_size >= self.manifest_target_size // 2
                and meta.num_deleted_files == 0
                and all(e.identifier in live_ids for e in entries)
            ):
                kept.append(meta)
                kept_ids.update(e.identifier for e in entries)
        rest = [e for e in live if e.identifier not in kept_ids]
        return kept + ms.write_entries_rolling(rest, schema_id, self.store.partition_types)

    def _publish(
        self,
        kind: CommitKind,
        identifier: int,
        entries_for: Callable[[Snapshot | None], list[ManifestEntry]],
        changelog: list[ManifestEntry],
        watermark: int | None,
        properties: Mapping[str, str] | None,
        *,
        check_deletes: bool = False,
    ) -> int | None:
        """Publish one snapshot; returns its id (or the id it already had, on a retried commit)."""
        store = self.store
        deadline = None if self.timeout_ms is None else time.monotonic() + self.timeout_ms / 1000
        last_seen = store.snapshots.latest_id() or 0
        written_delta: tuple[list[ManifestEntry], list[ManifestFileMeta]] | None = None
        changelog_list: tuple[str, int] | None = None
        attempt = 0
        while True:
            latest = store.snapshots.latest()
            if attempt > 0:
                done = self._already_committed(last_seen, latest, identifier, kind)
                if done is not None:
                    return done
            entries = entries_for(latest)
            if check_deletes:
                self._check_deletes(latest, entries)
            schema_id = max(store.schema.id, latest.schema_id if latest else 0)
            if written_delta is None or written_delta[0] is not entries:
                if written_delta is not None:
                    for stale in written_delta[1]:
                        store.manifests.delete(stale.file_name)
                delta_metas = store.manifests.write_entries_rolling(entries, schema_id, store.partition_types)
                written_delta = (entries, delta_metas)
            delta_metas = written_delta[1]
            if changelog and changelog_list is None:
                cl_metas = store.manifests.write_entries_rolling(changelog, schema_id, store.partition_types)
                changelog_list = store.manifests.write_list(cl_metas)
            base_metas = self._base_manifests(latest, schema_id)
            base_name, base_size = store.manifests.write_list(base_metas)
            delta_name, delta_size = store.manifests.write_list(delta_metas)
            added = sum(e.file.row_count for e in entries if e.kind is FileKind.ADD)
            removed = sum(e.file.row_count for e in entries if e.kind is FileKind.DELETE)
            new_id = (latest.id if latest else 0) + 1
            if latest is not None and latest.watermark is not None:
                watermark = latest.watermark if watermark is None else max(watermark, latest.watermark)
            snapshot = Snapshot(
                id=new_id,
                schema_id=schema_id,
                base_manifest_list=base_name,
                base_manifest_list_size=base_size,
                delta_manifest_list=delta_name,
                delta_manifest_list_size=delta_size,
                changelog_manifest_list=changelog_list[0] if changelog_list else None,
                changelog_manifest_list_size=changelog_list[1] if changelog_list else None,
                commit_user=self.commit_user,
                commit_identifier=identifier,
                commit_kind=kind,
                time_millis=int(time.time() * 1000),
                total_record_count=(latest.total_record_count if latest else 0) + added - removed,
                delta_record_count=added - removed,
                changelog_record_count=sum(e.file.row_count for e in changelog) if changelog else None,
                watermark=watermark,
                properties=dict(properties) if properties else None,
                writer_version=WRITER_VERSION,
            )
            try:
                published = store.snapshots.try_publish(snapshot)
            except StorageError as e:
                # The create may or may not have happened: look before deciding.
                if self._is_ours(new_id):
                    published = True
                else:
                    attempt += 1
                    if attempt > self.max_retries:
                        raise CommitStateUnknownError(
                            f"could not confirm snapshot {new_id} of {store.paths.root}: {e}"
                        ) from e
                    published = False
            if published:
                store.snapshots.write_latest_hint(new_id)
                return new_id
            # Lost the race: the base list depended on `latest`; drop it and try on the new latest.
            store.manifests.delete(base_name)
            store.manifests.delete(delta_name)
            last_seen = latest.id if latest else 0
            attempt += 1
            if attempt > self.max_retries or (deadline is not None and time.monotonic() > deadline):
                raise CommitConflictError(
                    f"gave up committing to {store.paths.root} after {attempt} attempts: other writers kept winning; "
                    "retry the operation"
                )
            wait = min(self.max_wait_ms, self.min_wait_ms * (2 ** min(attempt, 10)))
            time.sleep(random.uniform(self.min_wait_ms, max(self.min_wait_ms, wait)) / 1000)

    def _is_ours(self, snapshot_id: int) -> bool:
        try:
            snap = self.store.snapshots.get(snapshot_id)
        except Exception:  # noqa: BLE001 - any failure means "not confirmed"
            return False
        return snap.commit_user == self.commit_user


def _same_value(stored: object, wanted: object) -> bool:
    """Compare a decoded partition value with a user-given one (strings from SQL are coerced)."""
    if stored == wanted:
        return True
    if stored is None or wanted is None:
        return False
    return str(stored) == str(wanted)
