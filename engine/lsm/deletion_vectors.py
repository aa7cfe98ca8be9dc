"""Which tables use Paimon deletion vectors, and the guard for what dyntable does not do on them.

With ``deletion-vectors.enabled = true`` (a table made by Java Paimon; dyntable refuses the
option at CREATE/ALTER) Paimon marks superseded and deleted rows of data files in
``DELETION_VECTORS`` index files. dyntable *reads* such tables as Paimon's batch readers do
(``engine.read.split_reader``: primary-key tables skip level 0 and read every other file without
merging, minus its DV; append tables read every file minus its DV). It does not *maintain* DVs:
a write or a compaction here would leave files whose DVs no longer match (deleted rows coming
back, or duplicates for Paimon), so those are refused with :class:`UnsupportedTableError`.
Streaming and incremental reads, which would have to turn DV changes into row changes, are
refused the same way.
"""

from __future__ import annotations

from engine.errors import UnsupportedTableError
from engine.store import FileStore

OPTION = "deletion-vectors.enabled"


def uses_deletion_vectors(store: FileStore) -> bool:
    """Whether the table has ``deletion-vectors.enabled = true``."""
    return str(store.schema.options.get(OPTION, "false")).strip().lower() == "true"


def refuse_deletion_vectors(store: FileStore, action: str) -> None:
    """Raise if the table has deletion vectors enabled.

    Args:
        store: the table.
        action: what was attempted ("write or compact", "compact", ...), for the message.

    Raises:
        UnsupportedTableError: ``deletion-vectors.enabled`` is true.
    """
    if uses_deletion_vectors(store):
        raise UnsupportedTableError(
            f"cannot {action} table {store.paths.root}: it has '{OPTION}' = 'true', and dyntable "
            "reads such tables but does not write Paimon's deletion vectors (a write or compaction "
            "here would bring deleted rows back, or leave stale deletion vectors for Paimon). Write "
            "to this table with Apache Paimon, or copy it into a table without deletion vectors."
        )


def refuse_change_reads(store: FileStore) -> None:
    """Raise for a streaming or incremental read of a table with deletion vectors.

    Raises:
        UnsupportedTableError: ``deletion-vectors.enabled`` is true.
    """
    if uses_deletion_vectors(store):
        raise UnsupportedTableError(
            f"cannot stream or read incremental changes of table {store.paths.root}: it has '{OPTION}' = "
            "'true', and dyntable reads such tables only as batch snapshots (a change read would have "
            "to turn deletion vectors into row changes, which it does not). Read a snapshot instead, "
            "e.g. with time travel, or stream it with Apache Paimon."
        )
