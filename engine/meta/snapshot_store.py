"""Finding, reading and publishing snapshots of one branch.

Invariants: snapshot ids start at 1 and are continuous; a snapshot file is immutable and is
published only by an atomic create-if-absent (never overwritten); the EARLIEST/LATEST hint
files are advisory and verified before they are trusted (Paimon's ``HintFileUtils`` rules), except
that a LATEST hint ahead of every snapshot file is corruption (see :meth:`SnapshotStore.latest_id`);
so whatever removes the newest snapshots (a rollback) must lower LATEST before deleting them.
Decoded snapshots are cached by id, because they never change.
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.errors import CorruptMetadataError, NoSuchSnapshotError
from engine.io import FileIO
from engine.meta.paths import TablePaths, parse_versioned_id
from engine.meta.snapshot import Snapshot

_CACHE_LIMIT = 4096


class SnapshotStore:
    """Snapshots of one table branch."""

    def __init__(self, io: FileIO, paths: TablePaths) -> None:
        self.io = io
        self.paths = paths
        self._cache: dict[int, Snapshot] = {}

    # -- lookup -------------------------------------------------------------------------------
    def _read_hint(self, path: str) -> int | None:
        try:
            raw = self.io.read_bytes(path).strip()
        except FileNotFoundError:
            return None
        # An unreadable hint is only a lost shortcut: the listing answers instead.
        return int(raw) if raw.isdigit() else None

    def list_ids(self) -> list[int]:
        """All snapshot ids present, by listing (ascending)."""
        ids = []
        for status in self.io.list_dir(self.paths.snapshot_dir):
            sid = parse_versioned_id(status.path.rsplit("/", 1)[-1], "snapshot-")
            if sid is not None:
                ids.append(sid)
        return sorted(ids)

    def exists(self, snapshot_id: int) -> bool:
        return snapshot_id in self._cache or self.io.exists(self.paths.snapshot_file(snapshot_id))

    def latest_id(self) -> int | None:
        """The newest snapshot id, or None for an empty table.

        LATEST may lag (a writer published and died before moving the hint): the listing wins.
        It may never lead: nothing deletes the newest snapshot without lowering LATEST first,
        so a hint naming a snapshot above every listed one means snapshot files were lost, and
        reading the older snapshot (or reusing the lost id for the next commit) would hide that.
        """
        hint = self._read_hint(self.paths.latest_hint)
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        if hint is not None and (not ids or ids[-1] < hint):
            newest = f"the newest present is snapshot {ids[-1]}" if ids else "no snapshot file is present"
            raise CorruptMetadataError(
                f"{self.paths.latest_hint} names snapshot {hint}, but {self.paths.snapshot_file(hint)} is "
                "missing "
                f"and {newest}: snapshot files were deleted outside dyntable; restore them (or, accepting "
                "the "
                f"loss, set LATEST to the newest present snapshot) before using the table"
            )
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        """The oldest snapshot id still present, or None for an empty table."""
        hint = self._read_hint(self.paths.earliest_hint)
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def get(self, snapshot_id: int) -> Snapshot:
        """The snapshot with this id; NoSuchSnapshotError if it does not exist (or expired)."""
        cached = self._cache.get(snapshot_id)
        if cached is not None:
            return cached
        path = self.paths.snapshot_file(snapshot_id)
        try:
            # Bytes, not text: the decoder reports bad UTF-8 as corruption of this file.
            text = self.io.read_bytes(path)
        except FileNotFoundError:
            raise NoSuchSnapshotError(
                f"snapshot {snapshot_id} does not exist in {self.paths.snapshot_dir} (never written, or "
                "expired)"
            ) from None
        try:
            snapshot = Snapshot.from_json(text)
        except CorruptMetadataError as e:
            raise CorruptMetadataError(f"snapshot file {path} is corrupt: {e}") from e
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(f"snapshot file {path} holds snapshot id {snapshot.id}")
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.pop(next(iter(self._cache)))
        self._cache[snapshot_id] = snapshot
        return snapshot

    def read_fresh(self, snapshot_id: int) -> Snapshot:
        """Like :meth:`get`, but from storage even if cached (to confirm what a publish left)."""
        self._cache.pop(snapshot_id, None)
        return self.get(snapshot_id)

    def latest(self) -> Snapshot | None:
        sid = self.latest_id()
        return None if sid is None else self.get(sid)

    def earliest(self) -> Snapshot | None:
        sid = self.earliest_id()
        return None if sid is None else self.get(sid)

    def iter_range(self, start_exclusive: int, end_inclusive: int) -> Iterator[Snapshot]:
        """Snapshots with start < id <= end that still exist, ascending."""
        for sid in range(start_exclusive + 1, end_inclusive + 1):
            try:
                yield self.get(sid)
            except NoSuchSnapshotError:
                continue

    def all(self) -> list[Snapshot]:
        return [self.get(sid) for sid in self.list_ids()]

    def at_or_before(self, time_millis: int) -> Snapshot | None:
        """The newest snapshot committed at or before ``time_millis`` (binary search).

        Ids are time-ordered: every publisher sets ``max(now, previous + 1)``
        (``engine.meta.publish.next_time_millis``).
        """
        earliest, latest = self.earliest_id(), self.latest_id()
        if earliest is None or latest is None:
            return None
        lo, hi, found = earliest, latest, None
        while lo <= hi:
            mid = (lo + hi) // 2
            try:
                snap = self.get(mid)
            except NoSuchSnapshotError:
                # A gap (concurrent expiration): fall back to a linear walk from the top.
                for sid in range(latest, earliest - 1, -1):
                    try:
                        s = self.get(sid)
                    except NoSuchSnapshotError:
                        continue
                    if s.time_millis <= time_millis:
                        return s
                return None
            if snap.time_millis <= time_millis:
                found, lo = snap, mid + 1
            else:
                hi = mid - 1
        return found

    # -- publishing ---------------------------------------------------------------------------
    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>``; False if another writer created it first.

        The raw step of :func:`engine.meta.publish.publish_snapshot`, which every publisher calls
        (it adds the read-back of failed creates, the branch check and the LATEST hint).
        """
        created = self.io.try_create(self.paths.snapshot_file(snapshot.id), snapshot.to_json().encode())
        if created:
            self._cache[snapshot.id] = snapshot
        return created

    def write_latest_hint(self, snapshot_id: int) -> None:
        self._write_hint(self.paths.latest_hint, snapshot_id)

    def write_earliest_hint(self, snapshot_id: int) -> None:
        self._write_hint(self.paths.earliest_hint, snapshot_id)

    def _write_hint(self, path: str, snapshot_id: int) -> None:
        # Hints are advisory: readers verify them, so a failed write only costs a listing later.
        try:
            self.io.write_text(path, str(snapshot_id))
        except OSError:
            pass

    def forget(self, snapshot_id: int) -> None:
        """Drop a cached snapshot (after it was expired or rolled back)."""
        self._cache.pop(snapshot_id, None)
