"""Which manifests a commit keeps and which it rewrites when the base manifest list is merged.

One job: the manifest merge policy. A commit's base manifest list grows by one delta manifest per
commit; once it holds ``manifest.merge-min-count`` manifests, the commit merges it. The result
holds only ADD entries of live files, so the order of manifests no longer matters and planning
cost follows the number of live files, not the length of history.

A manifest can be *settled* (kept as it is) only if it is add-only and none of its files is
deleted by a later DELETE entry. Then:

* a full one (at least half of ``manifest.target-file-size``, or rolled at its entry limit)
  always is;
* in a commit's merge (``tiered``), so is one holding at least as many entries as everything
  else being rewritten together, tried biggest first. Small manifests therefore merge like a
  binary counter: a file's entry is rewritten about log2(full size / commit size) times over its
  life instead of at every merge, and the manifests stay few (the full ones, about one per tier,
  and fewer than ``merge-min-count`` deltas). Rewriting every small manifest at every merge made
  a commit's cost grow with the table's live files: each 30th commit re-encoded them all (2.5 s
  at 20,000 files).

Only manifests that may be rewritten or that must be checked against DELETE entries are read:
with no DELETE entry in the list (an append-only history) the settled manifests are not opened.
``CALL sys.compact_manifest`` merges fully (``tiered`` off): every small manifest is rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.meta.manifest import FileKind, ManifestFileMeta, live_files
from engine.meta.manifest_store import MANIFEST_ROLL_ENTRIES, ManifestStore
from engine.types import DataType

__all__ = ["merge_manifests"]


def merge_manifests(
    ms: ManifestStore,
    metas: Sequence[ManifestFileMeta],
    schema_id: int,
    partition_types: Sequence[DataType],
    *,
    target_size: int,
    tiered: bool,
) -> list[ManifestFileMeta]:
    """The merged base manifests: the settled ones kept, the live files of the rest rewritten.

    Raises:
        CorruptMetadataError: a rewritten file is added twice or deleted without being added.
    """
    deleted: set[tuple[Any, ...]] = {
        e.identifier
        for meta in metas
        if meta.num_deleted_files
        for e in ms.read_entries(meta.file_name)
        if e.kind is FileKind.DELETE
    }

    def settles(meta: ManifestFileMeta) -> bool:
        if meta.num_deleted_files:
            return False
        return not deleted or not any(e.identifier in deleted for e in ms.read_entries(meta.file_name))

    def full(meta: ManifestFileMeta) -> bool:
        return meta.file_size >= target_size // 2 or meta.num_added_files >= MANIFEST_ROLL_ENTRIES

    def weight(meta: ManifestFileMeta) -> int:
        # Entries, not bytes: a small manifest's bytes are mostly its header (the Avro schema).
        return meta.num_added_files + meta.num_deleted_files

    kept = {meta.file_name for meta in metas if full(meta) and settles(meta)}
    if tiered:
        # What would be rewritten: every manifest not kept so far.
        pool = sum(weight(m) for m in metas if m.file_name not in kept)
        for meta in sorted((m for m in metas if not full(m)), key=lambda m: -weight(m)):
            if weight(meta) < pool - weight(meta):
                break  # the rest are no bigger, and the pool only shrinks as manifests are kept
            if settles(meta):
                kept.add(meta.file_name)
                pool -= weight(meta)
    # A kept manifest's files are deleted by no entry, so the rest's DELETEs cancel only the rest's ADDs.
    rest = live_files(e for m in metas if m.file_name not in kept for e in ms.read_entries(m.file_name))
    rewritten = ms.write_entries_rolling(rest, schema_id, partition_types)
    return [m for m in metas if m.file_name in kept] + rewritten
