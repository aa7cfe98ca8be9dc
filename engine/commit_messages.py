"""What writers hand the commit and what it answers: commit messages, the overwrite intent, the
commit result, and deleting the files of messages that were never committed.

Writers, compaction and the Spark tasks build :class:`CommitMessage` values (picklable) without
depending on the commit pipeline itself (``engine.commit``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine.meta.binary_row import deserialize_row
from engine.meta.index_files import IndexFileMeta, IndexStore
from engine.meta.manifest import DataFileMeta
from engine.store import FileStore

__all__ = [
    "CommitMessage", "CommitResult", "OverwriteShorthand", "OverwriteSpec", "compaction_outputs",
    "delete_data_files", "delete_uncommitted",
]


@dataclass(frozen=True, slots=True)
class CommitMessage:
    """What one writer task produced for one (partition, bucket); picklable.

    ``sequence_base``: the snapshot whose bucket state the new files' sequence numbers continue
    (None when unknown); the commit re-bases them if other writers committed since.
    ``new_index_files``: dynamic-bucket tables: the bucket's complete new HASH index file.
    ``key_claims``: cross-partition upsert tables written by independent tasks: the 64-bit hashes
    of the keys this task left in ``partition`` (``engine.write.shared_assignment``), else empty.
    ``hash_index_delta``: its HASH file holds only the hashes this task added (a shared writer's);
    the commit unions it with the bucket's committed file before publishing.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    sequence_base: int | None = None
    new_index_files: tuple[IndexFileMeta, ...] = ()
    key_claims: bytes = b""
    hash_index_delta: bool = False

    @property
    def is_empty(self) -> bool:
        return not (
            self.new_files
            or self.changelog_files
            or self.compact_before
            or self.compact_after
            or self.compact_changelog
            or self.new_index_files
        )


def delete_data_files(
    store: FileStore, partition: bytes, bucket: int, files: Sequence[DataFileMeta]
) -> None:
    if not files:
        return
    part_dir = store.partition_dir(deserialize_row(partition, store.partition_types))
    for f in files:
        store.io.delete(store.paths.data_file(part_dir, bucket, f.file_name, f.external_path))
        for extra in f.extra_files:  # its separate file index, written with it
            store.io.delete(store.paths.extra_file(part_dir, bucket, extra, f.external_path))


def compaction_outputs(m: CommitMessage) -> list[DataFileMeta]:
    """Files a compaction wrote: its changelog and its outputs, except upgrades (moved, not written)."""
    upgraded = {f.file_name for f in m.compact_before}
    return [*m.compact_changelog, *(f for f in m.compact_after if f.file_name not in upgraded)]


def delete_uncommitted(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Delete the files that uncommitted messages wrote (nothing refers to them).

    A compaction "upgrade" moves an existing file to another level without rewriting it; such a
    file is live and is kept.
    """
    for m in messages:
        delete_data_files(
            store, m.partition, m.bucket, [*m.new_files, *m.changelog_files, *compaction_outputs(m)]
        )
        if m.new_index_files:
            index = IndexStore(store.io, store.paths)
            for f in m.new_index_files:
                index.delete_file(f)


@dataclass(frozen=True, slots=True)
class OverwriteSpec:
    """Which live files an overwrite replaces: the one overwrite type from a statement to the commit.

    ``static``: partition column → value; every partition matching all of them is replaced
    (empty mapping = the whole table). ``dynamic``: only partitions that receive new rows are
    replaced (Spark's dynamic partition overwrite). ``partitions``: each of the listed full
    partition specs is replaced, even if it receives no rows (DELETE/UPDATE/MERGE rewrites).
    A write that replaces nothing (an append) has no OverwriteSpec at all (``None``).
    """

    static: Mapping[str, object] = field(default_factory=dict)
    dynamic: bool = False
    # exactly these partitions (row-level rewrites)
    partitions: tuple[Mapping[str, object], ...] | None = None
    # exactly these data files, by name (row-level rewrites of append tables)
    files: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # One intent per spec: with two, which one wins would be an accident of the commit's code.
        intents = [name for name, set_ in (("static", bool(self.static)), ("dynamic", self.dynamic),
                                           ("partitions", self.partitions is not None),
                                           ("files", self.files is not None)) if set_]
        if len(intents) > 1:
            from engine.errors import InvalidArgumentError

            raise InvalidArgumentError(f"an overwrite has one intent, not {' and '.join(intents)}")

    @classmethod
    def of(cls, shorthand: OverwriteShorthand) -> OverwriteSpec | None:
        """The spec of ``Table.write_arrow``'s shorthand: False/None (append), True (everything),
        ``"dynamic"``, a static partition spec, or a list of full partition specs.

        Raises:
            InvalidArgumentError: anything else.
        """
        if shorthand is None or shorthand is False:
            return None
        if isinstance(shorthand, OverwriteSpec):
            return shorthand
        if shorthand is True:
            return cls()
        if shorthand == "dynamic":
            return cls(dynamic=True)
        if isinstance(shorthand, Mapping):
            return cls(static=dict(shorthand))
        if isinstance(shorthand, Sequence) and not isinstance(shorthand, str):
            return cls(partitions=tuple(dict(p) for p in shorthand))
        from engine.errors import InvalidArgumentError

        raise InvalidArgumentError(
            f"overwrite must be False, True, 'dynamic' or a partition spec, not {shorthand!r}"
        )


#: What ``Table.write_arrow`` / ``Table.commit`` accept for ``overwrite`` (see :meth:`OverwriteSpec.of`).
OverwriteShorthand = (
    OverwriteSpec | bool | Literal["dynamic"] | Mapping[str, object] | Sequence[Mapping[str, object]] | None
)


@dataclass(frozen=True, slots=True)
class CommitResult:
    """The snapshots a commit published and the rows its new data files hold (what a write
    reports as rows written, taken from the commit's own messages, never re-read from manifests)."""

    snapshot_ids: tuple[int, ...]
    rows_added: int = 0

    @property
    def last_snapshot_id(self) -> int | None:
        return self.snapshot_ids[-1] if self.snapshot_ids else None

    def __add__(self, other: CommitResult) -> CommitResult:
        return CommitResult(self.snapshot_ids + other.snapshot_ids, self.rows_added + other.rows_added)
