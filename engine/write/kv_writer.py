"""Writer of primary-key tables: the write side of the LSM tree.

```
 rows (+I/-U/+U/-D)  ──► bucket = hash(bucket key) % N          (Paimon's bucket function)
                         'bucket' = '-1': the key's bucket, new keys fill buckets (write.bucket_assigner;
                         cross-partition upsert: write.global_index)
        │
        ▼ per (partition, bucket) sort buffer, bounded by write-buffer-size
 flush: sequence numbers continue the bucket's max + 1 (so later writes win),
        sort by key + sequence, merge duplicate keys (merge engine), write a level-0 sorted run
        + changelog: input → the input rows; lookup → exact diff against the current state
        │
        ▼ prepare_commit
 compaction per touched bucket (universal strategy; again while above the stop trigger)
        + changelog: full-compaction → diff of the old and new top level
        │
        ▼
 CommitMessage per bucket: new files, changelog files, compaction before/after
```
Nothing is visible until the messages are committed; ``abort()`` deletes every file written.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.commit_messages import CommitMessage, delete_uncommitted
from engine.errors import InvalidArgumentError
from engine.features import POSTPONE_BUCKET
from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, data_file_path, iter_data_file
from engine.lsm.changelog import rowkind_to_kinds
from engine.lsm.compact_strategy import should_stall_writes
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.merge.functions import MergeConfig, merge
from engine.merge.streaming import MERGE_CHUNK_ROWS
from engine.meta.binary_row import serialize_row
from engine.meta.bucket import bucket_ids
from engine.meta.index_files import IndexFileMeta, IndexManifestEntry, IndexStore
from engine.meta.manifest import DataFileMeta
from engine.meta.paths import FileNamer
from engine.options import POSTPONE_DEFAULT_BUCKET_NUM
from engine.read.deletion_vectors import apply_deletion_vector_batches
from engine.scan.planner import DataSplit
from engine.store import FileStore
from engine.write.bucket_assigner import HashBucketAssigner
from engine.write.compactor import levels_of, pick, read_kv, run_compaction, write_changelog
from engine.write.conform import conform
from engine.write.file_writer import DataFileWriter
from engine.write.global_index import CrossPartitionAssigner, new_assigner
from engine.write.kv_deletion_vectors import BucketDeletionVectors, compact_unit
from engine.write.routing import group_rows

ROWKIND = "rowkind"
KIND_COLUMNS = [(VALUE_KIND, pa.int8()), (ROWKIND, pa.string())]
Bucket = tuple[bytes, int]


def split_kinds(table: pa.Table) -> tuple[pa.Table, pa.Array]:
    """Take the row kinds out of conformed input: a ``rowkind`` ('+I', '-U', '+U', '-D') or
    ``_VALUE_KIND`` (0..3) column, else every row is an insert."""
    if ROWKIND in table.column_names:
        return table.drop_columns([ROWKIND]), rowkind_to_kinds(table.column(ROWKIND))
    if VALUE_KIND in table.column_names:
        kinds = table.column(VALUE_KIND).combine_chunks()
        bad = pc.sum(pc.or_(pc.less(kinds, 0), pc.greater(kinds, 3))).as_py()
        if bad:
            raise InvalidArgumentError(f"{bad} row(s) have a _VALUE_KIND outside 0..3")
        return table.drop_columns([VALUE_KIND]), kinds
    return table, pa.array(np.zeros(table.num_rows, dtype=np.int8))


class KeyValueWriter:
    """Writes changelog rows into a primary-key table's buckets."""

    def __init__(
        self,
        store: FileStore,
        *,
        compact: bool | None = None,
        sequence_offset: int = 0,
        namer: FileNamer | None = None,
        shared_base: int | None = None,
    ) -> None:
        self.store = store
        schema = store.schema
        # Dynamic buckets: one of several independent writers of a commit, all assigning from
        # this snapshot (engine.write.shared_assignment); None: a single writer from the latest.
        self.shared_base = shared_base
        opts = store.options
        self.namer = namer or FileNamer()
        # Concurrent writers of one commit (Spark tasks) take disjoint sequence ranges.
        self.sequence_offset = sequence_offset
        self.config = MergeConfig.from_options(schema.options, schema.primary_keys)
        self.num_buckets = opts.bucket
        if self.num_buckets < 1 and self.num_buckets not in (-1, POSTPONE_BUCKET):
            raise InvalidArgumentError(
                f"table has bucket = {self.num_buckets}; dyntable writes primary-key tables with a fixed "
                "bucket count, dynamic buckets (-1) or postpone buckets (-2)"
            )
        # Postpone-bucket tables (bucket = -2): each partition's own fixed bucket count.
        self._partition_buckets: dict[bytes, int] = {}
        # dynamic buckets, on first write
        self._assigner: HashBucketAssigner | CrossPartitionAssigner | None = None
        self.compact = (not opts.write_only) if compact is None else compact
        self.changelog_producer = opts.changelog_producer
        self.buffer_limit = opts.write_buffer_size
        self._buffers: dict[Bucket, list[pa.Table]] = defaultdict(list)
        self._buffered_bytes = 0
        self._partition_dirs: dict[bytes, str] = {}
        self._bucket_files: dict[Bucket, list[DataFileMeta]] = {}
        self._next_seq: dict[Bucket, int] = {}
        self._restored_partitions: set[bytes] = set()
        # The snapshot each partition's sequence numbers continue (the commit re-bases after a race).
        self._sequence_base: dict[bytes, int] = {}
        self.new_files: dict[Bucket, list[DataFileMeta]] = defaultdict(list)
        self.changelog: dict[Bucket, list[DataFileMeta]] = defaultdict(list)
        self.compact_before: dict[Bucket, list[DataFileMeta]] = defaultdict(list)
        self.compact_after: dict[Bucket, list[DataFileMeta]] = defaultdict(list)
        self.compact_changelog: dict[Bucket, list[DataFileMeta]] = defaultdict(list)
        # Deletion-vector tables: each touched bucket's DVs (engine.write.kv_deletion_vectors),
        # loaded from the index manifest of the snapshot its files come from.
        self.deletion_vectors = uses_deletion_vectors(store)
        self._dv_entries: dict[bytes, list[IndexManifestEntry]] = {}
        self._dvs: dict[Bucket, BucketDeletionVectors] = {}

    # -- input ----------------------------------------------------------------------------------
    def write(self, data: object) -> None:
        """Buffer rows; a ``rowkind`` ('+I','-U','+U','-D') or ``_VALUE_KIND`` (0..3) column gives each row's
        kind."""
        store = self.store
        table, kinds = split_kinds(conform(data, store.schema, extra_columns=KIND_COLUMNS))
        if table.num_rows == 0:
            return
        table = table.append_column(VALUE_KIND, kinds)
        if self.num_buckets == -1:
            if self._assigner is None:
                shared, base_id = self.shared_base is not None, self.shared_base
                if base_id is None or base_id < 0:
                    base = store.snapshots.latest()
                else:
                    base = store.snapshots.get(base_id) if base_id else None
                self._assigner = new_assigner(store, base, shared)
            table, buckets = self._assigner.route(table)
        elif self.num_buckets == POSTPONE_BUCKET:
            self._write_postpone(table)
            return
        else:
            keys = store.schema.logical_bucket_keys
            buckets = bucket_ids(
                [table.column(k) for k in keys], [store.schema.field(k).type for k in keys], self.num_buckets
            )
        self._buffer(group_rows(table, store.partition_keys, buckets))

    def _write_postpone(self, table: pa.Table) -> None:
        """A batch write into a postpone-bucket table, as Paimon's Spark writer does it by default
        (``postpone.batch-write-fixed-bucket``): straight into real buckets, each partition with its
        known bucket count (that of its files in real buckets) or, for a new partition,
        ``postpone.default-bucket-num``."""
        store = self.store
        keys = store.schema.logical_bucket_keys
        types = [store.schema.field(k).type for k in keys]
        for values, _, part_rows in group_rows(table, store.partition_keys, None):
            partition = serialize_row(list(values), store.partition_types)
            n = self._postpone_bucket_count(partition)
            buckets = bucket_ids([part_rows.column(k) for k in keys], types, n)
            self._buffer((values, bucket, rows) for _, bucket, rows in group_rows(part_rows, (), buckets))

    def _postpone_bucket_count(self, partition: bytes) -> int:
        n = self._partition_buckets.get(partition)
        if n is None:
            known = self.known_postpone_buckets(partition)
            n = self._partition_buckets[partition] = (
                known if known is not None else int(self.store.options.get(POSTPONE_DEFAULT_BUCKET_NUM)))
        return n

    def known_postpone_buckets(self, partition: bytes) -> int | None:
        """A postpone-bucket table's partition: the bucket count of its files in real buckets
        (None: it has none yet)."""
        latest = self.store.snapshots.latest()
        known = [e.total_buckets for e in self.store.live_entries(latest, lambda p: p == partition)
                 if e.bucket >= 0 and e.total_buckets > 0]
        return max(known) if known else None

    def set_postpone_buckets(self, partition: bytes, n: int) -> None:
        """Give a new partition of a postpone-bucket table ``n`` buckets (a postpone compaction's
        count from its pending rows) instead of ``postpone.default-bucket-num``."""
        self._partition_buckets[partition] = n

    def _buffer(self, groups: Iterable[tuple[tuple[object, ...], int, pa.Table]]) -> None:
        store = self.store
        for values, bucket, rows in groups:
            partition = serialize_row(list(values), store.partition_types)
            if partition not in self._partition_dirs:
                self._partition_dirs[partition] = store.partition_dir(values)
            self._buffers[(partition, bucket)].append(rows)
            self._buffered_bytes += rows.nbytes
        if self._buffered_bytes >= self.buffer_limit:
            self.flush()

    # -- flushing -------------------------------------------------------------------------------
    def _restore(self, partitions: set[bytes]) -> None:
        """Load the committed files of newly touched partitions (once per partition)."""
        todo = partitions - self._restored_partitions
        if not todo:
            return
        self._restored_partitions |= todo
        latest = self.store.snapshots.latest()
        for partition in todo:
            self._sequence_base[partition] = latest.id if latest else 0
        if self.deletion_vectors:
            entries = IndexStore(self.store.io, self.store.paths).read_manifest(
                latest.index_manifest if latest else None
            )
            for partition in todo:
                self._dv_entries[partition] = [e for e in entries if e.partition == partition]
        for e in self.store.live_entries(latest, lambda p: p in todo):
            key = (e.partition, e.bucket)
            self._bucket_files.setdefault(key, []).append(e.file)

    def _sequence_start(self, key: Bucket) -> int:
        if key not in self._next_seq:
            files = self._bucket_files.get(key, [])
            self._next_seq[key] = (
                max((f.max_sequence_number for f in files), default=-1) + 1 + self.sequence_offset
            )
        return self._next_seq[key]

    def flush(self) -> None:
        if not self._buffers:
            return
        self._restore({p for p, _ in self._buffers})
        schema = self.store.schema
        for key, parts in self._buffers.items():
            partition, bucket = key
            rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            start = self._sequence_start(key)
            seq = pa.array(np.arange(start, start + rows.num_rows, dtype=np.int64))
            self._next_seq[key] = start + rows.num_rows
            kv = rows.append_column(SEQUENCE_NUMBER, seq)
            merged = merge(kv, schema.primary_keys, self.config, drop_deletes=False)
            part_dir = self._partition_dirs[partition]
            if self.changelog_producer == "lookup":
                self._lookup_changelog(key, merged)
            elif self.changelog_producer == "input":
                sorted_input = kv.take(
                    pc.sort_indices(
                        kv,
                        sort_keys=[(k, "ascending") for k in schema.primary_keys]
                        + [(SEQUENCE_NUMBER, "ascending")],
                    )
                )
                writer = DataFileWriter(
                    self.store,
                    part_dir,
                    bucket,
                    namer=self.namer,
                    prefix=self.store.options.changelog_file_prefix,
                )
                self.changelog[key].extend(writer.write_kv(sorted_input))
            writer = DataFileWriter(self.store, part_dir, bucket, namer=self.namer)
            files = writer.write_kv(merged)
            self.new_files[key].extend(files)
            self._bucket_files.setdefault(key, []).extend(files)
        self._buffers.clear()
        self._buffered_bytes = 0

    def _bucket_dvs(self, key: Bucket) -> BucketDeletionVectors:
        dvs = self._dvs.get(key)
        if dvs is None:
            entries = self._dv_entries.get(key[0], [])
            dvs = self._dvs[key] = BucketDeletionVectors.load(self.store, entries, *key)
        return dvs

    def _lookup_changelog(self, key: Bucket, batch: pa.Table) -> None:
        """Exact changes of this batch: look up the current values of its keys in the bucket."""
        partition, bucket = key
        schema = self.store.schema
        part_dir = self._partition_dirs[partition]
        files = self._bucket_files.get(key, [])
        pk = list(schema.primary_keys)
        # Read batch by batch, only the rows of the batch's keys are kept: neither the bucket nor
        # one of its files is held whole. The rows DVs mark are older versions: not the current state.
        dvs = self._bucket_dvs(key) if self.deletion_vectors else None
        fields = list(schema.fields)
        parts = []
        for f in files:
            path = data_file_path(self.store, part_dir, bucket, f)
            batches = iter_data_file(self.store, path, f, fields, (SEQUENCE_NUMBER, VALUE_KIND),
                                     batch_rows=MERGE_CHUNK_ROWS)
            dv = dvs.get(f.file_name) if dvs is not None else None
            for rows in apply_deletion_vector_batches(batches, dv, f.file_name):
                if rows.num_rows:
                    parts.append(rows.filter(_keys_in(rows, batch, pk)))
        existing = pa.concat_tables(parts) if parts else read_kv(self.store, part_dir, bucket, [])
        before = merge(existing, pk, self.config, drop_deletes=True)
        aligned = batch.select(existing.column_names).cast(existing.schema)
        after = merge(pa.concat_tables([existing, aligned]), pk, self.config, drop_deletes=True)
        self.changelog[key].extend(write_changelog(self.store, part_dir, bucket, before, after, self.namer))

    # -- commit ---------------------------------------------------------------------------------
    def compact_bucket(self, key: Bucket, full: bool = False) -> None:
        """Compact one bucket now (picked by the universal strategy, or fully)."""
        partition, bucket = key
        part_dir = self._partition_dirs[partition]
        stop = self.store.options.num_sorted_run_stop_trigger
        for _ in range(8):
            files = self._bucket_files.get(key, [])
            levels, unit = pick(self.store, files, full=full)
            if unit is None:
                return
            if self.deletion_vectors:
                dvs = self._bucket_dvs(key)
                result = compact_unit(self.store, part_dir, bucket, levels, unit, dvs, self.namer)
            else:
                result = run_compaction(self.store, part_dir, bucket, levels, unit, self.namer)
            self._record_compaction(key, result.before, result.after)
            self.compact_changelog[key].extend(result.changelog)
            if full or not should_stall_writes(levels_of(self.store, self._bucket_files[key]), stop):
                return

    def _record_compaction(
        self, key: Bucket, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta]
    ) -> None:
        gone = {(f.file_name, f.level) for f in before}
        self._bucket_files[key] = [
            f for f in self._bucket_files[key] if (f.file_name, f.level) not in gone
        ] + list(after)
        # A file produced by an earlier compaction of this same commit and compacted again is an
        # intermediate: it never becomes visible, so drop it from both lists (and from disk if rewritten).
        produced_files = {(f.file_name, f.level): f for f in self.compact_after[key]}
        intermediate = gone & set(produced_files)
        self.compact_after[key] = [
            f for f in self.compact_after[key] if (f.file_name, f.level) not in intermediate
        ]
        self.compact_before[key].extend(f for f in before if (f.file_name, f.level) not in intermediate)
        self.compact_after[key].extend(after)
        still_used = {f.file_name for f in self._bucket_files[key]} | {
            f.file_name for f in self.new_files[key]
        }
        for name, level in intermediate:
            if name not in still_used:
                f = produced_files[(name, level)]
                self.store.io.delete(
                    self.store.paths.data_file(self._partition_dirs[key[0]], key[1], name, f.external_path))

    def compact_splits(self, splits: Sequence[DataSplit], full: bool) -> None:
        """Compact committed buckets (``ALTER TABLE … COMPACT``, ``CALL sys.compact``)."""
        for split in splits:
            key = (split.partition, split.bucket)
            if self.num_buckets == POSTPONE_BUCKET:  # a real bucket of a postpone-bucket table
                self._partition_buckets[split.partition] = split.total_buckets
            self._partition_dirs[split.partition] = self.store.partition_dir(split.partition_values)
            self._restored_partitions.add(split.partition)
            self._sequence_base[split.partition] = split.snapshot_id
            self._bucket_files[key] = list(split.files)
            if self.deletion_vectors and split.partition not in self._dv_entries:
                snapshot = self.store.snapshots.get(split.snapshot_id)
                entries = IndexStore(self.store.io, self.store.paths).read_manifest(snapshot.index_manifest)
                self._dv_entries[split.partition] = [e for e in entries if e.partition == split.partition]
            self.compact_bucket(key, full=full)

    def prepare_commit(self, full_compaction: bool = False) -> list[CommitMessage]:
        self.flush()
        if self.compact or full_compaction:
            for key in list(self.new_files):
                if not self.new_files[key]:
                    continue
                self.compact_bucket(key, full=full_compaction)
        index = self._assigner.index_files() if isinstance(self._assigner, HashBucketAssigner) else {}
        claims = self._assigner.claims() if isinstance(self._assigner, CrossPartitionAssigner) else {}
        return self._take_messages(index, claims)

    def _take_messages(
        self, index: dict[Bucket, IndexFileMeta] | None = None, claims: dict[bytes, bytes] | None = None
    ) -> list[CommitMessage]:
        """Everything written so far, per bucket, as commit messages (the writer forgets it);
        ``claims`` go with the first message of their partition."""
        index = index or {}
        claims = dict(claims or {})
        delta = self._assigner.delta_slots if isinstance(self._assigner, HashBucketAssigner) else set()
        new_dvs: dict[Bucket, IndexFileMeta] = {}
        for bucket_key, dvs in self._dvs.items():
            written = dvs.write(IndexStore(self.store.io, self.store.paths))
            if written is not None:
                new_dvs[bucket_key] = written
        keys = set(new_dvs) | (
            set(self.new_files)
            | set(self.compact_after)
            | set(self.compact_before)
            | set(self.changelog)
            | set(index)
        )
        messages = [
            CommitMessage(
                partition=p, bucket=b, total_buckets=self._partition_buckets.get(p, self.num_buckets),
                new_files=tuple(self.new_files.get((p, b), ())),
                changelog_files=tuple(self.changelog.get((p, b), ())),
                compact_before=tuple(self.compact_before.get((p, b), ())),
                compact_after=tuple(self.compact_after.get((p, b), ())),
                compact_changelog=tuple(self.compact_changelog.get((p, b), ())),
                sequence_base=self._sequence_base.get(p),
                new_index_files=tuple(i[(p, b)] for i in (index, new_dvs) if (p, b) in i),
                hash_index_delta=(p, b) in delta,
            )
            for p, b in sorted(keys)
        ]
        for i, m in enumerate(messages):
            if m.partition in claims and not m.is_empty:
                messages[i] = dataclasses.replace(m, key_claims=claims.pop(m.partition))
        for d in (
            self.new_files,
            self.changelog,
            self.compact_before,
            self.compact_after,
            self.compact_changelog,
        ):
            d.clear()
        return [m for m in messages if not m.is_empty]

    def abort(self) -> None:
        """Delete every file this writer produced (nothing was committed)."""
        delete_uncommitted(self.store, self._take_messages())
        self._buffers.clear()


def _keys_in(table: pa.Table, batch: pa.Table, key_columns: Sequence[str]) -> pa.Array:
    """Mask of ``table`` rows whose key occurs in ``batch`` (vectorised via a semi join)."""
    if len(key_columns) == 1:
        k = key_columns[0]
        return pc.is_in(table.column(k), value_set=batch.column(k).combine_chunks())
    marker = "__dyntable_row"
    left = table.select(list(key_columns)).append_column(
        marker, pa.array(np.arange(table.num_rows, dtype=np.int64))
    )
    hits = left.join(
        batch.select(list(key_columns)).group_by(list(key_columns)).aggregate([]),
        list(key_columns),
        join_type="left semi",
    )
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[hits.column(marker).to_numpy()] = True
    return pa.array(mask)
