"""Paimon features dyntable does not honour: refused by name, at read and at write.

One job: decide, from a table's schema and from the data files a snapshot names, whether
dyntable reads (or writes) the table exactly as Paimon does, and otherwise raise
:class:`~engine.errors.UnsupportedTableError` (SQLSTATE 0A000) naming the feature and the Paimon
version that introduced it. A table written by a newer Paimon must never be misread, and a write
here must never damage what that Paimon wrote: a feature dyntable cannot follow is refused
before the first byte is read or written.

Three checks, each cheap (metadata only, no data file is opened):

* :func:`check_readable` — a table option whose effect a reader must apply (chain tables).
  Called by every scan plan (batch, incremental, streaming); :func:`check_incremental_readable`
  also refuses data evolution for incremental and streaming reads.
* :func:`check_file_readable` — one data file: a partial-column file of a data-evolution table
  (``_WRITE_COLS``) or a format other than Parquet, ORC and Avro. Called for every file a plan hands a reader.
* :func:`check_writable` — a table option whose invariants a writer must keep (row tracking,
  global indexes, …), plus everything :func:`check_readable` refuses. Called by
  the write builder, every commit (data writes, compaction, maintenance commits) and the
  maintenance operations that delete files. :func:`check_appendable` is its form for a plain
  append (new rows, no overwrite): row tracking passes there, because the commit gives the new
  files their row ids (``engine.commit_rebase.assign_row_ids``); :func:`check_rewritable` is its
  form for compaction, overwrites and row-level changes, which keep row ids too
  (``engine.row_tracking``).

What dyntable reads as Paimon does (and so is *not* refused at read): data-evolution tables in batch
(rows assembled from the files of each row-id range, ``engine.read.data_evolution``; their appends
take row ids as row tracking's do, their compaction merges a range's files into one,
``engine.write.data_evolution_compaction``, and their row-level changes go by row id,
``engine.write.data_evolution_update``), row-tracking tables (their files hold whole rows,
rewritten ones with their rows' ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, listed in ``_WRITE_COLS``),
postpone-bucket tables (their pending ``bucket-postpone`` files are skipped, as Paimon's batch
readers skip them until a postpone compaction; writes go to real buckets,
``engine.write.kv_writer``, and a compaction moves pending files into real buckets first,
``engine.write.postpone_compaction``), dense statistics (``_VALUE_STATS_COLS``), 64-bit deletion
vectors, ``deletion-vectors.merge-on-read`` (level 0 is merged). Read and written as Paimon writes
them: thin-mode files (``data-file.thin-mode``) and external data paths
(``engine.meta.external_paths``); VARIANT columns (a shredded variant is refused by
``engine.files.evolve``). The column types BLOB and VECTOR are refused when the schema is loaded
(``engine.types``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from engine.errors import UnsupportedTableError
from engine.meta.file_formats import FORMATS, format_of, readable
from engine.meta.manifest import DataFileMeta
from engine.schema import TableSchema

#: The bucket number of Paimon's postpone bucket mode (``bucket = -2``), and the bucket its
#: pending files are written to.
POSTPONE_BUCKET = -2


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


def _set(value: str) -> bool:
    return bool(value.strip())


def _not_parquet(value: str) -> bool:
    return value.strip().lower() not in FORMATS


@dataclass(frozen=True)
class Feature:
    """A Paimon table feature, the option that turns it on, and what dyntable can do with it."""

    key: str
    applies: Callable[[str], bool]
    name: str
    since: str | None  # the Paimon version that introduced it (None: Paimon always had it)
    reads: bool  # dyntable reads such a table as Paimon does
    why: str  # what would go wrong (a write, or a read when ``reads`` is False)
    #: plain appends (new rows only, no primary key) keep it: the commit assigns what it needs
    appends: bool = False
    #: compaction, overwrites and row-level changes (DELETE/UPDATE/MERGE) keep it too
    rewrites: bool = False


#: Options turning on a feature dyntable does not fully honour. (Those refused at CREATE are in
#: ``engine.option_checks``; a table created by another engine carries them anyway.)
FEATURES: tuple[Feature, ...] = (
    Feature("data-evolution.enabled", _true, "data evolution", "1.3", True,
            "dyntable's overwrites and branch merges would not keep the row-id ranges its files "
            "share (appends, compaction and row-level changes by row id do)", appends=True),
    Feature("chain-table.enabled", _true, "chain tables", "1.4", False,
            "its snapshots chain to other tables dyntable does not read"),
    Feature("row-tracking.enabled", _true, "row tracking", "1.3", True,
            "dyntable keeps row ids through appends, overwrites, compaction and row-level changes, "
            "but merge_branch and remove_missing_files would not keep the ids of the rows they "
            "carry over", appends=True, rewrites=True),
    Feature("global-index.enabled", _true, "global indexes", "1.4", True,
            "dyntable's writes would not update the table's global indexes, so index lookups would "
            "miss the new rows"),
    Feature("ignore-update-before", _true, "ignore-update-before", "1.3", True,
            "dyntable's writes would keep UPDATE_BEFORE rows this table drops"),
    Feature("record-level.expire-time", _set, "record-level expiration", "0.8", True,
            "dyntable's compactions would keep records this table expires"),
    Feature("file.format", _not_parquet, "data files in a format other than Parquet, ORC and Avro", None,
            True,
            "dyntable reads and writes only Parquet, ORC and Avro data files"),
)


#: The features a rewrite that keeps every row id keeps (a data-evolution compaction).
ROW_ID_FEATURES = ("data-evolution.enabled", "row-tracking.enabled")


def _active(options: Mapping[str, str]) -> list[Feature]:
    return [f for f in FEATURES if f.key in options and f.applies(str(options[f.key]))]


def _refusal(feature: Feature, options: Mapping[str, str], table: str, action: str) -> UnsupportedTableError:
    value = f"'{feature.key}' = '{options[feature.key]}'"
    origin = f"{value}, Paimon {feature.since}" if feature.since else value
    use = f"Paimon {feature.since} or later" if feature.since else "Paimon"
    return UnsupportedTableError(
        f"cannot {action} table {table}: it uses {feature.name} ({origin}), which dyntable does not "
        f"support: {feature.why}. Use {use} for this table."
    )


def check_readable(schema: TableSchema, table: str, action: str = "read") -> None:
    """Refuse to read a table whose options need a reader dyntable does not have. Maintenance
    that deletes files (expiration, orphan cleanup) asks this too, with its own ``action``: it is
    safe exactly when dyntable sees every file the table references, that is when it reads it.

    Raises:
        UnsupportedTableError: naming the feature and the Paimon version that introduced it.
    """
    for feature in _active(schema.options):
        if not feature.reads:
            raise _refusal(feature, schema.options, table, action)


def check_writable(
    schema: TableSchema, table: str, action: str = "write to", *, keeps: Collection[str] = ()
) -> None:
    """Refuse to write to (commit to, compact, clean up) a table with a feature dyntable does
    not keep; ``action`` words the refusal ("compact", "expire snapshots of", ...). ``keeps``: the
    option keys of the features the caller keeps (a data-evolution compaction keeps row tracking
    and data evolution).

    Raises:
        UnsupportedTableError: naming the feature and the Paimon version that introduced it.
    """
    active = [f for f in _active(schema.options) if f.key not in keeps]
    if active:
        raise _refusal(active[0], schema.options, table, action)


def check_incremental_readable(schema: TableSchema, table: str) -> None:
    """Refuse an incremental or streaming read of a table whose changes dyntable cannot read as
    changes: everything :func:`check_readable` refuses, and data evolution (a snapshot that
    rewrote some columns by row id adds files that hold only those columns, not new rows).

    Raises:
        UnsupportedTableError: naming the feature and the Paimon version that introduced it.
    """
    check_readable(schema, table)
    if _true(str(schema.options.get("data-evolution.enabled", "false"))):
        raise UnsupportedTableError(
            f"cannot read the changes of table {table} incrementally or as a stream: it uses data "
            "evolution ('data-evolution.enabled' = 'true', Paimon 1.3), whose updates by row id "
            "add files holding only the rewritten columns, which dyntable does not read as changes. "
            "Read it in batch (any snapshot), or use Paimon 1.3 or later for this read."
        )


def check_appendable(schema: TableSchema, table: str, action: str = "write to") -> None:
    """Refuse to append rows to a table with a feature plain appends would not keep: as
    :func:`check_writable`, except that row tracking is kept by appends to a table without a
    primary key (``FileStoreCommit`` gives the new files their first row ids, as Paimon's commit
    does).

    Raises:
        UnsupportedTableError: naming the feature and the Paimon version that introduced it.
    """
    for feature in _active(schema.options):
        if not feature.appends or schema.primary_keys:
            raise _refusal(feature, schema.options, table, action)


def check_rewritable(
    schema: TableSchema, table: str, action: str = "write to", *, keeps: Collection[str] = ()
) -> None:
    """Refuse to rewrite rows (compaction, overwrite, DELETE/UPDATE/MERGE, their commits) of a
    table with a feature such a rewrite would not keep: as :func:`check_writable`, except that row
    tracking is kept on tables without a primary key — rewritten rows carry their ``_ROW_ID`` and
    ``_SEQUENCE_NUMBER`` into the new files (``engine.row_tracking``), new rows take new ids at
    commit, as in Paimon. ``keeps``: as :func:`check_writable`'s.

    Raises:
        UnsupportedTableError: naming the feature and the Paimon version that introduced it.
    """
    for feature in _active(schema.options):
        if feature.key in keeps:
            continue
        if not feature.rewrites or schema.primary_keys:
            raise _refusal(feature, schema.options, table, action)


def tracks_row_ids(schema: TableSchema) -> bool:
    """Whether the table has ``row-tracking.enabled`` (its appended files get first row ids)."""
    return _true(str(schema.options.get("row-tracking.enabled", "false")))


def check_file_readable(file: DataFileMeta, table: str, *, partial_columns: bool = False) -> None:
    """Refuse a data file dyntable cannot read as Paimon does: a file in a format other than
    Parquet, ORC and Avro, or (unless ``partial_columns``: a batch read of a data-evolution table, which
    assembles rows from the files of a row-id range, ``engine.read.data_evolution``) a file
    holding only some columns (``_WRITE_COLS``, Paimon 1.3).

    Raises:
        UnsupportedTableError: naming the file and the feature.
    """
    if file.write_cols is not None and not partial_columns and "_ROW_ID" not in file.write_cols:
        raise UnsupportedTableError(
            f"cannot read table {table}: data file {file.file_name} holds only the columns "
            f"{list(file.write_cols)} of its rows (_WRITE_COLS: data evolution, Paimon 1.3), which "
            "dyntable does not support. Use Paimon 1.3 or later for this table."
        )
    name = file.file_name
    if not readable(name):
        fmt = format_of(name) or "unknown"
        raise UnsupportedTableError(
            f"cannot read table {table}: data file {name} is in the '{fmt}' format; dyntable reads "
            "Parquet, ORC and Avro data files. Use Paimon for this table."
        )


def skipped_by_readers(bucket: int) -> bool:
    """Whether Paimon's readers skip a file of ``bucket``: the pending files of a postpone-bucket
    table stay invisible until a postpone compaction moves them into real buckets."""
    return bucket == POSTPONE_BUCKET


__all__ = [
    "FEATURES",
    "POSTPONE_BUCKET",
    "ROW_ID_FEATURES",
    "Feature",
    "check_file_readable",
    "check_incremental_readable",
    "check_readable",
    "check_rewritable",
    "check_writable",
    "skipped_by_readers",
]
