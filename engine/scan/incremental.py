"""Incremental scans: the changes committed between two snapshots, with a ``rowkind`` per row.

Which files carry a snapshot's changes depends on the table:

* append tables — the files an APPEND snapshot added, every row ``+I``;
* primary-key tables with ``changelog-producer = none`` — the level-0 files an APPEND snapshot
  added, each row with the kind it was written with (the "raw delta");
* ``input`` / ``lookup`` / ``full-compaction`` — the snapshot's changelog files (for
  ``full-compaction`` they arrive with COMPACT snapshots).

COMPACT snapshots carry no new changes (except full-compaction changelog) and are skipped, and
so are OVERWRITE snapshots (a batch rewrite — e.g. ``change-tracking = false`` writes — produces
no changes for streaming readers; Paimon's ``streaming-read-overwrite = false``).

Batch incremental reads resolve as Paimon 2.0's (:func:`resolve_incremental`; start exclusive,
end inclusive; a start below the retention mark — ``0`` included when a mark exists — is refused):

* ``incremental-between = 'start,end'``: two snapshot ids pick their files by
  ``incremental-between-scan-mode`` — ``delta`` / ``changelog`` read the files above of every
  snapshot in the range, ``auto`` picks by the changelog producer, ``diff`` compares the two end
  states row by row (a primary-key table's streamed bucket by bucket in key order:
  :func:`diff_key_ordered`). Two tags are always diffed (tags usually outlive the snapshots
  between them), unless ``incremental-between-tag-to-snapshot`` reads the snapshots between them.
  A tag and an id cannot be mixed; equal ends read nothing.
* ``incremental-between-timestamp = 't1,t2'`` (epoch millis or timestamps in the local zone): the
  snapshots committed in (t1, t2], by the same scan modes; a range outside the table's reads nothing.
* ``incremental-to-auto-tag = 'tag'``: the diff from the previous automatic tag to that one
  (nothing when either is missing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.count_layout import expand_changes, is_count_layout, logical_schema
from engine.errors import CorruptMetadataError, InvalidArgumentError, NoSuchSnapshotError, NoSuchTagError
from engine.features import check_file_readable, check_incremental_readable, skipped_by_readers
from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, data_file_path, read_data_file
from engine.history.expiry import explain_missing
from engine.history.retention_mark import check_visible
from engine.lsm.changelog import kinds_to_rowkind
from engine.merge.functions import COUNT_COLUMN
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, FileKind
from engine.meta.snapshot import CommitKind, Snapshot
from engine.scan.predicate import Predicate, filter_table
from engine.store import FileStore

ROWKIND = "rowkind"


@dataclass(frozen=True, slots=True)
class ChangeSplit:
    """Changed files of one (snapshot, partition, bucket), read in order."""

    snapshot_id: int
    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    files: tuple[DataFileMeta, ...]
    key_value: bool  # files have _SEQUENCE_NUMBER/_VALUE_KIND columns

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


def produces_changes(store: FileStore, snapshot: Snapshot) -> bool:
    """Whether a streaming reader reads anything from this snapshot."""
    producer = store.options.changelog_producer if store.has_primary_key else "none"
    if snapshot.commit_kind is CommitKind.OVERWRITE:
        return False
    if snapshot.commit_kind is CommitKind.COMPACT:
        return producer == "full-compaction" and snapshot.changelog_manifest_list is not None
    return snapshot.commit_kind is CommitKind.APPEND


def change_splits(store: FileStore, snapshot: Snapshot) -> list[ChangeSplit]:
    """The splits holding the changes of one snapshot (empty if it produces none).

    Append tables with deletion vectors: as in Paimon's streaming reads, the files a snapshot
    added are its changes, read whole (a DV marks rows of files that were streamed already); a
    DELETE that only wrote DVs produces no change, and an UPDATE/MERGE produces its new rows.

    """
    check_incremental_readable(store.schema, store.paths.root)
    if not produces_changes(store, snapshot):
        return []
    ms = store.manifests
    producer = store.options.changelog_producer if store.has_primary_key else "none"
    if producer == "none":
        names = [m.file_name for m in ms.read_list(snapshot.delta_manifest_list)]
    else:
        if snapshot.changelog_manifest_list is None:
            return []
        names = [m.file_name for m in ms.read_list(snapshot.changelog_manifest_list)]
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for name in names:
        for e in ms.read_entries(name):
            if e.kind is FileKind.ADD and not skipped_by_readers(e.bucket):
                check_file_readable(e.file, store.paths.root)
                groups[(e.partition, e.bucket)].append(e.file)
    splits = []
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        values = deserialize_row(partition, store.partition_types)
        files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
        splits.append(
            ChangeSplit(snapshot.id, partition, values, bucket, tuple(files), store.has_primary_key)
        )
    return splits


def incremental_splits(store: FileStore, start_exclusive: int, end_inclusive: int) -> list[ChangeSplit]:
    """Change splits of every snapshot in (start, end], in commit order."""
    out: list[ChangeSplit] = []
    for snap in store.snapshots.iter_range(start_exclusive, end_inclusive):
        out.extend(change_splits(store, snap))
    return out


class ChangeReader:
    """Reads change splits as Arrow tables: ``rowkind`` first, then the requested columns."""

    def __init__(
        self, store: FileStore, columns: Sequence[str] | None = None, filter: Predicate | None = None
    ) -> None:
        check_incremental_readable(store.schema, store.paths.root)
        self.store = store
        self.count_layout = is_count_layout(store.schema)
        visible = logical_schema(store.schema).field_names if self.count_layout else store.schema.field_names
        self.columns = list(columns) if columns is not None else list(visible)
        self.filter = filter
        extra = sorted(filter.columns() - set(self.columns)) if filter is not None else []
        needed = self.columns + extra
        self.expanded = list(needed)
        if self.count_layout:
            needed = needed + [COUNT_COLUMN]
        self.fields = [store.schema.field(c) for c in needed]
        arrow = store.schema.arrow_schema()
        self.output_schema = pa.schema(
            [pa.field(ROWKIND, pa.string(), nullable=False)] + [arrow.field(c) for c in self.columns]
        )

    def read(self, split: ChangeSplit) -> Iterator[pa.Table]:
        """The split's changes; SnapshotExpiredDuringReadError if its snapshot expired meanwhile."""
        try:
            yield from self._read(split)
        except CorruptMetadataError as e:
            raise explain_missing(self.store, split.snapshot_id, e) from e

    def _read(self, split: ChangeSplit) -> Iterator[pa.Table]:
        store = self.store
        part_dir = store.partition_dir(split.partition_values)
        for f in split.files:
            path = data_file_path(store, part_dir, split.bucket, f)
            if split.key_value and self.count_layout:  # +1 / -1 counts become +I / -D rows
                t = read_data_file(store, path, f, self.fields)
                t = expand_changes(t, self.expanded, ROWKIND)
                kinds = t.column(ROWKIND)
                t = t.drop_columns([ROWKIND])
            elif split.key_value:
                t = read_data_file(store, path, f, self.fields, (SEQUENCE_NUMBER, VALUE_KIND))
                kinds = kinds_to_rowkind(t.column(VALUE_KIND))
                t = t.drop_columns([SEQUENCE_NUMBER, VALUE_KIND])
            else:
                t = read_data_file(store, path, f, self.fields)
                kinds = pa.repeat(pa.scalar("+I", pa.string()), t.num_rows)
            t = t.add_column(0, ROWKIND, kinds)
            t = filter_table(t, self.filter)
            yield t.select([ROWKIND] + self.columns).cast(self.output_schema)

    def read_all(self, splits: Sequence[ChangeSplit]) -> pa.Table:
        parts = [t for s in splits for t in self.read(s)]
        return pa.concat_tables(parts) if parts else self.output_schema.empty_table()


