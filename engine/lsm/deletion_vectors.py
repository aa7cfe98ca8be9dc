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


def refuse_change_reads(store: FileStore) -> None:
    """Raise for a batch incremental (``incremental-between``) read of an append table with
    deletion vectors: the range's files would need the DVs of the range's end applied, as Paimon
    does, which is not built. Streaming reads of such tables work (as in Paimon, a snapshot's new
    files are its changes).

    Raises:
        UnsupportedTableError: an append table with ``deletion-vectors.enabled`` true.
    """
    if uses_deletion_vectors(store) and not store.has_primary_key:
        raise UnsupportedTableError(
            f"cannot read incremental changes between snapshots of table {store.paths.root}: it is an "
            f"append table with '{OPTION}' = 'true', and such a range read would have to apply the "
            "deletion vectors of the range's end to the files it returns, which dyntable does not do. "
            "Stream the table instead, or read each snapshot with time travel."
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
