"""Whether the data files Iceberg metadata would publish carry field ids on collection members.

One job: refuse to publish a table whose ARRAY, MAP or MULTISET columns an Iceberg reader could
not read from some live file. Iceberg readers find a list's element and a map's key and value by
Parquet field id; dyntable writes Paimon 2.0's ids there (``engine.write.nested_ids``), but files
written before it did, or by other writers (Java Paimon before 2.0), may carry none. (The opt-in
Spark native write's level-0 files carry none either; Iceberg readers never see level 0.)

Cheap by construction: only the files a commit adds are checked (a published version vouches for
the files it lists; the first publication and a rebuild check every live file), only files whose
schema has a collection column the current schema still has, and each by its Parquet footer
alone, remembered per file path (data files never change). A refusal stops at the first such
file, and the file found last is checked first next time, so a refused table costs one footer
per commit until that file is gone. Catching up over a snapshot that added such a file falls back
to publishing the latest snapshot afresh (``engine.iceberg.commit``): the file may be gone since.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import pyarrow.parquet as pq

from engine.files.reader import arrow_path
from engine.iceberg.schema import IcebergUnsupportedError
from engine.meta.file_formats import format_of
from engine.meta.manifest import DataFileMeta
from engine.store import FileStore
from engine.types import DataType, TypeRoot
from engine.write.nested_ids import lacking_nested_ids

__all__ = ["MissingNestedIds", "check_nested_ids"]

_COLLECTIONS = (TypeRoot.ARRAY, TypeRoot.MAP, TypeRoot.MULTISET)
_CACHE_SIZE = 4096
# file path → the top-level field ids lacking them; None: not Parquet, so no field ids to find
_lacking: OrderedDict[str, frozenset[int] | None] = OrderedDict()
_last_refused: dict[str, str] = {}  # table root → the file path that last refused it


class MissingNestedIds(IcebergUnsupportedError):
    """A file to publish holds a collection column without field ids on its members."""


def _holds_collection(t: DataType) -> bool:
    if t.root in _COLLECTIONS:
        return True
    return any(_holds_collection(f.type) for f in t.fields)


def collection_ids(fields: Iterable) -> frozenset[int]:
    """The ids of the top-level fields that hold an ARRAY, MAP or MULTISET anywhere inside."""
    return frozenset(f.id for f in fields if _holds_collection(f.type))


def _file_lacking(store: FileStore, path: str) -> frozenset[int] | None:
    if path in _lacking:
        return _lacking[path]
    got = None
    if format_of(path.rsplit("/", 1)[-1]) == "parquet":
        with store.io.arrow_fs().open_input_file(arrow_path(path)) as f:
            got = lacking_nested_ids(pq.read_schema(f))
    _lacking[path] = got
    if len(_lacking) > _CACHE_SIZE:
        _lacking.popitem(last=False)
    return got


def check_nested_ids(store: FileStore, files: Iterable[tuple[str, DataFileMeta]]) -> None:
    """Raise :class:`IcebergUnsupportedError` if one of ``files`` (path, meta) holds a collection
    column of the current schema without field ids on its members."""
    wanted = collection_ids(store.schema.fields)
    if not wanted:
        return
    schema_ids: dict[int, frozenset[int]] = {}
    candidates = []
    for path, meta in files:
        ids = schema_ids.get(meta.schema_id)
        if ids is None:
            ids = collection_ids(store.schemas.get(meta.schema_id).fields) & wanted
            schema_ids[meta.schema_id] = ids
        if ids:
            candidates.append((path, ids))
    last = _last_refused.get(store.paths.root)
    candidates.sort(key=lambda c: c[0] != last)
    for path, ids in candidates:
        lacking = _file_lacking(store, path)
        if lacking is None or lacking & ids:
            _last_refused[store.paths.root] = path
            raise MissingNestedIds(
                f"data file {path} holds an ARRAY, MAP or MULTISET column without Parquet field ids on "
                "its list elements or map keys and values (written before dyntable wrote them, or by "
                "another writer), which Iceberg readers need: dyntable does not publish the table as "
                "Iceberg metadata (metadata.iceberg.storage) while such a file is live: see docs/iceberg.md"
            )
    _last_refused.pop(store.paths.root, None)
