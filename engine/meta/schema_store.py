"""Schema versions of one branch: ``schema/schema-N``, every version kept.

A schema change is published like a snapshot: read the latest version, apply the change,
create ``schema-(N+1)`` if absent, and start over if another writer got there first. Old
versions stay, because data files name the schema id they were written with.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from engine.errors import CommitConflictError, CorruptMetadataError, NotFoundError, TableAlreadyExistsError
from engine.io import FileIO
from engine.meta.paths import TablePaths, parse_versioned_id
from engine.schema import TableSchema

_MAX_RETRIES = 20


class SchemaStore:
    """Schemas of one table branch, cached by id (they are immutable)."""

    def __init__(self, io: FileIO, paths: TablePaths) -> None:
        self.io = io
        self.paths = paths
        self._cache: dict[int, TableSchema] = {}

    def list_ids(self) -> list[int]:
        ids = []
        for status in self.io.list_dir(self.paths.schema_dir):
            sid = parse_versioned_id(status.path.rsplit("/", 1)[-1], "schema-")
            if sid is not None:
                ids.append(sid)
        return sorted(ids)

    def get(self, schema_id: int) -> TableSchema:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.paths.schema_file(schema_id)
        try:
            # Bytes, not text: the decoder reports bad UTF-8 as corruption of this file.
            text = self.io.read_bytes(path)
        except FileNotFoundError:
            raise NotFoundError(f"schema {schema_id} does not exist at {path}") from None
        try:
            schema = TableSchema.from_json(text)
        except CorruptMetadataError as e:
            raise CorruptMetadataError(f"schema file {path} is corrupt: {e}") from e
        self._cache[schema_id] = schema
        return schema

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.get(ids[-1]) if ids else None

    def all(self) -> list[TableSchema]:
        return [self.get(i) for i in self.list_ids()]

    def create(self, schema: TableSchema) -> TableSchema:
        """Write ``schema-0`` for a new table; TableAlreadyExistsError if any schema exists."""
        if self.list_ids():
            raise TableAlreadyExistsError(f"a table already exists at {self.paths.root}")
        if not self.io.try_create(self.paths.schema_file(schema.id), schema.to_json().encode()):
            raise TableAlreadyExistsError(f"a table already exists at {self.paths.root}")
        self._cache[schema.id] = schema
        return schema

    def commit_change(self, change: Callable[[TableSchema], TableSchema]) -> TableSchema:
        """Apply ``change`` to the latest schema and publish the result as the next version.

        ``change`` receives the latest schema and returns the new one (with id + 1); it may raise
        to refuse the change. Retried on a lost race against another schema change.
        """
        for _ in range(_MAX_RETRIES):
            latest = self.latest()
            if latest is None:
                raise NotFoundError(f"no table at {self.paths.root}")
            new = change(latest)
            if new.id != latest.id + 1:
                raise AssertionError("a schema change must produce the next schema id")
            if self.io.try_create(self.paths.schema_file(new.id), new.to_json().encode()):
                self._cache[new.id] = new
                return new
            time.sleep(0.01)
        raise CommitConflictError(f"schema of {self.paths.root} kept changing concurrently; retry the change")

    def publish_pending(self, schema: TableSchema) -> None:
        """Publish ``schema``, computed from version ``schema.id - 1`` by a merge-schema write whose
        files already name it, just before the write's snapshot.

        If another writer published that version first, it is accepted only when it is the same
        schema (two writers evolving a table alike); otherwise the files name a version with other
        fields and the write must not commit.

        Raises:
            CommitConflictError: the version was published with different content.
        """
        path = self.paths.schema_file(schema.id)
        if self.io.try_create(path, schema.to_json().encode()):
            self._cache[schema.id] = schema
            return
        self._cache.pop(schema.id, None)
        theirs = self.get(schema.id)
        if replace(theirs, time_millis=schema.time_millis) != schema:
            raise CommitConflictError(
                f"the schema of {self.paths.root} changed while this write evolved it (schema {schema.id} "
                "was published with other fields); nothing was committed — run the write again"
            )

    def write_copy(self, schema: TableSchema) -> None:
        """Write an existing schema version into this branch (branch creation)."""
        self.io.write_bytes(self.paths.schema_file(schema.id), schema.to_json().encode())
        self._cache[schema.id] = schema