SCAN_MODES = ("auto", "delta", "changelog", "diff")


@dataclass(frozen=True, slots=True)
class IncrementalQuery:
    """What a batch incremental read asks, in Paimon's option terms (exactly one of the first
    three is set): ``between`` (``incremental-between``: 'start,end', two tags or two snapshot
    ids), ``between_timestamp`` (``incremental-between-timestamp``: two epoch-millisecond times
    or two timestamps), ``to_auto_tag`` (``incremental-to-auto-tag``: an automatic tag, read from
    the automatic tag before it); ``scan_mode`` (``incremental-between-scan-mode``) and
    ``tag_to_snapshot`` (``incremental-between-tag-to-snapshot``)."""

    between: str | None = None
    between_timestamp: str | None = None
    to_auto_tag: str | None = None
    scan_mode: str = "auto"
    tag_to_snapshot: bool = False

    def __post_init__(self) -> None:
        given = [v for v in (self.between, self.between_timestamp, self.to_auto_tag) if v is not None]
        if len(given) != 1:
            raise InvalidArgumentError(
                "an incremental read takes exactly one of incremental-between, "
                "incremental-between-timestamp and incremental-to-auto-tag"
            )


@dataclass(frozen=True, slots=True)
class IncrementalRange:
    """A resolved incremental read: snapshots in (start, end] and how to read them."""

    start: Snapshot | None  # None: before the first snapshot (start id 0)
    end: Snapshot | None  # None only for an empty range
    mode: str  # delta / changelog / auto (the files of each snapshot), diff, or empty (no rows)
    start_id: int


