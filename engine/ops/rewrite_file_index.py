"""Building the configured data-file indexes for files that already exist (``rewrite_file_index``).

One job: after ``file-index.*`` options are set or changed, give the live files of the latest
snapshot (optionally only some partitions) the indexes the options now ask for, as Paimon's
``FileIndexProcessor`` does:

* a file's separate index file (if any) is read and its indexes of columns / types no longer
  configured are dropped; every configured index is rebuilt from the file's rows (read with the
  schema the file was written with, so renamed columns keep their index);
* the new blob is embedded when it is at most ``file-index.in-manifest-threshold`` bytes, else
  written to a new ``.index`` file (``<data file>.index``, or the old index name with its number
  raised: ``<data file>-1.index``, ``-2``…; index files are never overwritten);
* files whose metadata does not change are left alone; the others are replaced in one COMPACT
  snapshot (each file's old metadata out, the new in: same data file, new index), recorded in the
  maintenance log. Old index files die with the snapshots that name them (expiration).

Result: Paimon's ``(written_partitions, written_indexes)``: partitions and files given new
metadata. ``dry_run`` builds nothing on storage and commits nothing; it reports what would change.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage
from engine.fileindex import (
    INDEX_FILE_SUFFIX,
    FileIndexConfig,
    build_indexes,
    file_index_config,
    read_file_index,
    write_file_index,
)
from engine.files.reader import read_data_file
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, ManifestEntry
from engine.ops.maintenance_log import recorded_run
from engine.scan.predicate import any_partition
from engine.store import FileStore
from engine.write.conform import coerce_spec


@dataclass(frozen=True)
class FileIndexRewrite:
    """What ``rewrite_file_index`` did (or, with ``dry_run``, would do)."""

    written_partitions: int
    written_indexes: int
    snapshot_id: int | None
    dry_run: bool


def next_index_file_name(name: str) -> str:
    """Paimon's ``createNewFileIndexFilePath``: ``x.parquet.index`` → ``x.parquet-1.index``,
    ``x.parquet-1.index`` → ``x.parquet-2.index``."""
    stem = name[: -len(INDEX_FILE_SUFFIX)] if name.endswith(INDEX_FILE_SUFFIX) else name.rsplit(".", 1)[0]
    m = re.fullmatch(r"(.*)-(\d+)", stem)
    if m is not None:
        return f"{m.group(1)}-{int(m.group(2)) + 1}{INDEX_FILE_SUFFIX}"
    return f"{stem}-1{INDEX_FILE_SUFFIX}"


def _file_config(store: FileStore, file: DataFileMeta, config: FileIndexConfig) -> FileIndexConfig:
    """``config`` with column names as the file's schema spells them (columns it lacks left out)."""
    file_schema = store.schema_by_id(file.schema_id)
    columns = {}
    for column, specs in config.columns.items():
        if column not in store.schema.field_names:
            continue
        fid = store.schema.field(column).id
        for f in file_schema.fields:
            if f.id == fid:
                columns[f.name] = specs
    return replace(config, columns=columns)


class _Rewriter:
    def __init__(self, store: FileStore, dry_run: bool) -> None:
        self.store = store
        self.dry_run = dry_run
        self.config = file_index_config(store.options.to_dict())
        self.written: list[str] = []  # index files written, deleted again if the commit fails

    def _dir(self, e: ManifestEntry) -> str:
        store = self.store
        if e.file.external_path:
            return posixpath.dirname(store.paths.external_file(e.file.external_path))
        part_dir = store.partition_dir(deserialize_row(e.partition, store.partition_types))
        return store.paths.bucket_dir(part_dir, e.bucket)

    def process(self, e: ManifestEntry) -> DataFileMeta:
        """The file's metadata with the configured indexes (the index file written unless dry run)."""
        store, f = self.store, e.file
        directory = self._dir(e)
        old_names = [x for x in f.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
        extras = tuple(x for x in f.extra_files if x not in old_names)
        config = _file_config(store, f, self.config)
        indexes: dict[str, dict[str, bytes | None]] = {}
        if old_names:
            kept = read_file_index(store.io.read_bytes(posixpath.join(directory, old_names[0])))
            for column, types in kept.items():
                wanted = {s.index_type for s in config.columns.get(column, ())}
                still = {t: data for t, data in types.items() if t in wanted}
                if still:
                    indexes[column] = still
        if config.columns:
            file_schema = store.schema_by_id(f.schema_id)
            fields = [fld for fld in file_schema.fields if fld.name in config.columns]
            rows = read_data_file(store, posixpath.join(directory, f.file_name), f, fields)
            for column, built in build_indexes(rows, file_schema.fields, config).items():
                slot = indexes.setdefault(column, {})
                for index_type, data in built.items():
                    slot[index_type] = data
        if not indexes:
            return replace(f, extra_files=extras, embedded_file_index=None)
        blob = write_file_index(indexes)
        if len(blob) <= self.config.in_manifest_threshold:
            return replace(f, extra_files=extras, embedded_file_index=blob)
        name = next_index_file_name(old_names[0]) if old_names else f.file_name + INDEX_FILE_SUFFIX
        if not self.dry_run:
            path = posixpath.join(directory, name)
            store.io.write_bytes(path, blob)
            self.written.append(path)
        return replace(f, extra_files=(*extras, name), embedded_file_index=None)


def rewrite_file_index(
    store: FileStore,
    partitions: Sequence[Mapping[str, object]] | None = None,
    *,
    dry_run: bool = False,
) -> FileIndexRewrite:
    """Give the latest snapshot's live files (of ``partitions``: specs column → value; None = all)
    the indexes the table's ``file-index.*`` options configure, in one COMPACT snapshot."""
    with recorded_run(store.io, store.paths.root, "rewrite_file_index", branch=store.branch,
                      dry_run=dry_run) as rec:
        latest = store.snapshots.latest()
        entries = store.live_entries(latest)
        if partitions is not None:
            predicate = any_partition([coerce_spec(store.schema, p) for p in partitions])
            if predicate is not None:
                keys = store.partition_keys
                types = store.partition_types
                entries = [
                    e for e in entries
                    if predicate.eval_row(dict(zip(keys, deserialize_row(e.partition, types), strict=True)))
                ]
        rewriter = _Rewriter(store, dry_run)
        messages: list[CommitMessage] = []
        touched: set[bytes] = set()
        for e in entries:
            new = rewriter.process(e)
            if new == e.file:
                continue
            touched.add(e.partition)
            messages.append(CommitMessage(e.partition, e.bucket, e.total_buckets,
                                          compact_before=(e.file,), compact_after=(new,)))
        snapshot_id = None
        if messages and not dry_run:
            try:
                result = FileStoreCommit(store).commit(messages)
            except BaseException:
                for path in rewriter.written:
                    store.io.delete(path)
                raise
            snapshot_id = result.last_snapshot_id
        rec.details = {"written_partitions": len(touched), "written_indexes": len(messages),
                       "snapshot_id": snapshot_id}
    return FileIndexRewrite(len(touched), len(messages), snapshot_id, dry_run)
