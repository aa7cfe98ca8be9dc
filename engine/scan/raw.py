"""Which planned splits need no merge, so any Parquet reader can return their files as they are.

A split is *raw readable* when its rows are exactly the union of its files' rows, after at most
dropping retraction rows (``-U``/``-D``) file by file:

* append tables: always (files are concatenated);
* primary-key tables: when the bucket's files form one sorted run — no two files overlap by key
  (``DataSplit.raw_convertible``), so a key lives in one file only and no merge engine is needed.
  ``first-row`` tables read only levels >= 1 (as the merging reader does);
* ``$ro`` splits (top-level files only, unmerged by definition).

It is not raw readable when the bucket holds overlapping runs, when the table uses the
count layout (rows are counts to expand), or a file is not Parquet or names its columns with
``write_cols`` (data evolution), or (data evolution) a row-id range is held by several files.

Deletion-vector tables: a split is raw readable when none of its files (above level 0, for a
primary-key table: Paimon's batch reads skip level 0 of DV tables and never merge) has a deletion
vector; a split with any DV goes to the Python reader, which applies them as row masks. A plain
Parquet reader must never read a file that has a DV.

Retractions: Paimon counts them in ``deleteRowCount``, but a 0 is no proof (pypaimon writes 0
for files holding ``-D`` rows). A file is trusted to hold none only when it sits on the top
level with a 0 count — the level a full compaction writes, and which every compaction
(Paimon's and dyntable's) writes with retractions dropped. Every other file of a primary-key
table is read with a ``_VALUE_KIND`` filter (keep ``+I`` and ``+U``), exactly as the merging
reader's raw path does.

Paimon's rule (``MergeTreeSplitGenerator.splitForBatch``) is narrower: a bucket is raw only when
no file is on level 0 and no file counts deletes (and all files share one level, or the table
uses deletion vectors or ``first-row``), because Paimon's raw read does not look at the kinds.
Reading the kinds makes a single level-0 run safe too, and keeps a lying 0 count harmless.

Engine only: the Spark side (sqlext) turns the result into ``spark.read.parquet`` calls.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.count_layout import is_count_layout
from engine.files.reader import data_file_path
from engine.lsm.deletion_vectors import batch_reads_skip_level0, uses_deletion_vectors
from engine.merge.config import MergeConfig
from engine.meta.manifest import DataFileMeta
from engine.scan.planner import DataSplit
from engine.store import FileStore

#: ``_VALUE_KIND`` bytes of the rows a batch read keeps (+I, +U).
ADD_KINDS: tuple[int, ...] = (0, 2)


@dataclass(frozen=True, slots=True)
class RawFile:
    """One data file to read as it is."""

    path: str
    schema_id: int
    may_retract: bool  # may hold -U/-D rows: keep only ADD_KINDS (primary-key files only)
    row_count: int


@dataclass(frozen=True, slots=True)
class RawGroup:
    """Files that one Parquet read can return together: same schema version, same filtering."""

    schema_id: int
    may_retract: bool
    paths: tuple[str, ...]
    row_count: int


def _first_row(store: FileStore) -> bool:
    if not store.has_primary_key:
        return False
    return MergeConfig.from_options(store.schema.options, store.schema.primary_keys).engine == "first-row"


def table_reads_raw(store: FileStore) -> bool:
    """Whether any split of the table can be raw readable (the table-wide conditions)."""
    return not is_count_layout(store.schema)


def raw_files(
    store: FileStore, split: DataSplit, *, read_optimized: bool = False
) -> tuple[RawFile, ...] | None:
    """The files of ``split`` to read as they are, or None when the split needs the merging reader.

    Args:
        store: the table (the store the split was planned with).
        split: a split of ``TableScan.plan()`` (or of ``read_optimized_splits``).
        read_optimized: the split comes from ``$ro`` (its files are never merged).

    Returns:
        The files, each with its path, schema id and whether retractions must be filtered out;
        an empty tuple when every file is skipped (``first-row`` level 0); None when the split
        must be merged (overlapping runs) or the table or a file cannot be read raw.
    """
    if not table_reads_raw(store):
        return None
    pk = store.has_primary_key
    dv = uses_deletion_vectors(store)
    if pk and not (split.raw_convertible or read_optimized or dv):
        return None
    if not pk and not split.raw_convertible:
        return None  # data evolution: a row-id group's columns are assembled from several files
    files: Sequence[DataFileMeta] = split.files
    if pk and ((dv and batch_reads_skip_level0(store)) or _first_row(store)):
        files = [f for f in files if f.level > 0]
    if pk and dv and not (split.raw_convertible or read_optimized) and any(f.level == 0 for f in files):
        return None  # deletion-vectors.merge-on-read: level 0 is merged with the levels above
    if dv and any(split.deletion_file(f.file_name) is not None for f in files):
        return None  # the Python reader applies the DVs
    if any(not _is_plain_parquet(f) for f in files):
        return None
    top = store.options.num_levels - 1
    part_dir = store.partition_dir(split.partition_values)
    return tuple(
        RawFile(
            data_file_path(store, part_dir, split.bucket, f),
            f.schema_id,
            pk and not (f.level == top and f.delete_row_count == 0),
            f.row_count,
        )
        for f in files
    )


def _is_plain_parquet(f: DataFileMeta) -> bool:
    return f.file_name.endswith(".parquet") and f.write_cols is None


def classify_raw(
    store: FileStore, splits: Iterable[DataSplit], *, read_optimized: bool = False
) -> tuple[list[RawFile], list[DataSplit]]:
    """Split a plan into (files to read raw, splits that need the merging reader)."""
    raw: list[RawFile] = []
    merge: list[DataSplit] = []
    for split in splits:
        files = raw_files(store, split, read_optimized=read_optimized)
        if files is None:
            merge.append(split)
        else:
            raw.extend(files)
    return raw, merge


def group_raw_files(files: Iterable[RawFile]) -> list[RawGroup]:
    """Raw files grouped by (schema id, retraction filter), in a stable order."""
    groups: dict[tuple[int, bool], list[RawFile]] = defaultdict(list)
    for f in files:
        groups[(f.schema_id, f.may_retract)].append(f)
    return [
        RawGroup(sid, retract, tuple(f.path for f in group), sum(f.row_count for f in group))
        for (sid, retract), group in sorted(groups.items())
    ]


def needs_merge(store: FileStore, split: DataSplit, *, read_optimized: bool = False) -> bool:
    """True when ``split`` must go through the merging reader (the complement of :func:`raw_files`)."""
    return raw_files(store, split, read_optimized=read_optimized) is None
