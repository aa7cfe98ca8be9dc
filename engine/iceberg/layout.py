"""Where a table's Iceberg metadata lives and what its settings are (``metadata.iceberg.*``).

One job: the paths and option values of Paimon's Iceberg compatibility, in Paimon's layout:

* ``table-location``: ``<table>/metadata/``; ``hadoop-catalog``:
  ``<warehouse>/iceberg/<db>/<table>/metadata/`` (a directory an Iceberg Hadoop catalog uses as
  its warehouse). ``metadata.iceberg.storage-location``
  overrides the default of the storage (``table-location`` / ``catalog-location``).
* In the metadata directory: ``v<N>.metadata.json`` (N = the Paimon snapshot id it describes),
  ``version-hint.text`` (the latest N), manifest lists ``snap-<k>-<uuid>.avro`` and manifests
  ``<uuid>-m<k>.avro`` — Paimon's file names.
* Only the main branch publishes Iceberg metadata.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from engine.errors import UnsupportedTableError
from engine.meta.paths import join
from engine.options import (
    METADATA_ICEBERG_COMPACTION_MAX_FILE_NUM,
    METADATA_ICEBERG_COMPACTION_MIN_FILE_NUM,
    METADATA_ICEBERG_DELETE_AFTER_COMMIT,
    METADATA_ICEBERG_FORMAT_VERSION,
    METADATA_ICEBERG_MANIFEST_COMPRESSION,
    METADATA_ICEBERG_PREVIOUS_VERSIONS_MAX,
    METADATA_ICEBERG_STORAGE,
    METADATA_ICEBERG_STORAGE_LOCATION,
    CoreOptions,
)
from engine.store import FileStore

__all__ = ["IcebergLayout", "VERSION_HINT", "metadata_version"]

VERSION_HINT = "version-hint.text"
_METADATA_NAME = re.compile(r"^v(\d+)\.metadata\.json$")


def metadata_version(name: str) -> int | None:
    """N of a ``v<N>.metadata.json`` file name, else None."""
    m = _METADATA_NAME.match(name)
    return int(m.group(1)) if m else None


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def _base(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class IcebergLayout:
    """The Iceberg settings and metadata directory of one table (main branch)."""

    storage: str
    metadata_dir: str
    format_version: int
    delete_after_commit: bool
    previous_versions_max: int
    codec: str
    compaction_min_files: int
    compaction_max_files: int
    manifest_target_size: int
    #: One token per writer, as Paimon's path factory: names never collide between writers.
    token: str = field(default_factory=lambda: str(uuid.uuid4()))
    _manifests: int = 0
    _lists: int = 0

    @staticmethod
    def of(store: FileStore) -> IcebergLayout | None:
        """The layout of ``store``'s table, or None when it publishes no Iceberg metadata."""
        opts: CoreOptions = store.options
        storage = opts.get(METADATA_ICEBERG_STORAGE)
        if storage == "disabled" or not store.is_main:
            return None
        location = opts.get(METADATA_ICEBERG_STORAGE_LOCATION) or (
            "table-location" if storage == "table-location" else "catalog-location"
        )
        root = store.paths.root
        if location == "table-location":
            metadata_dir = join(root, "metadata")
        else:
            db_dir = _parent(root)
            db = _base(db_dir)
            if not db.endswith(".db"):
                raise UnsupportedTableError(
                    f"metadata.iceberg.storage = {storage} keeps the Iceberg metadata under the warehouse "
                    f"(<warehouse>/iceberg/<db>/<table>), which needs the table in a <db>.db directory; "
                    f"{root} is not: set metadata.iceberg.storage-location = table-location"
                )
            metadata_dir = join(_parent(db_dir), "iceberg", db[: -len(".db")], _base(root), "metadata")
        return IcebergLayout(
            storage=storage,
            metadata_dir=metadata_dir,
            format_version=int(opts.get(METADATA_ICEBERG_FORMAT_VERSION)),
            delete_after_commit=bool(opts.get(METADATA_ICEBERG_DELETE_AFTER_COMMIT)),
            previous_versions_max=int(opts.get(METADATA_ICEBERG_PREVIOUS_VERSIONS_MAX)),
            codec=str(opts.get(METADATA_ICEBERG_MANIFEST_COMPRESSION)),
            compaction_min_files=int(opts.get(METADATA_ICEBERG_COMPACTION_MIN_FILE_NUM)),
            compaction_max_files=int(opts.get(METADATA_ICEBERG_COMPACTION_MAX_FILE_NUM)),
            manifest_target_size=int(opts.manifest_target_file_size),
        )

    def metadata_file(self, version: int) -> str:
        return join(self.metadata_dir, f"v{version}.metadata.json")

    @property
    def version_hint(self) -> str:
        return join(self.metadata_dir, VERSION_HINT)

    def new_manifest(self) -> str:
        self._manifests += 1
        return join(self.metadata_dir, f"{self.token}-m{self._manifests}.avro")

    def new_manifest_list(self) -> str:
        self._lists += 1
        return join(self.metadata_dir, f"snap-{self._lists}-{self.token}.avro")
