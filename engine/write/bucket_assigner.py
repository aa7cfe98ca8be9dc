"""Bucket routing for primary-key tables in dynamic bucket mode (``'bucket' = '-1'``), partition-local.

One job: decide, for every input row, the bucket it is written to, with the whole batch at once
(numpy / Arrow joins; Python loops only per partition or bucket). The shared pieces of both
dynamic modes live here too (live keys of a snapshot, partition ids, the bucket fill rule); the
cross-partition mode (Java's KEY_DYNAMIC) is :mod:`engine.write.global_index`.

**Partition-local** (the primary key contains every partition key, Java's HASH_DYNAMIC): a key
keeps the bucket it has. Each partition's key→bucket map is the set of HASH index files of its
buckets (32-bit hashes of the trimmed primary key; for a partition without them, the hashes of
the keys read from its data). A hash never seen goes to the first bucket (by id) holding fewer
than ``dynamic-bucket.target-row-num`` hashes, else to the smallest unused bucket id below
``dynamic-bucket.max-buckets``; past that limit, to one of the partition's buckets
(``PartitionIndex.assign``). The writer then writes each changed bucket's complete HASH file, so
Java's and pypaimon's writers keep placing keys where ours are.

The map lives in the writer for its lifetime, so later batches see earlier batches' keys.
Concurrent writers of one partition would each assign new keys without seeing the others':
Paimon allows a single writer job only, and so does dyntable. Within a job, either one task owns
a partition (SQL writes cluster rows by partition; see :func:`writer_clustering`) or every task
is a ``shared`` writer following rules all tasks agree on (DataFrame and streaming writes;
:mod:`engine.write.shared_assignment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from engine.errors import InvalidArgumentError
from engine.meta.binary_row import serialize_row
from engine.meta.bucket import hash_codes
from engine.meta.index_files import IndexFileMeta, IndexStore, hash_entries, sorted_unique
from engine.meta.snapshot import Snapshot
from engine.options import (
    DYNAMIC_BUCKET_ASSIGNER_PARALLELISM,
    DYNAMIC_BUCKET_INITIAL_BUCKETS,
    DYNAMIC_BUCKET_MAX_BUCKETS,
    DYNAMIC_BUCKET_TARGET_ROW_NUM,
)
from engine.store import FileStore
from engine.write.routing import group_rows
from engine.write.shared_assignment import lanes_of, open_buckets

PART = "__dyntable_part"
BUCKET = "__dyntable_bucket_id"
ROW = "__dyntable_row"
_MAX_BUCKETS = 32767  # bucket ids are Java shorts in the HASH index map
EMPTY_ROW_HASH = -1670924195  # Java's hashCode of the partition of an unpartitioned table (8 zero bytes)


def is_dynamic_bucket(store: FileStore) -> bool:
    return store.has_primary_key and store.options.bucket == -1


def is_cross_partition(store: FileStore) -> bool:
    """The primary key does not contain every partition key (Paimon's cross-partition upsert)."""
    return bool(store.partition_keys) and not set(store.partition_keys) <= set(store.primary_keys)


def target_rows(store: FileStore) -> int:
    return int(store.options.get(DYNAMIC_BUCKET_TARGET_ROW_NUM))


def max_buckets(store: FileStore) -> int | None:
    """``dynamic-bucket.max-buckets``; None when unlimited (-1, Paimon's default)."""
    value = int(store.options.get(DYNAMIC_BUCKET_MAX_BUCKETS))
    return None if value <= 0 else value


def fill_buckets(
    counts: dict[int, int],
    n: int,
    target: int,
    max_buckets: int | None,
    hashes: np.ndarray,
    hard_limit: int = _MAX_BUCKETS,
    family: tuple[int, int] = (1, 0),
) -> np.ndarray:
    """Buckets for ``n`` new keys (in order): non-full buckets by id, then the smallest unused ids.

    ``counts`` holds the buckets the assigner may use (and is updated); new bucket ids are those
    ``b`` with ``b % family[0] == family[1]`` (Java's ``isMyBucket`` for several assigners).
    Past ``max_buckets``, keys spread over the existing buckets by hash (Java picks one at
    random; a hash is deterministic). Without a maximum, needing a bucket id
    at ``hard_limit`` is refused, as Java refuses it."""
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
    step, candidate = family
    limit = hard_limit if max_buckets is None else min(max_buckets, hard_limit)
    while done < n:
        while candidate in counts:
            candidate += step
        if candidate >= limit:
            if max_buckets is None:
                raise InvalidArgumentError(
                    f"a partition of this dynamic-bucket table needs more than {hard_limit} buckets; "
                    f"raise 'dynamic-bucket.target-row-num' (now {target})"
                )
            existing = np.array(sorted(counts), dtype=np.int32)
            rest = hashes[done:].astype(np.int64)
            out[done:] = existing[np.abs(rest) % len(existing)]
            break
        take = min(target, n - done)
        out[done:done + take] = candidate
        counts[candidate] = take
        done += take
    return out


def assigner_layout(store: FileStore) -> tuple[int, int]:
    """(channels, assigners) of dynamic-bucket assignment, as Paimon's Spark writer derives them.

    Channels: ``dynamic-bucket.assigner-parallelism``, else ``dynamic-bucket.initial-buckets``,
    else 1 (Spark writes set the option to the job's parallelism, as Paimon's Spark writer does:
    ``WriteBuilder.with_job_parallelism``), at most
    ``dynamic-bucket.max-buckets``. Assigners: ``min(initial-buckets, channels)``, else channels.
    """
    opts = store.options
    parallelism = opts.get(DYNAMIC_BUCKET_ASSIGNER_PARALLELISM)
    initial = opts.get(DYNAMIC_BUCKET_INITIAL_BUCKETS)
    channels = int(parallelism or initial or 1)
    limit = max_buckets(store)
    if limit is not None:
        channels = min(channels, limit)
    assigners = min(int(initial), channels) if initial else channels
    return channels, assigners


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
    counts: dict[int, int]  # bucket → keys, as loaded
    restored: dict[int, np.ndarray]  # bucket → hashes of its committed HASH file (or data)
    base_files: dict[int, IndexFileMeta]
    added: dict[int, list[np.ndarray]] = field(default_factory=dict)
    # assigner id → the counts of the buckets it may fill (all of them with one assigner)
    by_assigner: dict[int, dict[int, int]] = field(default_factory=dict)


class HashBucketAssigner:
    """Partition-local dynamic buckets, kept consistent with the HASH index files."""

    def __init__(self, store: FileStore, snapshot: Snapshot | None, shared: bool = False) -> None:
        self.store = store
        self.snapshot = snapshot
        # One of several independent writers of a commit: new keys follow the base snapshot's
        # open buckets only (engine.write.shared_assignment), never this writer's own counts.
        self.shared = shared
        self.delta_slots: set[tuple[bytes, int]] = set()  # index files holding added hashes only
        self.target = target_rows(store)
        self.max_buckets = max_buckets(store)
        self.index = IndexStore(store.io, store.paths, store.options.manifest_compression)
        self._entries = hash_entries(self.index.read_manifest(snapshot.index_manifest)) if snapshot else []
        self._parts: dict[bytes, _PartitionIndex] = {}
        self.key_columns = list(store.schema.trimmed_primary_keys)
        self.key_types = [store.schema.field(k).type for k in self.key_columns]
        self.channels, self.assigners = assigner_layout(store)

    def _load(self, partition: bytes) -> _PartitionIndex:
        files = {e.bucket: e.file for e in self._entries if e.partition == partition}
        restored: dict[int, np.ndarray] = {}
        if files:
            for b, meta in files.items():
                restored[b] = sorted_unique(self.index.read_hashes(meta))
        else:
            # No HASH files (a writer that keeps none): the keys of the partition's data.
            keys = live_keys(self.store, self.snapshot, self.key_columns, {partition})
            if keys.num_rows:
                h = hash_codes([keys.column(k) for k in self.key_columns], self.key_types)
                b = keys.column(BUCKET).to_numpy()
                for bucket in np.unique(b).tolist():
                    restored[int(bucket)] = sorted_unique(h[b == bucket])
        if restored:
            hashes = np.concatenate(list(restored.values()))
            buckets = np.concatenate([np.full(len(v), k, dtype=np.int32) for k, v in restored.items()])
            if len(restored) > 1:  # one bucket's hashes are sorted already
                # Not a stable sort: 50 ms per million hashes against 250 ms; the order is still
                # the same in every writer that loads the same files.
                order = np.argsort(hashes)
                hashes, buckets = hashes[order], buckets[order]
        else:
            hashes, buckets = np.empty(0, np.int32), np.empty(0, np.int32)
        counts = {b: len(v) for b, v in restored.items()}
        return _PartitionIndex(hashes, buckets, counts, restored, files)

    def assign(self, partition: bytes, hashes: np.ndarray, assigner: int = 0) -> np.ndarray:
        """Buckets for rows of one partition, given their key hashes (all routed to ``assigner``)."""
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
            rem = assigner % self.assigners
            if self.shared:
                new_buckets = open_buckets(
                    idx.counts, np.full(len(uniq), rem, dtype=np.int64), uniq, self.assigners,
                    self.target, self.max_buckets,
                )
            else:
                new_buckets = self._fill(idx, assigner, rem, uniq)
            for b in np.unique(new_buckets).tolist():
                idx.added.setdefault(int(b), []).append(uniq[new_buckets == b])
            # The new hashes go into the sorted map by insertion (no re-sort of the whole map).
            srt = np.argsort(uniq)
            at = np.searchsorted(idx.hashes, uniq[srt])
            idx.hashes = np.insert(idx.hashes, at, uniq[srt])
            idx.buckets = np.insert(idx.buckets, at, new_buckets[srt])
            out[~known] = idx.buckets[np.searchsorted(idx.hashes, miss)]
        return out

    def _fill(self, idx: _PartitionIndex, assigner: int, rem: int, uniq: np.ndarray) -> np.ndarray:
        """A single writer's fill: this assigner's buckets, counting the keys it already placed."""
        counts = idx.by_assigner.get(assigner)
        if counts is None:
            counts = idx.by_assigner[assigner] = {
                b: c for b, c in idx.counts.items() if b % self.assigners == rem
            }
        return fill_buckets(
            counts, len(uniq), self.target, self.max_buckets, uniq, family=(self.assigners, rem)
        )

    def route(self, table: pa.Table) -> tuple[pa.Table, np.ndarray]:
        ids, parts = partition_ids(table, self.store)
        hashes = hash_codes([table.column(k) for k in self.key_columns], self.key_types)
        buckets = np.empty(table.num_rows, dtype=np.int32)
        for i, partition in enumerate(parts):
            rows = np.nonzero(ids == i)[0]
            if self.channels == 1:
                buckets[rows] = self.assign(partition, hashes[rows])
                continue
            # Several assigners, as a Paimon job with dynamic-bucket.assigner-parallelism: the
            # assigner of a row is Java's BucketAssigner.computeAssigner of the partition's and
            # the key's hashes; each assigner opens only its own bucket ids.
            part_hash = self._partition_hash(table, int(rows[0]))
            assigner_ids = lanes_of(hashes[rows], part_hash, self.channels, self.assigners)
            for a in np.unique(assigner_ids).tolist():
                sub = rows[assigner_ids == a]
                buckets[sub] = self.assign(partition, hashes[sub], int(a))
        return table, buckets

    def _partition_hash(self, table: pa.Table, row: int) -> int:
        """Java's ``BinaryRow.hashCode`` of the partition of ``table``'s row ``row``."""
        if not self.store.partition_keys:
            return EMPTY_ROW_HASH
        first = pa.array([row])
        columns = [table.column(k).take(first) for k in self.store.partition_keys]
        return int(hash_codes(columns, list(self.store.partition_types))[0])

    def index_files(self) -> dict[tuple[bytes, int], IndexFileMeta]:
        """Write the complete HASH file of every bucket that got new keys (the writer forgets them);
        a shared writer writes only the hashes it added (the commit unions them with the bucket's
        committed file: ``engine.write.shared_assignment``)."""
        out: dict[tuple[bytes, int], IndexFileMeta] = {}
        for partition, idx in self._parts.items():
            for bucket, added in idx.added.items():
                if self.shared and idx.base_files:
                    # (a partition without HASH files, its keys read from data, gets full files)
                    out[(partition, bucket)] = self.index.write_hashes(sorted_unique(np.concatenate(added)))
                    self.delta_slots.add((partition, bucket))
                    continue
                restored = idx.restored.get(bucket, np.empty(0, np.int32))
                full = sorted_unique(np.concatenate([restored, *added]))
                out[(partition, bucket)] = self.index.write_hashes(full)
                idx.restored[bucket] = full
            idx.added.clear()
        return out

    def delete_index_files(self, files: Sequence[IndexFileMeta]) -> None:
        for f in files:
            self.index.delete_file(f)


def writer_clustering(store: FileStore) -> list[str] | None:
    """Columns a distributed write must cluster rows by so that no two writers share a key's map.

    Partition-local dynamic buckets: the partition columns (``[]``: a single writer), so each
    partition's buckets and HASH files have one writer. Cross-partition upsert: ``[]``, one
    writer for the table, because every writer loads the whole table's keys (the global index)
    and fills buckets from its own counts: several writers would each read all keys and each
    fill the same buckets past ``dynamic-bucket.target-row-num``. None: any split of the rows
    is fine.
    """
    if not is_dynamic_bucket(store):
        return None
    return [] if is_cross_partition(store) else list(store.partition_keys)
