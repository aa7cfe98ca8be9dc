"""The global key index of cross-partition upsert tables (Java's KEY_DYNAMIC bucket mode).

One job: route every input row of a primary-key table whose key lacks a partition column
(``'bucket' = '-1'``) to a (partition, bucket), so that one key lives in one partition of the
whole table, with the whole batch at once (Arrow joins and sorts; Python loops only per
partition or bucket).

The index key → (partition, bucket) is bootstrapped from the table's live keys (a scan of the
key columns only, as Java's ``IndexBootstrap``; Java keeps it in RocksDB, here it is an Arrow
table held by the writer) and updated with every batch, so later batches see earlier ones. A row
whose key lives in another partition follows the merge engine (``GlobalIndexAssigner`` with its
``ExistingProcessor``):

* ``deduplicate``: a ``-D`` for the key in its old partition and bucket, then the row in its
  new partition (the key moves; the old bucket's key count drops);
* ``partial-update`` / ``aggregation``: the row goes to the key's old partition and bucket;
* ``first-row``: the row is dropped.

Within a batch, rows of one key apply in input order. A new key goes to the first bucket (by
id) of its partition holding fewer than ``dynamic-bucket.target-row-num`` keys, else to the
smallest unused bucket id (``crosspartition.BucketAssigner``; as Java, this mode has no
``dynamic-bucket.max-buckets`` bound). With ``dynamic-bucket.assigner-parallelism`` = n, as
Paimon's Spark write: n assigners, a key's assigner ``|hash(key) % n|`` (the trimmed primary
key's BinaryRow hash, Paimon's shuffle by key hash), each counting only its own keys and
filling and opening only buckets ``b`` with ``b % n`` = its id (``GlobalIndexAssigner
.isAssignBucket``); one writer plays all n, so the layout is Paimon's. Java keeps no HASH
index files in this mode, nor does dyntable. One writer owns the index of a table at a time (see
:func:`engine.write.bucket_assigner.writer_clustering`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.meta.binary_row import deserialize_row
from engine.meta.bucket import hash_codes
from engine.meta.snapshot import Snapshot
from engine.options import DYNAMIC_BUCKET_ASSIGNER_PARALLELISM
from engine.store import FileStore
from engine.write.bucket_assigner import (
    BUCKET,
    PART,
    ROW,
    HashBucketAssigner,
    fill_buckets,
    is_cross_partition,
    live_keys,
    partition_ids,
    target_rows,
)
from engine.write.routing import neighbour_changes
from engine.write.shared_assignment import encode_claims, key_hash64, open_buckets

_VALUE_KIND = "_VALUE_KIND"
_DELETE = 3
_NO_LIMIT = 2**31 - 1  # Java's crosspartition.BucketAssigner has no bucket limit
LANE = "__dyntable_assigner"


class CrossPartitionAssigner:
    """Cross-partition upsert: one table-wide key → (partition, bucket) map."""

    def __init__(self, store: FileStore, snapshot: Snapshot | None, shared: bool = False) -> None:
        self.store = store
        # One of several independent writers of a commit (engine.write.shared_assignment): new
        # (key, partition) pairs go to the partition's open bucket as of ``snapshot``, and the
        # writer claims where each key it wrote ends (the commit refuses a key claimed twice).
        self.shared = shared
        self._touched: list[pa.Table] = []
        self.target = target_rows(store)
        self.keys = list(store.schema.trimmed_primary_keys)
        self.key_types = [store.schema.field(k).type for k in self.keys]
        self.engine = store.options.merge_engine
        # Independent writers each count the whole partition (engine.write.shared_assignment).
        self.lanes = 1 if shared else max(1, int(store.options.get(DYNAMIC_BUCKET_ASSIGNER_PARALLELISM) or 1))
        self.loc = live_keys(store, snapshot, self.keys)
        # Keys per bucket, per (assigner, partition): an assigner counts only its own keys.
        self.counts: dict[tuple[int, bytes], dict[int, int]] = {}
        self._filled = _empty_filled()
        self.base_counts: dict[bytes, dict[int, int]] = {}
        if self.loc.num_rows:
            located = self.loc.append_column(LANE, pa.array(self._lanes(self.loc)))
            stats = located.group_by([LANE, PART, BUCKET]).aggregate([([], "count_all")])
            for lane, p, b, c in zip(stats.column(LANE).to_pylist(), stats.column(PART).to_pylist(),
                                     stats.column(BUCKET).to_pylist(), stats.column("count_all").to_pylist(),
                                     strict=True):
                self.counts.setdefault((lane, p), {})[b] = c
                whole = self.base_counts.setdefault(p, {})
                whole[b] = whole.get(b, 0) + c

    def _lanes(self, keys: pa.Table) -> np.ndarray:
        """The assigner of every row's key: ``|hash % n|`` of its trimmed primary key (Java int
        arithmetic, as Paimon's ``ModPartitioner``)."""
        if self.lanes == 1:
            return np.zeros(keys.num_rows, dtype=np.int32)
        h = hash_codes([keys.column(k) for k in self.keys], self.key_types).astype(np.int64)
        return np.abs(np.fmod(h, self.lanes)).astype(np.int32)

    def route(self, table: pa.Table) -> tuple[pa.Table, np.ndarray]:
        n = table.num_rows
        store = self.store
        ids, parts = partition_ids(table, store)
        part = pa.array(parts, pa.binary()).take(pa.array(ids))
        if self.shared:
            self._touched.append(table.select(self.keys))
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
            same = np.ones(n - 1, dtype=bool)
            for k in self.keys:
                same &= ~neighbour_changes(sk.column(k))
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
        self._filled = _empty_filled()
        if not here.all():
            need = t.filter(pa.array(~here))
            pairs = (
                need.group_by(self.keys + [PART], use_threads=False)
                .aggregate([(ROW, "min")])
                .sort_by(f"{ROW}_min")
            )
            assigned = np.empty(pairs.num_rows, dtype=np.int32)
            pcol = pairs.column(PART)
            lanes = self._lanes(pairs)
            for p in pc.unique(pcol).to_pylist():
                in_part = pc.equal(pcol, p).to_numpy(zero_copy_only=False)
                if self.shared:
                    rows = np.nonzero(in_part)[0]
                    assigned[rows] = open_buckets(
                        self.base_counts.get(p, {}), np.zeros(len(rows), np.int64),
                        np.zeros(len(rows), np.int32), 1, self.target, None, _NO_LIMIT,
                    )
                    counts = self.counts.setdefault((0, p), {})
                    for b in np.unique(assigned[rows]).tolist():
                        counts[b] = counts.get(b, 0) + int((assigned[rows] == b).sum())
                    continue
                for lane in np.unique(lanes[in_part]).tolist():
                    rows = np.nonzero(in_part & (lanes == lane))[0]
                    counts = self.counts.setdefault((lane, p), {})
                    # The assigner fills and opens only its own bucket ids (b % n == its id).
                    own = {b: c for b, c in counts.items() if b % self.lanes == lane}
                    assigned[rows] = fill_buckets(
                        own, len(rows), self.target, None, np.zeros(len(rows), np.int32), _NO_LIMIT,
                        family=(self.lanes, lane),
                    )
                    counts.update(own)
            pairs = pairs.drop_columns([f"{ROW}_min"]).append_column("__nb", pa.array(assigned))
            self._filled = pa.table({LANE: pa.array(lanes, pa.int32()), PART: pairs.column(PART),
                                     BUCKET: pa.array(assigned)})
            back = need.join(pairs, self.keys + [PART], join_type="left outer").sort_by(ROW)
            buckets[~here] = back.column("__nb").to_numpy(zero_copy_only=False)
        return buckets

    def claims(self) -> dict[bytes, bytes]:
        """Per partition: the 64-bit hashes of the keys this writer wrote that end there (a shared
        writer's claims, ``CommitMessage.key_claims``); empty for a single writer."""
        if not self._touched:
            return {}
        touched = pa.concat_tables(self._touched).group_by(self.keys, use_threads=False).aggregate([])
        where = touched.join(self.loc, self.keys, join_type="inner")
        hashes = key_hash64(where.select(self.keys))
        part = where.column(PART)
        out = {}
        for p in pc.unique(part).to_pylist():
            mask = pc.equal(part, p).to_numpy(zero_copy_only=False)
            out[p] = encode_claims(hashes[mask])
        return out

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
        self._recount(self.loc.join(final.select(self.keys), self.keys, join_type="inner"), final)
        # Keys whose rows were all dropped (first-row) keep where they live.
        kept = self.loc.join(final.select(self.keys), self.keys, join_type="left anti")
        self.loc = pa.concat_tables(
            [
                kept.select(self.loc.column_names).cast(self.loc.schema),
                final.select(self.loc.column_names).cast(self.loc.schema),
            ]
        )

    def _recount(self, before: pa.Table, after: pa.Table) -> None:
        """Keys per (partition, bucket) after a batch: the batch's keys leave where they lived
        (``before``) and count where they are now (``after``); the provisional counts the bucket
        fill added for this batch's new (key, partition) pairs are taken back. A key that moves
        thus frees its place in the old bucket, as Java's ``BucketAssigner.decrement``."""
        parts = []
        for t, weight in ((after, 1), (before, -1), (self._filled, -1)):
            if t.num_rows:
                lanes = t.column(LANE) if LANE in t.column_names else pa.array(self._lanes(t))
                parts.append(
                    pa.table({
                        LANE: lanes,
                        PART: t.column(PART),
                        BUCKET: t.column(BUCKET).cast(pa.int32()),
                        "__w": pa.array(np.full(t.num_rows, weight, dtype=np.int64)),
                    })
                )
        if not parts:
            return
        delta = pa.concat_tables(parts).group_by([LANE, PART, BUCKET], use_threads=False)
        delta = delta.aggregate([("__w", "sum")])
        delta = delta.filter(pc.not_equal(delta.column("__w_sum"), 0))
        for lane, p, b, d in zip(delta.column(LANE).to_pylist(), delta.column(PART).to_pylist(),
                                 delta.column(BUCKET).to_pylist(), delta.column("__w_sum").to_pylist(),
                                 strict=True):
            counts = self.counts.setdefault((lane, p), {})
            counts[b] = counts.get(b, 0) + d


def _empty_filled() -> pa.Table:
    return pa.table({LANE: pa.array([], pa.int32()), PART: pa.array([], pa.binary()),
                     BUCKET: pa.array([], pa.int32())})


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


def new_assigner(
    store: FileStore, snapshot: Snapshot | None, shared: bool = False
) -> HashBucketAssigner | CrossPartitionAssigner:
    """The bucket assigner of a dynamic-bucket primary-key table, for a writer starting at ``snapshot``
    (``shared``: one of several independent writers of a commit)."""
    if store.options.bucket != -1 or not store.has_primary_key:
        raise InvalidArgumentError("dynamic bucket assignment is for primary-key tables with 'bucket' = '-1'")
    return (
        CrossPartitionAssigner(store, snapshot, shared)
        if is_cross_partition(store)
        else HashBucketAssigner(store, snapshot, shared)
    )
