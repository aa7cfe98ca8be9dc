"""Table states read as key-ordered streams, bucket by bucket: the input of diffs that align two or
more states by key (``incremental-between`` diffs, ``merge_branch`` planning).

One job: say whether a state can be read that way, and read it. A primary-key table's split is
read section by section when it is not raw (a raw split's files come in sequence-number order),
and sections follow key order, so each split's stream is sorted by key. Tables without a primary
key (no key order), deletion-vector tables (read file by file, unmerged) and fallback-branch splits
(another table definition) cannot be.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Protocol

import pyarrow as pa

from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.scan.planner import DataSplit
from engine.store import FileStore

__all__ = ["key_ordered_buckets", "reads_in_key_order"]


class _SplitRead(Protocol):
    def read(self, split: DataSplit) -> Iterable[pa.Table]: ...


def reads_in_key_order(store: FileStore, splits: Sequence[DataSplit]) -> bool:
    """Whether ``splits`` of ``store`` can be read as key-ordered streams (module docstring)."""
    return (store.has_primary_key and not uses_deletion_vectors(store)
            and all(s.branch is None for s in splits))


def key_ordered_buckets(
    sides: Sequence[tuple[_SplitRead, Sequence[DataSplit]]],
) -> list[list[list[Iterable[pa.Table]]]]:
    """Per (partition, bucket), in that order: per side (a reader and the splits of one state), the
    key-ordered streams of its splits in the bucket (lazy: nothing is read yet)."""
    groups: dict[tuple[bytes, int], list[list[Iterable[pa.Table]]]] = {}
    for side, (reader, splits) in enumerate(sides):
        for s in splits:
            stream = reader.read(dataclasses.replace(s, raw_convertible=False))
            groups.setdefault((s.partition, s.bucket), [[] for _ in sides])[side].append(stream)
    return [groups[k] for k in sorted(groups)]
