"""Reading a table in the steps a distributed engine spreads out: plan in the driver, read splits
in tasks.

```
 ReadBuilder  (immutable, picklable)  time travel · projection · filter · row kind · split limit
   .new_scan().plan()        ─► Plan(snapshot, splits)       driver
   .new_read().read(split)   ─► Arrow tables                  task (data or change splits)
   .new_incremental(...)     ─► IncrementalPlan               driver (incremental-between)
   .native_plan(plan)        ─► NativePlan                    driver (files readable as plain Parquet)
   .new_stream_scan()        ─► engine.builders.stream.StreamScan
```
A time-travel builder reads in the schema its snapshot was written with (``store`` is that
view, and ``table`` the caller's facade over it). The filter prunes partitions, buckets and
files in the scan; ``new_read`` applies it to
rows too (after the merge) unless asked not to. A limit stops each split's read once it has
yielded that many rows (the caller keeps the global limit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
import pyarrow as pa

from engine.features import check_incremental_readable
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.meta.snapshot import Snapshot
from engine.read.key_ordered import key_ordered_buckets, reads_in_key_order
from engine.read.split_reader import SplitReader
from engine.scan.fallback import fallback_branch, with_fallback
from engine.scan.incremental import (
    ROWKIND,
    ChangeReader,
    ChangeSplit,
    IncrementalQuery,
    IncrementalRange,
    diff_changes,
    diff_key_ordered,
    range_splits,
    resolve_incremental,
)
from engine.scan.planner import DataSplit, Plan, TableScan, resolve_time_travel, store_at
from engine.scan.predicate import Predicate
from engine.scan.raw import RawFile, RawGroup, classify_raw, group_raw_files, needs_merge, table_reads_raw
from engine.schema import TableSchema
from engine.store import FileStore, OverStore

if TYPE_CHECKING:
    from engine.builders.stream import StreamScan

Split = DataSplit | ChangeSplit
T = TypeVar("T", bound=OverStore)


@dataclass(frozen=True)
class ReadBuilder(Generic[T]):
    """What one read reads: ``store`` (as of ``snapshot``'s schema; ``source`` is the facade the
    builder was made from, whose view of ``store`` is :attr:`table`), the pinned ``snapshot`` (None:
    the latest when planned), ``columns`` (None: all), a pruning ``filter``, ``row_kind`` (a
    ``rowkind`` column first: the merged rows' kinds), ``merge_only`` (a snapshot id: plan it and
    keep only the splits that need a merge), ``read_optimized`` (Paimon's ``$ro``) and ``limit``
    (rows per data split that are enough: a read stops there; None: all)."""

    source: T
    store: FileStore
    snapshot: Snapshot | None = None
    columns: tuple[str, ...] | None = None
    filter: Predicate | None = None
    row_kind: bool = False
    merge_only: int | None = None
    read_optimized: bool = False
    limit: int | None = None

    # -- configuration -------------------------------------------------------------------------
    def at(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
        version: str | None = None,
        in_current_schema: bool = False,
    ) -> ReadBuilder[T]:
        """Pinned to a snapshot id, a tag, a point in time, or ``version`` (``VERSION AS OF``: a
        snapshot id unless a tag has that name); with none of them, to what the table's own
        ``scan.*`` options ask (else the latest, resolved when planned). The table is then seen in
        the schema the snapshot was written with, or with ``in_current_schema`` in the builder's
        own (a row-level statement pins the latest snapshot yet sees the columns added since).

        Raises:
            NoSuchSnapshotError / NoSuchTagError: the version does not exist.
            InvalidArgumentError: more than one version given.
        """
        store = self.store
        if version is not None:
            from engine.meta.refs import TagStore

            if version.isdigit() and not TagStore(store.io, store.paths).exists(version):
                snapshot_id = int(version)
            else:
                tag = version
        snapshot = resolve_time_travel(store, snapshot_id, tag, timestamp_millis)
        seen = store if in_current_schema else store_at(store, snapshot)
        return dataclasses.replace(self, store=seen, snapshot=snapshot)

    def with_projection(self, columns: Sequence[str] | None) -> ReadBuilder[T]:
        return dataclasses.replace(self, columns=tuple(columns) if columns is not None else None)

    def with_filter(self, predicate: Predicate | None) -> ReadBuilder[T]:
        return dataclasses.replace(self, filter=predicate)

    def with_row_kind(self, row_kind: bool = True) -> ReadBuilder[T]:
        return dataclasses.replace(self, row_kind=row_kind)

    def with_merge_only(self, snapshot_id: int | None) -> ReadBuilder[T]:
        return dataclasses.replace(self, merge_only=snapshot_id)

    def with_read_optimized(self, read_optimized: bool = True) -> ReadBuilder[T]:
        return dataclasses.replace(self, read_optimized=read_optimized)

    def with_limit(self, limit: int | None) -> ReadBuilder[T]:
        """Each data split's read stops after ``limit`` rows (change splits are read whole)."""
        if limit is not None and limit < 0:
            from engine.errors import InvalidArgumentError

            raise InvalidArgumentError(f"a read limit must be >= 0, not {limit}")
        return dataclasses.replace(self, limit=limit)

    # -- what it reads -------------------------------------------------------------------------
    @property
    def table(self) -> T:
        """The caller's table as this read sees it (a time-travel read: in its snapshot's schema)."""
        return self.source if self.source.store is self.store else self.source.over(self.store)

    @property
    def schema(self) -> TableSchema:
        """The schema rows are read in (a time-travel read's: its snapshot's)."""
        return self.store.logical_schema

    @property
    def has_primary_key(self) -> bool:
        return self.store.has_primary_key

    def schema_of(self, schema_id: int) -> TableSchema:
        """A stored schema version (the one a data file was written with)."""
        return self.store.schema_by_id(schema_id)

    # -- the steps -----------------------------------------------------------------------------
    def new_scan(self) -> BatchScan:
        return BatchScan(self)

    def new_read(
        self, *, filter_rows: bool = True, changes: bool = False, all_levels: bool = False
    ) -> TableRead:
        """The task side. ``filter_rows=False``: the filter only pruned (the caller filters rows);
        ``changes``: refuse now a table whose changes cannot be read; ``all_levels``: read level 0
        of a deletion-vector table too, merged (a stream's full phase, as Paimon's streaming
        scans do; batch reads skip it)."""
        return TableRead(self, filter_rows=filter_rows, changes=changes, all_levels=all_levels)

    def new_incremental(self, query: IncrementalQuery | str, mode: str = "auto") -> IncrementalPlan:
        """Paimon's batch incremental read (``query``: an :class:`IncrementalQuery`, or
        ``incremental-between`` text read with scan mode ``mode``): the changes from one snapshot
        or tag (exclusive) to another, as change splits, or computed here as one table (a diff).

        Raises:
            InvalidArgumentError: combined with time travel, or a bad range.
        """
        if self.snapshot is not None:
            from engine.errors import InvalidArgumentError

            raise InvalidArgumentError("an incremental read cannot be combined with time travel options")
        store = self.store
        check_incremental_readable(store.schema, store.paths.root)
        if isinstance(query, str):
            query = IncrementalQuery(between=query, scan_mode=mode)
        if query.to_auto_tag is not None:
            from engine.ops.auto_tags import range_to_auto_tag

            return IncrementalPlan(self, range_to_auto_tag(self.store, query.to_auto_tag))
        return IncrementalPlan(self, resolve_incremental(self.store, query))

    def new_stream_scan(self) -> StreamScan:
        from engine.builders.stream import StreamScan

        store = self.store
        check_incremental_readable(store.schema, store.paths.root)
        return StreamScan(self.store)

    def uses_deletion_vectors(self) -> bool:
        """Whether the table has deletion vectors (batch reads then never merge: Paimon's rule)."""
        return uses_deletion_vectors(self.store)

    def reads_raw(self) -> bool:
        """Whether some files of this table can be read as plain Parquet (no merge, no DVs).

        Not with a fallback branch (``scan.fallback-branch``): its splits are read with that
        branch's own table definition, by :class:`TableRead`."""
        store = self.store
        if not self.read_optimized and fallback_branch(store) is not None:
            return False
        return table_reads_raw(store)

    def native_plan(self, splits: Sequence[DataSplit]) -> NativePlan:
        """The files of ``splits`` a plain Parquet reader may read, and the splits that need a merge."""
        raw, merge = classify_raw(self.store, splits, read_optimized=self.read_optimized)
        return NativePlan(tuple(raw), tuple(group_raw_files(raw)), tuple(merge))


@dataclass(frozen=True)
class NativePlan:
    files: tuple[RawFile, ...]
    groups: tuple[RawGroup, ...]
    merge_splits: tuple[DataSplit, ...]


class BatchScan:
    """Plans a batch read (driver side)."""

    def __init__(self, builder: ReadBuilder) -> None:
        self.builder = builder

    def plan(self) -> Plan:
        """The splits of the pinned snapshot (else the ``merge_only`` one, else the latest)."""
        b = self.builder
        store = b.store
        scan = TableScan(store).with_projection(b.columns).with_filter(b.filter)
        pinned = b.snapshot if b.snapshot is not None else b.merge_only
        if pinned is not None:
            scan = scan.with_snapshot(pinned)
        plan = scan.plan()
        if not b.read_optimized and b.merge_only is None:
            plan = with_fallback(scan, plan)  # scan.fallback-branch: partitions this branch lacks
        splits = list(plan.splits)
        if b.read_optimized:
            from engine.system_tables import read_optimized_splits

            splits = read_optimized_splits(b.store, splits)
        if b.merge_only is not None:
            splits = [s for s in splits if needs_merge(store, s, read_optimized=b.read_optimized)]
        return Plan(plan.snapshot, tuple(splits))

    @staticmethod
    def task_splits(plan: Plan) -> list[DataSplit]:
        """The plan's splits as tasks need them: without the files' key and value statistics.

        A Spark relation keeps every partition's pickled bytes as long as it lives and puts them
        into each task, so the statistics would be about half of what a read holds per file.
        """
        return [s.without_stats() for s in plan.splits]


class TableRead:
    """Reads data splits and change splits (task side; picklable)."""

    def __init__(
        self,
        builder: ReadBuilder,
        *,
        filter_rows: bool = True,
        changes: bool = False,
        all_levels: bool = False,
    ) -> None:
        self.builder = builder
        self.filter_rows = filter_rows
        self.all_levels = all_levels
        self._data: SplitReader | None = None
        self._changes: ChangeReader | None = self._change_reader() if changes else None

    def _change_reader(self) -> ChangeReader:
        b = self.builder
        return ChangeReader(b.store, list(b.columns) if b.columns is not None else None)

    @property
    def output_schema(self) -> pa.Schema:
        return self._data_reader().output_schema

    def _data_reader(self) -> SplitReader:
        if self._data is None:
            b = self.builder
            self._data = SplitReader(b.store, b.columns, b.filter if self.filter_rows else None,
                                     row_kind=b.row_kind, all_levels=self.all_levels)
        return self._data

    def read(self, split: Split) -> Iterator[pa.Table]:
        """A data split's rows (``rowkind`` first with ``row_kind``), or a change split's changes
        (``rowkind`` first, always)."""
        if isinstance(split, ChangeSplit):
            if self._changes is None:
                self._changes = self._change_reader()
            yield from self._changes.read(split)
            return
        limit = self.builder.limit
        if limit is None:
            yield from self._data_reader().read(split)
            return
        left = limit
        if left == 0:
            return
        # Tables come one file or merged section at a time: the rest of the split is never read.
        for table in self._data_reader().read(split):
            if table.num_rows > left:
                table = table.slice(0, left)
            left -= table.num_rows
            yield table
            if left == 0:
                return

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        parts = [t for split in splits for t in self.read(split)]
        return pa.concat_tables(parts) if parts else self.output_schema.empty_table()

    def __getstate__(self) -> dict[str, object]:
        return {"builder": self.builder, "filter_rows": self.filter_rows, "all_levels": self.all_levels,
                "_data": None, "_changes": None, "changes": self._changes is not None}

    def __setstate__(self, state: dict[str, object]) -> None:
        changes = state.pop("changes")
        self.__dict__.update(state)
        if changes:
            self._changes = self._change_reader()


class IncrementalPlan:
    """An ``incremental-between`` read: change splits, or the diff of the two end states."""

    def __init__(self, builder: ReadBuilder, rng: IncrementalRange) -> None:
        self.builder = builder
        self.range = rng

    @property
    def is_diff(self) -> bool:
        return self.range.mode == "diff"

    def splits(self) -> list[ChangeSplit]:
        """The change splits (none for a diff or an empty range)."""
        return range_splits(self.builder.store, self.range)

    def diff(self) -> pa.Table | None:
        """A diff's changes (``rowkind`` + the projection), computed from both end states (None:
        both are empty). It compares whole rows — a projection could make different rows
        equal — then projects. As in Paimon's incremental diff, a key whose row changed or is new
        yields its new row only (no ``-U`` before it), with the kind the end state stores it with,
        and a removed key ``-D``.

        A primary-key table's states are diffed streamed, bucket by bucket in key order
        (:func:`~engine.scan.incremental.diff_key_ordered`): memory follows the reader's tables and
        the changes, not the table. Read whole instead (:func:`~engine.scan.incremental.diff_changes`):
        tables without a primary key (their rows have no order to align by), deletion-vector tables
        (read file by file unmerged, so a bucket's rows are not in key order) and splits of a
        fallback branch (another table definition)."""
        b = self.builder
        whole = dataclasses.replace(b, columns=None, filter=None, row_kind=False, snapshot=None)

        def splits(snapshot: Snapshot | None) -> list[DataSplit]:
            if snapshot is None:
                return []
            return list(dataclasses.replace(whole, snapshot=snapshot).new_scan().plan().splits)

        after_splits, before_splits = splits(self.range.end), splits(self.range.start)
        if not after_splits and not before_splits:
            return None
        reader = whole.new_read()
        columns = list(b.columns) if b.columns is not None else list(b.schema.field_names)
        store = b.store
        if reads_in_key_order(store, [*after_splits, *before_splits]):
            buckets = key_ordered_buckets([(reader, before_splits), (reader, after_splits)])
            pairs = [(before, after) for before, after in buckets]
            changes = diff_key_ordered(pairs, b.store.logical_schema.primary_keys, reader.output_schema)
            return self._stored_kinds(_without_before_images(changes)).select([ROWKIND, *columns])

        def state(chosen: list[DataSplit]) -> pa.Table | None:
            parts = [t for s in chosen for t in reader.read(s)]
            return pa.concat_tables(parts) if parts else None

        after, before = state(after_splits), state(before_splits)
        if after is None and before is None:
            return None
        shape = (after if after is not None else before).schema  # type: ignore[union-attr]
        changes = diff_changes(before if before is not None else shape.empty_table(),
                               after if after is not None else shape.empty_table(),
                               b.store.logical_schema.primary_keys)
        return self._stored_kinds(_without_before_images(changes)).select([ROWKIND, *columns])

    def _stored_kinds(self, changes: pa.Table) -> pa.Table:
        """A primary-key table's new rows with the kind the end state stores them with (``+I`` of an
        upsert, ``+U`` of an UPDATE/MERGE), as Paimon's diff returns the end's record: read back
        for the changed keys only (a filtered key-and-kind read, file by file)."""
        import pyarrow.compute as pc

        from engine.scan import predicate as P

        keys = list(self.builder.store.logical_schema.primary_keys)
        added = pc.is_in(changes.column(ROWKIND), value_set=pa.array(["+I", "+U"]))
        if not keys or self.range.end is None or not pc.any(added).as_py():
            return changes
        wanted = changes.filter(added)
        only = P.and_(*(P.is_in(k, pc.unique(wanted.column(k)).to_pylist()) for k in keys))
        end = dataclasses.replace(self.builder, columns=tuple(keys), filter=only, row_kind=True,
                                  snapshot=self.range.end)
        reader = end.new_read()
        parts = [t for s in end.new_scan().plan().splits for t in reader.read(s)]
        if not parts:
            return changes
        stored = pa.concat_tables(parts).rename_columns([_STORED, *keys])
        pos = "__dyntable_pos"
        numbered = changes.append_column(pos, pa.array(np.arange(changes.num_rows)))
        hit = numbered.filter(added).select([*keys, pos]).join(stored, keys, join_type="inner")
        kinds = changes.column(ROWKIND).combine_chunks().to_numpy(zero_copy_only=False).copy()
        kinds[hit.column(pos).to_numpy()] = hit.column(_STORED).to_numpy(zero_copy_only=False)
        return changes.set_column(0, ROWKIND, pa.array(kinds, pa.string()))


_STORED = "__dyntable_stored_kind"


def _without_before_images(changes: pa.Table) -> pa.Table:
    """Paimon's diff emits a changed key's new row only: the ``-U`` rows go."""
    import pyarrow.compute as pc

    return changes.filter(pc.not_equal(changes.column(ROWKIND), "-U"))
