"""Dynamic buckets written by many tasks at once, none of which sees the others' rows.

One job: the rules that let several writers of one commit assign dynamic buckets without a
shuffle, and the commit-side step that joins what they produced.

A DataFrame handed to ``df.write.format("dyntable")`` arrives in however many partitions it
has; Spark's Python data source API lets the source neither repartition it nor ask for a
distribution. So every task of such a write assigns buckets by rules that give every task the
same answer for the same key:

* **Frozen base.** Every task reads the same snapshot (the one the job pinned when it started):
  a key that snapshot holds goes to the bucket its HASH index (or, cross-partition, its live row)
  says, whichever task sees it.
* **Lanes.** A new key's lane is chosen from the hashes of its partition and key as Paimon's
  Spark writer chooses an assigner (``dynamic-bucket.assigner-parallelism`` lanes; Spark writes
  default it to the job's parallelism, as Paimon does);
  lane *i* of *A* uses bucket ids ``b % A == i``. All new keys of a lane in one commit go to the
  lane's open bucket *as of the base snapshot*: its lowest-id bucket below
  ``dynamic-bucket.target-row-num`` keys, else its smallest unused id. The choice depends on the
  key and the base only, so two tasks holding the same new key put it in the same bucket.
* **Union at commit.** Tasks write, per bucket they added keys to, a HASH file of only the hashes
  they added; :func:`merge_task_messages` unions them with the bucket's committed HASH file into
  one complete file (the commit reads each bucket's file once, not once per task) and refuses,
  before anything is published, if one hash went to two buckets of a partition (a writer that
  broke the rules above).
* **Cross-partition upsert.** A key has one partition. Within a task rows of one key apply in
  input order as in a single writer. Across tasks input order is undefined, so each task claims
  the partition each of its keys ends in (64-bit key hashes); the commit refuses, before
  publishing, a key claimed for two partitions (the same key written to different partitions by
  different tasks). Repartitioning the DataFrame by the primary key avoids the refusal.

What this costs against a single writer: a lane's open bucket may grow past
``target-row-num`` within one commit (the next commit opens the next bucket), because no task
knows how many new keys the others hold.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from engine.commit_messages import CommitMessage
from engine.errors import InvalidArgumentError
from engine.fileindex.hashing import hash64
from engine.meta.index_files import HASH_INDEX, IndexFileMeta, IndexStore, hash_entries, sorted_unique
from engine.store import FileStore

_MIX = np.uint64(0x9E3779B97F4A7C15)
_MAX_BUCKETS = 32767  # bucket ids are Java shorts in the HASH index map


def lanes_of(key_hashes: np.ndarray, partition_hash: int, channels: int, assigners: int) -> np.ndarray:
    """The assigner of every key of one partition: Java's ``BucketAssigner.computeAssigner`` of
    the partition's and the keys' hashes (0 .. channels-1). Its lane, the family of bucket ids it
    opens, is the assigner modulo ``assigners``."""
    if channels == 1:
        return np.zeros(len(key_hashes), dtype=np.int64)
    start = abs(int(np.fmod(partition_hash, channels)))
    spread = np.abs(np.fmod(key_hashes.astype(np.int64), assigners))
    return (start + spread) % channels


def open_buckets(
    base_counts: dict[int, int],
    lanes: np.ndarray,
    key_hashes: np.ndarray,
    assigners: int,
    target: int,
    max_buckets: int | None,
    hard_limit: int = _MAX_BUCKETS,
) -> np.ndarray:
    """The bucket of every new key of one partition, from the base snapshot's key counts only.

    A lane's open bucket: its lowest-id bucket with fewer than ``target`` keys, else the smallest
    id of its family (``b % assigners == lane``) the partition does not use. Past
    ``max_buckets`` new keys spread over the lane's buckets (all buckets if it has none) by hash.
    """
    out = np.empty(len(lanes), dtype=np.int32)
    limit = hard_limit if max_buckets is None else min(max_buckets, hard_limit)
    for lane in np.unique(lanes).tolist():
        rows = lanes == lane
        own = sorted(b for b in base_counts if b % assigners == lane)
        room = [b for b in own if base_counts[b] < target]
        if room:
            out[rows] = room[0]
            continue
        candidate = int(lane)
        while candidate in base_counts:
            candidate += assigners
        if candidate < limit:
            out[rows] = candidate
            continue
        if max_buckets is None:
            raise InvalidArgumentError(
                f"a partition of this dynamic-bucket table needs more than {hard_limit} buckets; "
                f"raise 'dynamic-bucket.target-row-num' (now {target})"
            )
        existing = np.array(own or sorted(base_counts), dtype=np.int64)
        out[rows] = existing[np.abs(key_hashes[rows].astype(np.int64)) % len(existing)]
    return out


def key_hash64(keys: pa.Table) -> np.ndarray:
    """A 64-bit hash of every row's key (the columns of ``keys``, never null), for claims."""
    out = np.zeros(keys.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in keys.column_names:
            out = out * _MIX ^ hash64(keys.column(name))
    return out


def encode_claims(hashes: np.ndarray) -> bytes:
    return sorted_unique(hashes.astype(np.uint64)).tobytes()


def merge_task_messages(
    store: FileStore, messages: Sequence[CommitMessage]
) -> tuple[list[CommitMessage], list[IndexFileMeta]]:
    """Join the messages of independent tasks before a commit.

    Returns the messages with one HASH file per (partition, bucket) (a union written for buckets
    several tasks touched) and the per-task HASH files the union replaced (to delete once the
    commit is published; :func:`delete_replaced` does it). Messages of a single writer come back
    unchanged, with nothing written.

    Raises:
        InvalidArgumentError: a key claimed for two partitions, or one hash in two buckets of a
            partition; every file of ``messages`` is deleted first (nothing was published).
    """
    messages = list(messages)
    _check_claims(store, messages)
    slots: dict[tuple[bytes, int], list[IndexFileMeta]] = defaultdict(list)
    deltas: set[tuple[bytes, int]] = set()
    for m in messages:
        for f in m.new_index_files:
            if f.index_type == HASH_INDEX:
                slots[(m.partition, m.bucket)].append(f)
                if m.hash_index_delta:
                    deltas.add((m.partition, m.bucket))
    todo = {slot for slot, files in slots.items() if len(files) > 1 or slot in deltas}
    if not todo:
        return messages, []
    index = IndexStore(store.io, store.paths, store.options.manifest_compression)
    latest = store.snapshots.latest()
    committed = {(e.partition, e.bucket): e.file
                 for e in hash_entries(index.read_manifest(latest.index_manifest if latest else None))}
    hashes = {}
    for slot in slots:  # every file this commit writes, so the check below sees all of them
        parts = [index.read_hashes(f) for f in slots[slot]]
        if slot in deltas and slot in committed:
            parts.append(index.read_hashes(committed[slot]))
        hashes[slot] = sorted_unique(np.concatenate(parts))
    _check_one_bucket_per_hash(store, messages, hashes)
    merged: dict[tuple[bytes, int], IndexFileMeta] = {}
    replaced: list[IndexFileMeta] = []
    for slot in todo:
        merged[slot] = index.write_hashes(hashes[slot])
        replaced.extend(slots[slot])
    out = []
    placed: set[tuple[bytes, int]] = set()
    for m in messages:
        slot = (m.partition, m.bucket)
        if slot not in merged:
            out.append(m)
            continue
        others = tuple(f for f in m.new_index_files if f.index_type != HASH_INDEX)
        hash_file = () if slot in placed else (merged[slot],)
        placed.add(slot)
        out.append(dataclasses.replace(m, new_index_files=others + hash_file, hash_index_delta=False))
    return out, replaced


def delete_replaced(store: FileStore, files: Sequence[IndexFileMeta]) -> None:
    index = IndexStore(store.io, store.paths)
    for f in files:
        index.delete_file(f)


def _refuse(store: FileStore, messages: Sequence[CommitMessage], text: str) -> None:
    from engine.commit_messages import delete_uncommitted

    delete_uncommitted(store, messages)
    raise InvalidArgumentError(text)


def _check_claims(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Refuse a key that tasks of one commit left in two partitions (cross-partition upsert)."""
    claimed = [(m.partition, np.frombuffer(m.key_claims, dtype=np.uint64)) for m in messages if m.key_claims]
    ids: dict[bytes, int] = {}
    for p, _ in claimed:
        ids.setdefault(p, len(ids))
    if len(ids) < 2:
        return
    keys = np.concatenate([h for _, h in claimed])
    parts = np.concatenate([np.full(len(h), ids[p], dtype=np.int64) for p, h in claimed])
    order = np.lexsort((parts, keys))
    keys, parts = keys[order], parts[order]
    other_part = (keys[1:] == keys[:-1]) & (parts[1:] != parts[:-1])
    if other_part.any():
        count = int(len(sorted_unique(keys[1:][other_part])))
        _refuse(store, messages,
                f"{count} primary key(s) were written to different partitions by different tasks of one "
                f"write into the cross-partition upsert table {store.paths.root}; the tasks cannot tell "
                "which row came last. Repartition the input by the primary key (for example "
                "df.repartition(*primary_key_columns)) so each key's rows reach one task. Nothing was "
                "committed.")


def _check_one_bucket_per_hash(
    store: FileStore, messages: Sequence[CommitMessage], hashes: dict[tuple[bytes, int], np.ndarray]
) -> None:
    by_partition: dict[bytes, list[np.ndarray]] = defaultdict(list)
    for (partition, _bucket), h in hashes.items():
        by_partition[partition].append(h)
    for sets in by_partition.values():
        if len(sets) < 2:
            continue
        every = np.sort(np.concatenate(sets))
        twice = sorted_unique(every[1:][every[1:] == every[:-1]])
        if len(twice):
            _refuse(store, messages,
                    f"writers of one commit put {len(twice)} key hash(es) of a partition of "
                    f"{store.paths.root} into two buckets; nothing was committed")
