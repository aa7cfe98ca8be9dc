"""Which tables use Paimon deletion vectors, and the guard for what cannot be done on them.

With ``deletion-vectors.enabled = true`` Paimon marks superseded and deleted rows of data files
in ``DELETION_VECTORS`` index files. dyntable reads such tables as Paimon's batch readers do
(``engine.read.split_reader``: primary-key tables skip level 0 and read every other file without
merging, minus its DV — or, with ``deletion-vectors.merge-on-read``, merge level 0 with the files
above it, each minus its DV; append tables read every file minus its DV).

Both kinds are written with their DVs maintained: primary-key tables by their compaction
(``engine.write.kv_deletion_vectors``), append tables by row-level DELETE/UPDATE/MERGE and their
compaction (``engine.append_deletions``, ``engine.write.append_compaction``). Change reads
(streaming, ``incremental-between``) read the files each snapshot added, which DVs do not touch
(``engine.scan.incremental``). What stays refused here is renaming data files: a DV names its
data file.
"""

from __future__ import annotations

from engine.errors import UnsupportedTableError
from engine.store import FileStore

OPTION = "deletion-vectors.enabled"
MERGE_ON_READ = "deletion-vectors.merge-on-read"


def uses_deletion_vectors(store: FileStore) -> bool:
    """Whether the table has ``deletion-vectors.enabled = true``."""
    return str(store.schema.options.get(OPTION, "false")).strip().lower() == "true"


def batch_reads_skip_level0(store: FileStore) -> bool:
    """Whether batch reads of this deletion-vector table skip level 0 (Paimon's default), or merge
    it with the levels above (``deletion-vectors.merge-on-read = true``, Paimon 2.0: level-0 files
    written without their DVs, read by merging; every file is still read minus its DV)."""
    if not uses_deletion_vectors(store):
        return False
    return str(store.schema.options.get(MERGE_ON_READ, "false")).strip().lower() != "true"


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
