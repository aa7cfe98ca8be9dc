"""Skipping data files by their file indexes while planning a scan, under Paimon's rules.

One job: decide, for the live files of a batch scan, which ones an equality / IN / IS NULL
filter provably cannot match, using each file's index blob (embedded in the manifest, or the
``.index`` file its ``_EXTRA_FILES`` names). ``file-index.read.enabled = false`` turns it off.

Rules (Paimon's ``AppendOnlyFileStoreScan`` and ``KeyValueFileStoreScan``):

* append tables: every file is tested on its own;
* primary-key tables: a row's value may be overridden by a newer file, so a file may only be
  dropped when that cannot hide or expose a row. Per bucket: when its files do not overlap (one
  file, or all on the same level above 0: one sorted run) each file is tested on its own;
  otherwise the whole bucket is dropped only when no file in it can match, and never for the
  ``partial-update`` and ``aggregation`` merge engines (a merged row mixes several files' values).

Column names in the filter are the current schema's; a file written under an older schema is
looked up by field id, so renamed columns keep their indexes and columns added later are unknown
(never skipped on). Separate index files are fetched in parallel, once per scan; one that cannot be
read (lost outside the table's control) only means its data file is read unfiltered.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from engine.errors import CorruptMetadataError, DyntableError
from engine.fileindex import INDEX_FILE_SUFFIX, FileIndexReader, file_index_config
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, ManifestEntry
from engine.scan.predicate import And, Leaf, Or, Predicate, split_by_columns
from engine.store import FileStore

_MERGING_ENGINES = ("partial-update", "aggregation")
_FETCH_THREADS = 8  # separate index files are read in parallel (object stores: latency-bound)
log = logging.getLogger(__name__)


def _indexed(f: DataFileMeta) -> bool:
    return f.embedded_file_index is not None or any(x.endswith(INDEX_FILE_SUFFIX) for x in f.extra_files)


def _usable(p: Predicate) -> bool:
    """Whether any leaf of ``p`` is one an index can refute (through And / Or only)."""
    if isinstance(p, Leaf):
        return p.op in ("eq", "in", "is_null", "is_not_null")
    if isinstance(p, (And, Or)):
        return any(_usable(c) for c in p.children)
    return False


class FileIndexFilter:
    """The file-index test of one scan's filter over one store."""

    def __init__(self, store: FileStore, predicate: Predicate) -> None:
        self.store = store
        self.predicate = predicate
        self._blobs: dict[str, bytes | None] = {}  # separate index files, fetched in parallel

    @classmethod
    def of(cls, store: FileStore, predicate: Predicate | None) -> FileIndexFilter | None:
        """A filter, or None when there is nothing an index could skip on (or reading is disabled)."""
        _, predicate = split_by_columns(predicate, store.partition_keys)  # partitions are pruned already
        if predicate is None or not _usable(predicate):
            return None
        if not file_index_config(store.options.to_dict()).read_enabled:
            return None
        return cls(store, predicate)

    # -- one file ---------------------------------------------------------------------------------
    def _index_path(self, e: ManifestEntry) -> str | None:
        """The separate index file of an entry (None when it has none, or more than one)."""
        names = [x for x in e.file.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
        if len(names) != 1:
            return None
        store, f = self.store, e.file
        part_dir = store.partition_dir(deserialize_row(e.partition, store.partition_types))
        return store.paths.extra_file(part_dir, e.bucket, names[0], f.external_path)

    def _load(self, path: str) -> bytes | None:
        try:
            return self.store.io.read_bytes(path)
        except (DyntableError, OSError) as e:
            # The data file is what matters: a lost index file costs skipping, never the read.
            log.warning("file index %s is unreadable, its data file is read unfiltered: %s", path, e)
            return None

    def _reader(self, e: ManifestEntry) -> FileIndexReader | None:
        f = e.file
        blob = f.embedded_file_index
        if blob is None:
            path = self._index_path(e)
            if path is None:
                return None
            blob = self._blobs[path] if path in self._blobs else self._load(path)
            if blob is None:
                return None
        file_schema = self.store.schema_by_id(f.schema_id)
        try:
            return FileIndexReader(blob, {fld.name: fld for fld in file_schema.fields})
        except CorruptMetadataError:
            return None  # an index that does not decode costs skipping, never a read

    def _file_name(self, f: DataFileMeta, column: str) -> str | None:
        """``column`` (a current name) as the file's schema names it; None if the file lacks it."""
        current = self.store.schema
        if column not in current.field_names:
            return None
        fid = current.field(column).id
        for fld in self.store.schema_by_id(f.schema_id).fields:
            if fld.id == fid:
                return fld.name
        return None

    def _test(self, p: Predicate, reader: FileIndexReader, f: DataFileMeta) -> bool:
        if isinstance(p, And):
            return all(self._test(c, reader, f) for c in p.children)
        if isinstance(p, Or):
            return any(self._test(c, reader, f) for c in p.children)
        if not isinstance(p, Leaf):
            return True
        column = self._file_name(f, p.column)
        if column is None:
            return True
        if p.op in ("eq", "in"):
            return reader.might_contain(column, p.literals)
        if p.op == "is_null":
            return reader.might_be_null(column)
        if p.op == "is_not_null":
            return reader.might_be_non_null(column)
        return True

    def might_match(self, e: ManifestEntry) -> bool:
        """False only when the file's indexes prove no row matches the filter."""
        if not _indexed(e.file):
            return True
        reader = self._reader(e)
        return True if reader is None else self._test(self.predicate, reader, e.file)

    # -- a scan's live files ----------------------------------------------------------------------
    def apply(self, entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
        """The entries a scan still has to read."""
        if not any(_indexed(e.file) for e in entries):
            return list(entries)
        paths = [p for e in entries if e.file.embedded_file_index is None and (p := self._index_path(e))]
        if len(paths) > 1:
            with ThreadPoolExecutor(max_workers=min(_FETCH_THREADS, len(paths))) as pool:
                self._blobs.update(zip(paths, pool.map(self._load, paths), strict=True))
        if not self.store.has_primary_key:
            return [e for e in entries if self.might_match(e)]
        merging = self.store.options.merge_engine in _MERGING_ENGINES
        buckets: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        for e in entries:
            buckets[(e.partition, e.bucket)].append(e)
        out: list[ManifestEntry] = []
        for group in buckets.values():
            levels = {e.file.level for e in group}
            if len(group) == 1 or (len(levels) == 1 and 0 not in levels):
                out.extend(e for e in group if self.might_match(e))
            elif merging or any(self.might_match(e) for e in group):
                out.extend(group)
        return out
