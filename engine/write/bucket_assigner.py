"""Bucket routing for primary-key tables in dynamic bucket mode (``'bucket' = '-1'``).

One job: decide, for every input row, the (partition, bucket) it is written to, with the
whole batch at once (numpy / Arrow joins; Python loops only per partition or bucket).

Two modes, as Paimon (``KeyValueFileStore.bucketMode``):

* **Partition-local** (the primary key contains every partition key, Java's HASH_DYNAMIC): a
  key keeps the bucket it has. Each partition's key→bucket map is the set of HASH index files
  of its buckets (32-bit hashes of the trimmed primary key; for a partition without them, the
  hashes of the keys read from its data). A hash never seen goes to the first bucket (by id)
  holding fewer than ``dynamic-bucket.target-row-num`` hashes, else to the smallest unused
  bucket id (``PartitionIndex.assign``). The writer then writes each changed bucket's complete
  HASH file, so Java's and pypaimon's writers keep placing keys where ours are.
* **Cross-partition upsert** (the primary key lacks a partition key, Java's KEY_DYNAMIC): one
  key lives in one partition of the whole table. The map key → (partition, bucket) is read from
  the table's live keys (Java bootstraps the same way; it keeps no HASH files in this mode). A
  row whose key lives in another partition follows the merge engine
  (``GlobalIndexAssigner``/``ExistingProcessor``): ``deduplicate`` writes ``-D`` for the key in
  its old partition and the row in its new one; ``partial-update``/``aggregation`` write the row
  into the key's old partition; ``first-row`` drops the row. Within a batch, rows of one key
  apply in input order. New keys fill each partition's buckets by the count of keys per bucket
  (``crosspartition.BucketAssigner``).

Both maps live in the writer for its lifetime, so later batches see earlier batches' keys.
Concurrent writers of one partition (or, cross-partition, of one table) would each assign new
keys without seeing the others': Paimon allows a single writer job only, and so does dyntable
(a Spark job clusters rows by partition, resp. key, so its tasks never share a key; see
``sqlext.source.datasource``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.meta.binary_row import deserialize_row, serialize_row
from engine.meta.bucket import hash_codes
from engine.meta.index_files import IndexFileMeta, IndexStore, hash_entries
from engine.meta.snapshot import Snapshot
from engine.options import DYNAMIC_BUCKET_MAX_BUCKETS, DYNAMIC_BUCKET_TARGET_ROW_NUM
from engine.store import FileStore
from engine.write.routing import group_rows

PART = "__dyntable_part"
BUCKET = "__dyntable_bucket_id"
ROW = "__dyntable_row"
_VALUE_KIND = "_VALUE_KIND"
_DELETE = 3
_MAX_BUCKETS = 32767  # bucket ids are Java shorts in the HASH index map


def is_dynamic_bucket(store: FileStore) -> bool:
    return store.has_primary_key and store.options.bucket == -1


def is_cross_partition(store: FileStore) -> bool:
    """The primary key does not contain every partition key (Paimon's cross-partition upsert)."""
    return bool(store.partition_keys) and not set(store.partition_keys) <= set(store.primary_keys)


def _target_rows(store: FileStore) -> int:
    return int(store.options.get(DYNAMIC_BUCKET_TARGET_ROW_NUM))


def _max_buckets(store: FileStore) -> int:
    value = int(store.options.get(DYNAMIC_BUCKET_MAX_BUCKETS))
    return _MAX_BUCKETS if value <= 0 else min(value, _MAX_BUCKETS)


def _fill(counts: dict[int, int], n: int, target: int, max_buckets: int, hashes: np.ndarray) -> np.ndarray:
    """Buckets for ``n`` new keys (in order): non-full buckets by id, then the smallest unused ids.

    ``counts`` is updated. Past ``max_buckets``, keys spread over the existing buckets by hash
    (Java picks one at random; a hash is deterministic)."""
    out = np.empty(n, dtype=np.int32)
    done = 0
    for b in sorted(counts):
        if done == n:
            break
        room = target - counts[b]
        if room > 0:
            take = min(room, n - done)
            out[done:done + take] = b
            counts[b] += take
            done += take
    candidate = 0
    while done < n:
        while candidate in counts:
            candidate += 1
        if candidate >= max_buckets:
            existing = np.array(sorted(counts), dtype=np.int32)
            rest = hashes[done:].astype(np.int64)
            out[done:] = existing[np.abs(rest) % len(existing)]
            break
        take = min(target, n - done)
        out[done:done + take] = candidate
        counts[candidate] = take
        done += take
    return out


def live_keys(
    store: FileStore, snapshot: Snapshot | None, columns: Sequence[str], partitions: set[bytes] | None = None
) -> pa.Table:
    """The live (merged) keys of ``snapshot`` with their partition bytes and bucket."""
    from engine.read.split_reader import SplitReader
    from engine.scan.planner import TableScan

    cols = list(columns)
    schema = pa.schema(
        [store.schema.arrow_schema().field(c).with_nullable(True) for c in cols]
        + [(PART, pa.binary()), (BUCKET, pa.int32())]
    )
    if snapshot is None:
        return schema.empty_table()
    parts = []
    reader = SplitReader(store, cols)
    for split in TableScan(store).with_snapshot(snapshot).plan().splits:
        if partitions is not None and split.partition not in partitions:
            continue
        for t in reader.read(split):
            if t.num_rows:
                t = t.select(cols)
                t = t.append_column(
                    PART,
                    pa.array([split.partition] * 1, pa.binary()).take(np.zeros(t.num_rows, dtype=np.int32)),
                )
                t = t.append_column(BUCKET, pa.array(np.full(t.num_rows, split.bucket, dtype=np.int32)))
                parts.append(t.cast(schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def partition_ids(table: pa.Table, store: FileStore) -> tuple[np.ndarray, list[bytes]]:
    """Per row: the index of its partition in the returned list of serialized partitions."""
    n = table.num_rows
    if not store.partition_keys:
        return np.zeros(n, dtype=np.int32), [serialize_row([], [])]
    keyed = table.select(list(store.partition_keys)).append_column(
        ROW, pa.array(np.arange(n, dtype=np.int64))
    )
    ids = np.empty(n, dtype=np.int32)
    parts: list[bytes] = []
    for values, _b, rows in group_rows(keyed, store.partition_keys):
        ids[rows.column(ROW).to_numpy()] = len(parts)
        parts.append(serialize_row(list(values), store.partition_types))
    return ids, parts


@dataclass
class _PartitionIndex:
    """One partition's hash → bucket map (sorted hashes) and its buckets' hash sets."""

    hashes: np.ndarray
    buckets: np.ndarray
    counts: dict[int, int]
    restored: dict[int, np.ndarray]  # bucket → hashes of its committed HASH file (or data)
    base_files: dict[int, IndexFileMeta]
    added: dict[int, list[np.ndarray]] = field(default_factory=dict)


class HashBucketAssigner:
    """Partition-local dynamic buckets, kept consistent with the HASH index files."""

    def __init__(self, store: FileStore, snapshot: Snapshot | None) -> None:
        self.store = store
        self.snapshot = snapshot
        self.target = _target_rows(store)
        self.max_buckets = _max_buckets(store)
        self.index = IndexStore(store.io, store.paths, store.options.manifest_compression)
        self._entries = hash_entries(self.index.read_manifest(snapshot.index_manifest)) if snapshot else []
        self._parts: dict[bytes, _PartitionIndex] = {}
        self.key_columns = list(store.schema.trimmed_primary_keys)
        self.key_types = [store.schema.field(k).type for k in self.key_columns]

    def _load(self, partition: bytes) -> _PartitionIndex:
        files = {e.bucket: e.file for e in self._entries if e.partition == partition}
        restored: dict[int, np.ndarray] = {}
        if files:
            for b, meta in files.items():
                restored[b] = np.unique(self.index.read_hashes(meta))
        else:
            # No HASH files (a writer that keeps none): the keys of the partition's data.
            keys = live_keys(self.store, self.snapshot, self.key_columns, {partition})
            if keys.num_rows:
                h = hash_codes([keys.column(k) for k in self.key_columns], self.key_types)
                b = keys.column(BUCKET).to_numpy()
                for bucket in np.unique(b).tolist():
                    restored[int(bucket)] = np.unique(h[b == bucket])
        if restored:
            hashes = np.concatenate(list(restored.values()))
            buckets = np.concatenate([np.full(len(v), k, dtype=np.int32) for k, v in restored.items()])
            order = np.argsort(hashes, kind="stable")
            hashes, buckets = hashes[order], buckets[order]
        else:
            hashes, buckets = np.empty(0, np.int32), np.empty(0, np.int32)
        counts = {b: len(v) for b, v in restored.items()}
        return _PartitionIndex(hashes, buckets, counts, restored, files)

    def assign(self, partition: bytes, hashes: np.ndarray) -> np.ndarray:
        """Buckets for rows of one partition, given their key hashes."""
        idx = self._parts.get(partition)
        if idx is None:
            idx = self._parts[partition] = self._load(partition)
        out = np.empty(len(hashes), dtype=np.int32)
        pos = np.searchsorted(idx.hashes, hashes)
        pos_c = np.minimum(pos, max(len(idx.hashes) - 1, 0))
        known = (
            (pos < len(idx.hashes)) & (idx.hashes[pos_c] == hashes)
            if len(idx.hashes)
            else np.zeros(len(hashes), bool)
        )
        out[known] = idx.buckets[pos_c[known]]
        if not known.all():
            miss = hashes[~known]
            uniq, first = np.unique(miss, return_index=True)
            uniq = uniq[np.argsort(first, kind="stable")]  # first-seen order, as a row-by-row assigner
            new_buckets = _fill(idx.counts, len(uniq), self.target, self.max_buckets, uniq)
            for b in np.unique(new_buckets).tolist():
                idx.added.setdefault(int(b), []).append(uniq[new_buckets == b])
            all_h = np.concatenate([idx.hashes, uniq])
            all_b = np.concatenate([idx.buckets, new_buckets])
            order = np.argsort(all_h, kind="stable")
            idx.hashes, idx.buckets = all_h[order], all_b[order]
            out[~known] = idx.buckets[np.searchsorted(idx.hashes, miss)]
        return out

    def route(self, table: pa.Table) -> tuple[pa.Table, np.ndarray]:
        ids, parts = partition_ids(table, self.store)
        hashes = hash_codes([table.column(k) for k in self.key_columns], self.key_types)
        buckets = np.empty(table.num_rows, dtype=np.int32)
        for i, partition in enumerate(parts):
            rows = np.nonzero(ids == i)[0]
            buckets[rows] = self.assign(partition, hashes[rows])
        return table, buckets

    def index_files(self) -> dict[tuple[bytes, int], IndexFileMeta]:
        """Write the complete HASH file of every bucket that got new keys (the writer forgets them)."""
        out: dict[tuple[bytes, int], IndexFileMeta] = {}
        for partition, idx in self._parts.items():
            for bucket, added in idx.added.items():
                full = np.unique(np.concatenate([idx.restored.get(bucket, np.empty(0, np.int32)), *added]))
                out[(partition, bucket)] = self.index.write_hashes(full)
                idx.restored[bucket] = full
            idx.added.clear()
        return out

    def delete_index_files(self, files: Sequence[IndexFileMeta]) -> None:
        for f in files:
            self.index.delete_file(f)


class CrossPartitionAssigner:
    """Cross-partition upsert: one table-wide key → (partition, bucket) map."""

    def __init__(self, store: FileStore, snapshot: Snapshot | None) -> None:
        self.store = store
        self.target = _target_rows(store)
        self.max_buckets = _max_buckets(store)
        self.keys = list(store.schema.trimmed_primary_keys)
        self.engine = store.options.merge_engine
        self.loc = live_keys(store, snapshot, self.keys)
        self.counts: dict[bytes, dict[int, int]] = {}
        if self.loc.num_rows:
            stats = self.loc.group_by([PART, BUCKET]).aggregate([([], "count_all")])
            for p, b, c in zip(stats.column(PART).to_pylist(), stats.column(BUCKET).to_pylist(),
                               stats.column("count_all").to_pylist(), strict=True):
                self.counts.setdefault(p, {})[b] = c

    def route(self, table: pa.Table) -> tuple[pa.Table, np.ndarray]:
        n = table.num_rows
        store = self.store
        ids, parts = partition_ids(table, store)
        part = pa.array(parts, pa.binary()).take(pa.array(ids))
        # Where each row's key lives now (null: a new key), aligned with the input rows.
        probe = table.select(self.keys).append_column(ROW, pa.array(np.arange(n, dtype=np.int64)))
        stored = probe.join(
            self.loc.rename_columns(self.keys + ["__sp", "__sb"]), self.keys, join_type="left outer"
        )
        stored = stored.sort_by(ROW)
        stored_part = stored.column("__sp").combine_chunks()
        stored_bucket = stored.column("__sb").combine_chunks()
        # Rows of one key, in input order: previous row's partition (first row: the stored one).
        order = (
            pc.sort_indices(probe, sort_keys=[(k, "ascending") for k in self.keys] + [(ROW, "ascending")])
            .to_numpy()
            .astype(np.int64)
        )
        sk = probe.take(order)
        first = np.ones(n, dtype=bool)
        if n > 1:
            from engine.write.routing import _changes

            same = np.ones(n - 1, dtype=bool)
            for k in self.keys:
                same &= ~_changes(sk.column(k))
            first[1:] = ~same
        group = np.cumsum(first) - 1
        part_s = part.take(pa.array(order))
        first_pos = np.nonzero(first)[0]
        owner_s = pc.coalesce(stored_part.take(pa.array(order)), part_s.take(pa.array(first_pos[group])))
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n)
        out = table
        if self.engine == "deduplicate":
            prev_s = pa.concat_arrays([pa.nulls(1, pa.binary()), part_s.slice(0, n - 1)]) if n else part_s
            prev_s = pc.if_else(pa.array(first), stored_part.take(pa.array(order)), prev_s)
            moved_s = pc.fill_null(pc.not_equal(prev_s, part_s), False).to_numpy(zero_copy_only=False)
            rows_part = part
            if moved_s.any():
                src = order[moved_s]  # input rows whose key leaves another partition
                retract = _with_partition(table.take(pa.array(src)), prev_s.filter(pa.array(moved_s)), store)
                retract = retract.set_column(retract.column_names.index(_VALUE_KIND), _VALUE_KIND,
                                             pa.array(np.full(len(src), _DELETE, dtype=np.int8)))
                out = pa.concat_tables([table, retract.cast(table.schema)])
                rows_part = pa.concat_arrays([part, prev_s.filter(pa.array(moved_s))])
                # A retraction goes just before the row that moves the key (sequence order).
                pos = np.concatenate([2 * np.arange(n), 2 * src - 1])
            else:
                pos = None
            final_part = part_s.take(pa.array(np.append(first_pos[1:], n) - 1))  # last row per key
        else:
            owner = owner_s.take(pa.array(inverse))
            keep = pc.equal(owner, part).to_numpy(zero_copy_only=False)
            if self.engine == "first-row":
                out = table.filter(pa.array(keep))
                rows_part = part.filter(pa.array(keep))
            else:  # partial-update / aggregation: the row updates the key where it lives
                out = _with_partition(table, owner, store) if not keep.all() else table
                rows_part = owner
            pos = None
            final_part = owner_s.take(pa.array(first_pos))
        buckets = self._buckets(out.select(self.keys), rows_part, stored_part, stored_bucket, n)
        if pos is not None:
            perm = np.argsort(pos, kind="stable")
            out, buckets = out.take(pa.array(perm)), buckets[perm]
            rows_part = rows_part.take(pa.array(perm))
        self._remember(
            sk.select(self.keys).take(pa.array(first_pos)),
            final_part,
            out.select(self.keys),
            rows_part,
            buckets,
        )
        return out, buckets

    def _buckets(
        self, keys: pa.Table, rows_part: pa.Array, stored_part: pa.Array, stored_bucket: pa.Array, n: int
    ) -> np.ndarray:
        """The bucket of every (key, partition) pair: the stored one if the key lives there, else a new
        one."""
        m = keys.num_rows
        t = keys.append_column(PART, rows_part).append_column(ROW, pa.array(np.arange(m, dtype=np.int64)))
        st = self.loc.rename_columns(self.keys + ["__sp", "__sb"])
        j = t.join(st, self.keys, join_type="left outer").sort_by(ROW)
        here = pc.fill_null(pc.equal(j.column("__sp"), j.column(PART)), False).to_numpy(zero_copy_only=False)
        buckets = np.empty(m, dtype=np.int32)
        buckets[here] = j.column("__sb").to_numpy(zero_copy_only=False)[here].astype(np.int32)
        if not here.all():
            need = t.filter(pa.array(~here))
            pairs = (
                need.group_by(self.keys + [PART], use_threads=False)
                .aggregate([(ROW, "min")])
                .sort_by(f"{ROW}_min")
            )
            assigned = np.empty(pairs.num_rows, dtype=np.int32)
            pcol = pairs.column(PART)
            for p in pc.unique(pcol).to_pylist():
                rows = np.nonzero(pc.equal(pcol, p).to_numpy(zero_copy_only=False))[0]
                counts = self.counts.setdefault(p, {})
                assigned[rows] = _fill(
                    counts, len(rows), self.target, self.max_buckets, np.zeros(len(rows), np.int32)
                )
            pairs = pairs.drop_columns([f"{ROW}_min"]).append_column("__nb", pa.array(assigned))
            back = need.join(pairs, self.keys + [PART], join_type="left outer").sort_by(ROW)
            buckets[~here] = back.column("__nb").to_numpy(zero_copy_only=False)
        return buckets

    def _remember(
        self,
        keys: pa.Table,
        final_part: pa.Array,
        out_keys: pa.Table,
        rows_part: pa.Array,
        buckets: np.ndarray,
    ) -> None:
        """Update the key map with where each key of the batch ended up."""
        t = out_keys.append_column(PART, rows_part).append_column(BUCKET, pa.array(buckets))
        pair_bucket = t.group_by(self.keys + [PART], use_threads=False).aggregate([(BUCKET, "max")])
        final = keys.append_column(PART, final_part)
        final = final.join(pair_bucket, self.keys + [PART], join_type="inner").rename_columns(
            self.keys + [PART, BUCKET]
        )
        # Keys whose rows were all dropped (first-row) keep where they live.
        kept = self.loc.join(final.select(self.keys), self.keys, join_type="left anti")
        self.loc = pa.concat_tables(
            [
                kept.select(self.loc.column_names).cast(self.loc.schema),
                final.select(self.loc.column_names).cast(self.loc.schema),
            ]
        )


def _with_partition(table: pa.Table, partitions: pa.Array, store: FileStore) -> pa.Table:
    """``table`` with its partition columns replaced by the serialized ``partitions`` (per row)."""
    if not store.partition_keys:
        return table
    uniq = pc.unique(partitions)
    index = pc.index_in(partitions, value_set=uniq)
    values = [deserialize_row(p, store.partition_types) for p in uniq.to_pylist()]
    for i, name in enumerate(store.partition_keys):
        col_type = table.schema.field(name).type
        column = pa.array([v[i] for v in values], col_type).take(index)
        table = table.set_column(table.column_names.index(name), name, column)
    return table


def new_assigner(store: FileStore, snapshot: Snapshot | None) -> HashBucketAssigner | CrossPartitionAssigner:
    if store.options.bucket != -1 or not store.has_primary_key:
        raise InvalidArgumentError("dynamic bucket assignment is for primary-key tables with 'bucket' = '-1'")
    return (
        CrossPartitionAssigner(store, snapshot)
        if is_cross_partition(store)
        else HashBucketAssigner(store, snapshot)
    )


def writer_clustering(store: FileStore) -> list[str] | None:
    """Columns a distributed write must cluster rows by so that no two writers share a key's map.

    Partition-local dynamic buckets: the partition columns (``[]``: a single writer), so each
    partition's buckets and HASH files have one writer. Cross-partition upsert: the trimmed
    primary key, so each key is routed by one writer. None: any split of the rows is fine.
    """
    if not is_dynamic_bucket(store):
        return None
    return (
        list(store.schema.trimmed_primary_keys) if is_cross_partition(store) else list(store.partition_keys)
    )