def empty_range() -> IncrementalRange:
    return IncrementalRange(None, None, "empty", 0)


def _scan_mode(scan_mode: str | None) -> str:
    mode = (scan_mode or "auto").lower()
    if mode not in SCAN_MODES:
        raise InvalidArgumentError(f"incremental-between-scan-mode '{scan_mode}' is not one of {SCAN_MODES}")
    return mode


def _two(text: str, option: str, what: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidArgumentError(f"{option} must be 'start,end' ({what}), got '{text}'")
    return parts


def resolve_incremental(store: FileStore, query: IncrementalQuery) -> IncrementalRange:
    """Resolve ``incremental-between`` or ``incremental-between-timestamp`` as Paimon 2.0 does
    (``AbstractDataTableScan``'s incremental starting scanners); an empty range reads no rows.
    (``incremental-to-auto-tag`` knows automatic tag names: ``engine.ops.auto_tags``.)

    Raises:
        InvalidArgumentError: malformed values, a range that ends before it starts, snapshot ids
            outside the table's, a tag that is not an automatic one.
        NoSuchSnapshotError: snapshots of a delta range have expired.
    """
    mode = _scan_mode(query.scan_mode)
    if query.between is not None:
        return resolve_between(store, query.between, mode, tag_to_snapshot=query.tag_to_snapshot)
    if query.between_timestamp is None:
        raise InvalidArgumentError(
            "incremental-to-auto-tag is resolved by engine.ops.auto_tags.range_to_auto_tag"
        )
    return _between_timestamps(store, query.between_timestamp, mode)


def resolve_between(
    store: FileStore, between: str, scan_mode: str = "auto", *, tag_to_snapshot: bool = False
) -> IncrementalRange:
    """Resolve ``incremental-between`` text: two tags ('tag1,tag2') or two snapshot ids ('3,7').

    Two tags are diffed (their two file sets compared; tags usually outlive the snapshots between
    them) unless ``tag_to_snapshot``, which reads the snapshots between them like two ids.
    """
    from engine.meta.refs import TagStore

    mode = _scan_mode(scan_mode)
    left, right = _two(between, "incremental-between", "two tags or two snapshot ids")
    tags = TagStore(store.io, store.paths)
    if tags.exists(left) and tags.exists(right):
        start, end = tags.get(left).snapshot, tags.get(right).snapshot
        if end.id < start.id:
            raise InvalidArgumentError(
                f"incremental-between: tag end {right} (snapshot {end.id}) is before tag start {left} "
                f"(snapshot {start.id})"
            )
        check_visible(store, start, f"read incremental-between '{between}' starting at tag {left}")
        if start.id == end.id:
            return empty_range()
        if not tag_to_snapshot:
            return IncrementalRange(start, end, "diff", start.id)
        if mode == "diff":
            raise InvalidArgumentError(
                "incremental-between-tag-to-snapshot reads the snapshots between the tags: use "
                "incremental-between-scan-mode auto, delta or changelog"
            )
        return _between_ids(store, start.id, end.id, mode, between)
    if not (left.isdigit() and right.isdigit()):
        raise NoSuchTagError(
            f"incremental-between '{between}': did not find two tags named '{left}' and '{right}', and "
            "they are not two snapshot ids: give two tags or two snapshot ids"
        )
    start_id, end_id = int(left), int(right)
    if end_id < start_id:
        raise InvalidArgumentError(
            f"incremental-between: the end snapshot {end_id} is before the start snapshot {start_id}"
        )
    check_visible(store, start_id, f"read incremental-between '{between}' starting at {left}")
    if store.snapshots.earliest_id() is None or start_id == end_id:
        return empty_range()
    if mode == "diff":
        return _diff(store, start_id, end_id)
    return _between_ids(store, start_id, end_id, mode, between)


def _diff(store: FileStore, start_id: int, end_id: int) -> IncrementalRange:
    """A diff of two snapshot states; both must exist (start 0: the empty state)."""
    snaps = store.snapshots
    for sid in (start_id, end_id):
        if sid > 0 and not snaps.exists(sid):
            raise NoSuchSnapshotError(
                f"incremental-between: snapshot {sid} does not exist; a diff needs both ends"
            )
    start = snaps.get(start_id) if start_id > 0 else None
    return IncrementalRange(start, snaps.get(end_id), "diff", start_id)


def _between_ids(store: FileStore, start_id: int, end_id: int, mode: str, between: str) -> IncrementalRange:
    """The files of every snapshot in (start, end] (Paimon's incremental delta scanner)."""
    snaps = store.snapshots
    earliest, latest = snaps.earliest_id(), snaps.latest_id()
    if earliest is None or latest is None or start_id < earliest - 1 or end_id > latest:
        raise InvalidArgumentError(
            f"incremental-between '{between}': the snapshot range [{start_id}, {end_id}] is out of the "
            f"available snapshots [{earliest}, {latest}]"
        )
    gone = [i for i in range(start_id + 1, end_id + 1) if not snaps.exists(i)]
    if gone:
        raise NoSuchSnapshotError(
            f"incremental-between: snapshots {gone[0]}..{gone[-1]} of the range have expired; "
            "read between two tags, or use incremental-between-scan-mode = diff"
        )
    start = snaps.get(start_id) if start_id > 0 and snaps.exists(start_id) else None
    return IncrementalRange(start, snaps.get(end_id), mode, start_id)


def parse_time_millis(text: str, option: str) -> int:
    """Epoch milliseconds, or a timestamp ('2024-05-01 12:00:00[.fff]', ISO) in the local time zone
    unless it names one (Paimon parses in the JVM's default zone)."""
    import datetime as dt

    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(
            f"{option}: '{text}' is neither epoch milliseconds nor a timestamp such as '2024-05-01 12:00:00'"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # the local zone
    return int(moment.timestamp() * 1000)


def _between_timestamps(store: FileStore, text: str, mode: str) -> IncrementalRange:
    """``incremental-between-timestamp``: the snapshots committed in (t1, t2]."""
    left, right = _two(text, "incremental-between-timestamp", "two epoch-millisecond times or timestamps")
    if left.lstrip("-").isdigit() != right.lstrip("-").isdigit():
        raise InvalidArgumentError(
            f"incremental-between-timestamp '{text}': give two epoch-millisecond times or two timestamps"
        )
    t1 = parse_time_millis(left, "incremental-between-timestamp")
    t2 = parse_time_millis(right, "incremental-between-timestamp")
    snaps = store.snapshots
    earliest_id, latest_id = snaps.earliest_id(), snaps.latest_id()
    if earliest_id is None or latest_id is None:
        return empty_range()
    if t2 < t1:
        raise InvalidArgumentError(
            f"incremental-between-timestamp: the end {right} is before the start {left}"
        )
    earliest, latest = snaps.get(earliest_id), snaps.get(latest_id)
    if t1 == t2 or t1 > latest.time_millis or t2 < earliest.time_millis:
        return empty_range()
    start = snaps.at_or_before(t1)
    end = snaps.at_or_before(t2) or latest
    if mode == "diff":
        return _diff(store, (start or earliest).id, end.id)
    start_id = earliest.id - 1 if start is None or earliest.time_millis > t1 else start.id
    check_visible(store, start_id, f"read incremental-between-timestamp '{text}'")
    return _between_ids(store, start_id, end.id, mode, f"{start_id},{end.id}")


def range_splits(store: FileStore, rng: IncrementalRange) -> list[ChangeSplit]:
    """Change splits of an incremental range read as changes (modes delta / changelog / auto).

    Append tables with deletion vectors read as Paimon 1.x's incremental delta scan does: the
    files the range's APPEND snapshots added, whole and without DVs, every row ``+I``. So a row
    added and then deleted inside the range is still returned, a DELETE that only wrote DVs adds
    nothing, and an UPDATE/MERGE adds its new rows (the old ones are not retracted).
    """
    if rng.mode in ("empty", "diff") or rng.end is None:
        return []
    if rng.mode == "delta" and store.has_primary_key:
        return [
            s
            for snap in store.snapshots.iter_range(rng.start_id, rng.end.id)
            for s in _delta_splits(store, snap)
        ]
    if rng.mode == "changelog" and (not store.has_primary_key or store.options.changelog_producer == "none"):
        return []  # no changelog files: Paimon reads nothing
    return incremental_splits(store, rng.start_id, rng.end.id)


def _delta_splits(store: FileStore, snapshot: Snapshot) -> list[ChangeSplit]:
    """A primary-key table's raw delta (the level-0 files an APPEND snapshot added), whatever its producer."""
    if snapshot.commit_kind is not CommitKind.APPEND:
        return []
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for m in store.manifests.read_list(snapshot.delta_manifest_list):
        for e in store.manifests.read_entries(m.file_name):
            if e.kind is FileKind.ADD and not skipped_by_readers(e.bucket):
                check_file_readable(e.file, store.paths.root)
                groups[(e.partition, e.bucket)].append(e.file)
    out = []
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
        values = deserialize_row(partition, store.partition_types)
        out.append(ChangeSplit(snapshot.id, partition, values, bucket, tuple(files), True))
    return out


def diff_changes(before: pa.Table, after: pa.Table, primary_keys: Sequence[str]) -> pa.Table:
    """The changes that turn ``before`` into ``after`` (same columns), ``rowkind`` first.

    Rows are compared as multisets (vectorised group-by of both sides); with primary keys a
    removed and an added row of the same key become ``-U`` / ``+U``, otherwise ``-D`` / ``+I``.
    Both sides are held whole; :func:`diff_key_ordered` diffs key-ordered streams of them.
    """
    names = after.column_names
    rows, added = unmatched_rows(before.select(names).cast(after.schema), after)
    kinds = np.where(added, "+I", "-D").astype(object)
    keys = [k for k in primary_keys if k in names]
    if keys and rows.num_rows:
        # A key both removed and added was updated.
        marker = "__dyntable_side"
        sides = rows.select(keys).append_column(marker, pa.array(added))
        per_key = sides.group_by(keys, use_threads=False).aggregate([(marker, "min"), (marker, "max")])
        updated = per_key.filter(
            pc.not_equal(per_key.column(f"{marker}_min"), per_key.column(f"{marker}_max"))
        )
        if updated.num_rows:
            pos = "__dyntable_pos"
            probe = rows.select(keys).append_column(pos, pa.array(np.arange(rows.num_rows)))
            hit = probe.join(updated.select(keys), keys, join_type="inner").column(pos).to_numpy()
            upd = np.zeros(rows.num_rows, dtype=bool)
            upd[hit] = True
            kinds = np.where(upd, np.where(added, "+U", "-U"), kinds).astype(object)
    out = rows.add_column(0, ROWKIND, pa.array(kinds, pa.string()))
    # Removals before additions, as a changelog of one key reads (-U before +U).
    order = np.argsort(~np.isin(kinds, ("-D", "-U")), kind="stable")
    return out.take(pa.array(order, pa.int64()))


def unmatched_rows(before: pa.Table, after: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """The rows of ``before`` that no equal row of ``after`` matches and the other way round (as
    multisets: a row twice before and once after is once unmatched), and per row whether it is
    of ``after``. Both sides have ``after``'s schema."""
    names = after.column_names
    w = "__dyntable_weight"
    both = pa.concat_tables(
        [
            before.append_column(w, pa.repeat(pa.scalar(-1, pa.int64()), before.num_rows)),
            after.append_column(w, pa.repeat(pa.scalar(1, pa.int64()), after.num_rows)),
        ]
    )
    try:
        counted = both.group_by(names, use_threads=False).aggregate([(w, "sum")])
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        raise InvalidArgumentError(
            f"an incremental diff cannot compare rows of these column types: {e}"
        ) from e
    weight = counted.column(f"{w}_sum").to_numpy()
    changed = np.flatnonzero(weight != 0)
    idx = np.repeat(changed, np.abs(weight[changed]))
    return counted.take(pa.array(idx, pa.int64())).select(names), weight[idx] > 0


StateStreams = Sequence[Iterable[pa.Table]]


def diff_key_ordered(
    groups: Iterable[tuple[StateStreams, StateStreams]], primary_keys: Sequence[str], schema: pa.Schema
) -> pa.Table:
    """:func:`diff_changes` of two states of a primary-key table given as key-ordered streams, in
    memory bounded by the streams' tables and the changes, not by the states.

    Each group is one part of both states, e.g. a (partition, bucket): its streams of ``before``
    and of ``after``, every stream's rows in key order (Paimon's), all with ``schema``. A group's
    streams are cut into key-aligned steps (``engine.merge.streaming.align_sorted_runs``) and each
    step's equal rows cancel out; what is left of all groups is then diffed whole. Cancelling is
    a multiset difference, so the rows left differ from the states by equal rows only and the
    diff of them is the diff of the states (kinds included), even where a key lies in other groups
    before and after (a bucket rescale): it only cancels later. Within the removals and within the
    additions, rows may come in another order than the whole diff's.

    Raises:
        InvalidArgumentError: as :func:`diff_changes`.
        CorruptDataError: a stream's rows are not in key order.
    """
    from engine.merge.streaming import align_sorted_runs

    keys = list(primary_keys)
    removed: list[pa.Table] = []
    added: list[pa.Table] = []
    for before_streams, after_streams in groups:
        cut = len(before_streams)
        for parts in align_sorted_runs([*before_streams, *after_streams], keys):
            old = [p for p in parts[:cut] if p is not None and p.num_rows]
            new = [p for p in parts[cut:] if p is not None and p.num_rows]
            if old and new:
                rows, is_new = unmatched_rows(pa.concat_tables(old), pa.concat_tables(new))
                removed.append(rows.filter(pa.array(~is_new)))
                added.append(rows.filter(pa.array(is_new)))
            else:
                (added if new else removed).extend(new or old)
    return diff_changes(
        pa.concat_tables(removed) if removed else schema.empty_table(),
        pa.concat_tables(added) if added else schema.empty_table(),
        keys,
    )
