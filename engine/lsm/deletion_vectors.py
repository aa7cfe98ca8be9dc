"""The guard for tables with Paimon deletion vectors, which dyntable does not implement.

With ``deletion-vectors.enabled = true`` (a table made by Java Paimon; dyntable refuses the
option at CREATE/ALTER) Paimon marks superseded and deleted rows of compacted files in
``DELETION_VECTORS`` index files, lets compactions drop deletes early, and its batch reads skip
level 0 and read every other file raw minus its deletion vector. dyntable neither reads nor
maintains those index files: a read here would return rows Paimon has deleted, and a write or a
compaction would leave files whose deletion vectors no longer match (duplicates for Paimon). So
every read, write and compaction of such a table is refused with :class:`UnsupportedTableError`.
"""

from __future__ import annotations

from engine.errors import UnsupportedTableError
from engine.store import FileStore

OPTION = "deletion-vectors.enabled"


def refuse_deletion_vectors(store: FileStore, action: str) -> None:
    """Raise if the table has deletion vectors enabled.

    Args:
        store: the table.
        action: what was attempted ("read", "write", "compact"), for the message.

    Raises:
        UnsupportedTableError: ``deletion-vectors.enabled`` is true.
    """
    value = str(store.schema.options.get(OPTION, "false")).strip().lower()
    if value == "true":
        raise UnsupportedTableError(
            f"cannot {action} table {store.paths.root}: it has '{OPTION}' = 'true', and dyntable does not "
            "read or maintain Paimon's deletion vectors (it would return deleted rows, or leave them "
            "stale for Paimon). Read and write this table with Apache Paimon, or recreate it without "
            "deletion vectors."
        )
