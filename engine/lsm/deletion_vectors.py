"""Which tables use Paimon deletion vectors, and the guard for what dyntable does not do on them.

With ``deletion-vectors.enabled = true`` Paimon marks superseded and deleted rows of data files
in ``DELETION_VECTORS`` index files. dyntable reads such tables as Paimon's batch readers do
(``engine.read.split_reader``: primary-key tables skip level 0 and read every other file without
merging, minus its DV; append tables read every file minus its DV).

Primary-key tables are written and compacted with their DVs maintained
(``engine.write.kv_deletion_vectors``), and their change reads are those of any primary-key table
(level-0 deltas or changelog files, which DVs never touch). Append tables with DVs are guarded
here until their writer maintains DVs: a write or compaction there would leave DVs that no longer
match the files, and a change read would have to turn DVs into row changes.
"""

from __future__ import annotations

from engine.errors import UnsupportedTableError
from engine.store import FileStore

OPTION = "deletion-vectors.enabled"


def uses_deletion_vectors(store: FileStore) -> bool:
    """Whether the table has ``deletion-vectors.enabled = true``."""
    return str(store.schema.options.get(OPTION, "false")).strip().lower() == "true"


def refuse_deletion_vectors(store: FileStore, action: str) -> None:
    """Raise for an append table with deletion vectors (primary-key tables maintain them).

    Args:
        store: the table.
        action: what was attempted ("write or compact", "compact", ...), for the message.

    Raises:
        UnsupportedTableError: an append table with ``deletion-vectors.enabled`` true.
    """
    if uses_deletion_vectors(store) and not store.has_primary_key:
        raise UnsupportedTableError(
            f"cannot {action} table {store.paths.root}: it is an append table with '{OPTION}' = 'true', "
            "and dyntable reads such tables but does not write their deletion vectors (a write or "
            "compaction here would bring deleted rows back, or leave stale deletion vectors for Paimon). "
            "Write to this table with Apache Paimon, or copy it into a table without deletion vectors."
        )


def refuse_change_reads(store: FileStore) -> None:
    """Raise for a streaming or incremental read of an append table with deletion vectors.

    Raises:
        UnsupportedTableError: an append table with ``deletion-vectors.enabled`` true.
    """
    if uses_deletion_vectors(store) and not store.has_primary_key:
        raise UnsupportedTableError(
            f"cannot stream or read incremental changes of table {store.paths.root}: it is an append "
            f"table with '{OPTION}' = 'true', and dyntable reads such tables only as batch snapshots (a "
            "change read would have to turn deletion vectors into row changes, which it does not). Read "
            "a snapshot instead, e.g. with time travel, or stream it with Apache Paimon."
        )


def refuse_renaming_files(store: FileStore, action: str) -> None:
    """Raise for an operation that gives data files new names in a table with deletion vectors:
    a DV names its data file, so the renamed file would lose its deleted rows' marks.

    Raises:
        UnsupportedTableError: ``deletion-vectors.enabled`` is true.
    """
    if uses_deletion_vectors(store):
        raise UnsupportedTableError(
            f"cannot {action} table {store.paths.root}: it has '{OPTION}' = 'true', and its deletion "
            "vectors name data files by their file names, which this operation changes (deleted rows "
            "would come back). Copy the table into one without deletion vectors first."
        )
