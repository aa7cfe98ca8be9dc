"""Paimon features dyntable does not honour: refused by name, at read and at write.

One job: decide, from a table's schema and from the data files a snapshot names, whether
dyntable reads (or writes) the table exactly as Paimon does, and otherwise raise
:class:`~engine.errors.UnsupportedTableError` (SQLSTATE 0A000) naming the feature and the Paimon
version that introduced it. A table written by a newer Paimon must never be misread, and a write
here must never damage what that Paimon wrote: a feature dyntable cannot follow is refused
before the first byte is read or written.

Three checks, each cheap (metadata only, no data file is opened):

* :func:`check_readable` — a table option whose effect a reader must apply (data evolution,
  chain tables). Called by every scan plan (batch, incremental, streaming).
* :func:`check_file_readable` — one data file: a partial-column file of a data-evolution table
  (``_WRITE_COLS``) or a format other than Parquet. Called for every file a plan hands a reader.
* :func:`check_writable` — a table option whose invariants a writer must keep (row tracking,
  postpone buckets, thin mode, …), plus everything :func:`check_readable` refuses. Called by
  the write builder, every commit (data writes, compaction, maintenance commits) and the
  maintenance operations that delete files. :func:`check_appendable` is its form for a plain
  append (new rows, no overwrite): row tracking passes there, because the commit gives the new
  files their row ids (``engine.commit_rebase.assign_row_ids``).

What dyntable reads as Paimon does (and so is *not* refused at read): row-tracking tables
(their files hold whole rows; the ``_ROW_ID`` column is not offered), postpone-bucket tables
(their pending ``bucket-postpone`` files are skipped, as Paimon's batch readers skip them until a
postpone compaction), thin-mode files, dense statistics (``_VALUE_STATS_COLS``), 64-bit deletion
vectors, ``deletion-vectors.merge-on-read`` (level 0 is merged), external data paths, VARIANT
columns (a shredded variant is refused by ``engine.files.evolve``). The column types BLOB and
VECTOR are refused when the schema is loaded (``engine.types``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from engine.errors import UnsupportedTableError
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
    return value.strip().lower() != "parquet"


def _postpone(value: str) -> bool:
    return value.strip() == str(POSTPONE_BUCKET)


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


#: Options turning on a feature dyntable does not fully honour. (Those refused at CREATE are in
#: ``engine.option_checks``; a table created by another engine carries them anyway.)
FEATURES: tuple[Feature, ...] = (
    Feature("data-evolution.enabled", _true, "data evolution", "1.3", False,
            "its data files may hold only some columns of a row and rows updated by row id, which "
            "dyntable would return as separate rows"),
    Feature("chain-table.enabled", _true, "chain tables", "1.4", False,
            "its snapshots chain to other tables dyntable does not read"),
    Feature("row-tracking.enabled", _true, "row tracking", "1.3", True,
            "dyntable assigns row ids (_FIRST_ROW_ID, nextRowId) to appended rows only; its "
            "compactions, overwrites and row-level changes would not keep the ids of the rows they "
            "rewrite", appends=True),
    Feature("bucket", _postpone, "postpone bucket mode (bucket = -2)", "1.1", True,
            "dyntable cannot write the pending files of a postpone bucket nor run a postpone compaction"),
    Feature("data-file.thin-mode", _true, "thin mode (data-file.thin-mode)", "1.0", True,
            "dyntable writes primary-key files with their _KEY_ columns, which a thin-mode table's "
            "readers do not expect"),
    Feature("global-index.enabled", _true, "global indexes", "1.4", True,
            "dyntable's writes would not update the table's global indexes, so index lookups would "
            "miss the new rows"),
    Feature("ignore-update-before", _true, "ignore-update-before", "1.3", True,
            "dyntable's writes would keep UPDATE_BEFORE rows this table drops"),
    Feature("record-level.expire-time", _set, "record-level expiration", "0.8", True,
            "dyntable's compactions would keep records this table expires"),
    Feature("file.format", _not_parquet, "data files in a format other than Parquet", None, True,
            "dyntable writes only Parquet data files"),
)


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


def check_writable(schema: TableSchema, table: str, action: str = "write to") -> None:
    """Refuse to write to (commit to, compact, clean up) a table with a feature dyntable does
    not keep; ``action`` words the refusal ("compact", "expire snapshots of", ...).

    Raises:
        UnsupportedTableError: naming the feature and the Paimon version that introduced it.
    """
    active = _active(schema.options)
    if active:
        raise _refusal(active[0], schema.options, table, action)


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


def tracks_row_ids(schema: TableSchema) -> bool:
    """Whether the table has ``row-tracking.enabled`` (its appended files get first row ids)."""
    return _true(str(schema.options.get("row-tracking.enabled", "false")))


def check_file_readable(file: DataFileMeta, table: str) -> None:
    """Refuse a data file dyntable cannot read as Paimon does: a data-evolution file holding only
    some columns (``_WRITE_COLS``, Paimon 1.3), or a file in a format other than Parquet.

    Raises:
        UnsupportedTableError: naming the file and the feature.
    """
    if file.write_cols is not None:
        raise UnsupportedTableError(
            f"cannot read table {table}: data file {file.file_name} holds only the columns "
            f"{list(file.write_cols)} of its rows (_WRITE_COLS: data evolution, Paimon 1.3), which "
            "dyntable does not support. Use Paimon 1.3 or later for this table."
        )
    name = file.file_name
    if not name.endswith(".parquet"):
        fmt = name.rsplit(".", 1)[-1] if "." in name else "unknown"
        raise UnsupportedTableError(
            f"cannot read table {table}: data file {name} is in the '{fmt}' format; dyntable reads "
            "only Parquet data files. Use Paimon for this table."
        )


def skipped_by_readers(bucket: int) -> bool:
    """Whether Paimon's readers skip a file of ``bucket``: the pending files of a postpone-bucket
    table stay invisible until a postpone compaction moves them into real buckets."""
    return bucket == POSTPONE_BUCKET


__all__ = [
    "FEATURES",
    "POSTPONE_BUCKET",
    "Feature",
    "check_file_readable",
    "check_readable",
    "check_writable",
    "skipped_by_readers",
]
