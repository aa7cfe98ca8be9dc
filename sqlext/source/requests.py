"""The one typed boundary between the SQL layer and the data source: what to read, what to write.

Spark hands a Python data source nothing but a flat ``dict[str, str]`` of options, so every
request crosses the JVM as options. These frozen types are the only code that builds or parses
those dicts: the SQL session, the executors and DataFrame users build a :class:`ReadRequest` or
:class:`WriteRequest` and call ``to_options()``; the data source calls ``from_options()``.
Nothing else spells an option key of the source.

```
 TableTarget   warehouse, table name (db.t, db.t$branch_b, db.t$snapshots), branch, storage options
 ReadRequest   target + projection, filter (engine JSON; pruning, or exact), split limit, time travel,
               changelog, passthrough
 WriteRequest  target + overwrite (engine.OverwriteSpec), commit user/identifier, base snapshot,
               change tracking, passthrough (dynamic table options such as ``write-only``)
```

Keys are Paimon's where Paimon has one (``scan.snapshot-id``, ``scan.tag-name``, …); any other
option a user gives (``scan.mode``, ``consumer-id``, dynamic table options) is carried through
``passthrough`` untouched. Spark lower-cases option keys on some paths, so ``from_options`` reads
keys case-insensitively.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine import Identifier, IncrementalQuery, InvalidArgumentError, OverwriteSpec, Table, open_catalog

WAREHOUSE = "warehouse"
TABLE = "table"
BRANCH = "branch"
#: One JSON object of storage/catalog options (s3 endpoint, credentials ...), as given to open_catalog.
CATALOG_OPTIONS = "catalog-options"

COLUMNS = "columns"
FILTER = "filter"
#: Set by the SQL session when ``filter`` is implied by the query (``sqlext.bind.pruning``): the
#: source drops the rows that fail it, after the merge, instead of handing them to Spark.
FILTER_EXACT = "filter.exact"
#: Set by the SQL session for a plain ``LIMIT n``: rows per split that are enough.
LIMIT = "read.split-limit"
SNAPSHOT_ID = "scan.snapshot-id"
TAG_NAME = "scan.tag-name"
TIMESTAMP_MILLIS = "scan.timestamp-millis"
TIMESTAMP = "scan.timestamp"
VERSION = "scan.version"
READ_CHANGELOG = "read.changelog"
INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between-timestamp"
INCREMENTAL_TO_AUTO_TAG = "incremental-to-auto-tag"
INCREMENTAL_MODE = "incremental-between-scan-mode"
INCREMENTAL_TAG_TO_SNAPSHOT = "incremental-between-tag-to-snapshot"
INCREMENTAL_KEYS = (INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP, INCREMENTAL_TO_AUTO_TAG,
                    INCREMENTAL_MODE, INCREMENTAL_TAG_TO_SNAPSHOT)
#: The session's ``spark.paimon.*`` keys, one JSON object: ``from_options`` applies the ones that
#: name the request's table (or every table) under the explicit options (``sqlext.source.dynamic``).
SESSION_CONF = "session-conf"
#: Set by ``to_options``: the request was resolved already (its dynamic options are among its
#: options), so a ``session-conf`` added on the way (``sqlext.source.session_conf``) is not applied twice.
SESSION_APPLIED = "session-conf-applied"
#: Set by the native scan on the data source half: plan this snapshot, read only its merge splits.
MERGE_ONLY = "native-scan.merge-only"
#: Set by row-level statements (``sqlext.execute.row_level_writes``): the pinned snapshot is read
#: in the table's current schema, so a column added since its last write is there (as NULLs).
CURRENT_SCHEMA = "scan.current-schema"
TIME_TRAVEL_KEYS = (SNAPSHOT_ID, TAG_NAME, TIMESTAMP_MILLIS, TIMESTAMP, VERSION, CURRENT_SCHEMA)

OVERWRITE_PARTITION = "overwrite-partition"
OVERWRITE_PARTITIONS = "overwrite-partitions"
OVERWRITE_FILES = "overwrite-files"  # a JSON list of data file names (row-level rewrites of append tables)
OVERWRITE_MODE = "partitionOverwriteMode"
OVERWRITE_BASE_SNAPSHOT = "overwrite-base-snapshot"
COMMIT_USER = "commit-user"
#: Set with ``session-conf`` (``sqlext.source.session_conf``): the writing session's job parallelism,
#: the default number of dynamic-bucket assigners (Paimon's Spark writer's default).
JOB_PARALLELISM = "job-parallelism"
COMMIT_IDENTIFIER = "commit-identifier"
CHANGE_TRACKING = "change-tracking"
#: Set with ``session-conf`` on a batch DataFrame write: the commit (in a Python worker) leaves
#: the post-commit compaction to the writing driver, which runs it as Spark tasks.
COMPACTION_BY_DRIVER = "post-commit.compaction-by-driver"

_READ_KEYS = {
    WAREHOUSE, TABLE, "path", BRANCH, CATALOG_OPTIONS, COLUMNS, FILTER, FILTER_EXACT, LIMIT, READ_CHANGELOG,
    *INCREMENTAL_KEYS, MERGE_ONLY, SESSION_CONF, SESSION_APPLIED, *TIME_TRAVEL_KEYS,
}
_WRITE_KEYS = {
    WAREHOUSE, TABLE, "path", BRANCH, CATALOG_OPTIONS, OVERWRITE_PARTITION, OVERWRITE_PARTITIONS,
    OVERWRITE_FILES, OVERWRITE_MODE.lower(), "dynamic-partition-overwrite", OVERWRITE_BASE_SNAPSHOT,
    COMMIT_USER, COMMIT_IDENTIFIER, CHANGE_TRACKING, SESSION_CONF, SESSION_APPLIED, JOB_PARALLELISM,
    COMPACTION_BY_DRIVER,
}


def _lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def session_dynamic(options: Mapping[str, str]) -> dict[str, str]:
    """The dynamic options the session's ``spark.paimon.*`` keys (the ``session-conf`` option,
    lower-case ``options``) give the request's table: the one place SQL and DataFrame reads and
    writes resolve them (Paimon's ``OptionUtils``)."""
    from sqlext.source.dynamic import session_overrides

    if options.get(SESSION_APPLIED) == "true":
        return {}
    conf = _json(options, SESSION_CONF, dict, "a JSON object") or {}
    name = options.get(TABLE) or options.get("path")
    if not conf or not name:
        return {}
    ident = Identifier.parse(name)
    return {k.lower(): str(v) for k, v in session_overrides(conf, ident.database, ident.table).items()}


def _bool(options: Mapping[str, str], key: str) -> bool | None:
    value = options.get(key)
    if value is None:
        return None
    if value.lower() not in ("true", "false"):
        raise InvalidArgumentError(f"option '{key}' must be true or false, not '{value}'")
    return value.lower() == "true"


def _int(options: Mapping[str, str], key: str) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidArgumentError(f"option '{key}' must be an integer, not '{value}'") from None


def _json(options: Mapping[str, str], key: str, kind: type, what: str) -> Any:
    text = options.get(key)
    if not text:
        return None
    try:
        decoded = json.loads(text)
    except ValueError as e:
        raise InvalidArgumentError(f"option '{key}' must be {what}: {e}") from None
    if not isinstance(decoded, kind):
        raise InvalidArgumentError(f"option '{key}' must be {what}")
    return decoded


@dataclass(frozen=True)
class TableTarget:
    """Which table: the warehouse, the name as written (``db.t``, ``db.t$branch_b``,
    ``db.t$snapshots``), an explicit branch, and the storage options executors need to reach it."""

    warehouse: str
    table: str
    branch: str | None = None
    storage: Mapping[str, Any] = field(default_factory=dict)

    def to_options(self) -> dict[str, str]:
        out = {WAREHOUSE: self.warehouse, TABLE: self.table}
        if self.branch:
            out[BRANCH] = self.branch
        if self.storage:
            out[CATALOG_OPTIONS] = json.dumps(dict(self.storage), sort_keys=True)
        return out

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> TableTarget:
        low = _lower_keys(options)
        warehouse = low.get(WAREHOUSE)
        name = low.get(TABLE) or low.get("path")
        if not warehouse or not name:
            raise InvalidArgumentError(
                "the dyntable source needs the options 'warehouse' and 'table' (db.table); Spark does not "
                "pass saveAsTable's name to a Python data source, so give it as .option('table', 'db.t') too")
        storage = _json(low, CATALOG_OPTIONS, dict, "a JSON object") or {}
        return cls(warehouse, name, low.get(BRANCH) or None, storage)

    @property
    def system_table(self) -> str | None:
        return Identifier.parse(self.table).system_table

    def open(self) -> Table:
        """The table (branch applied; a system-table suffix is ignored here)."""
        ident = Identifier.parse(self.table)
        branch = self.branch or ident.branch
        base = Identifier(ident.database, ident.table, branch if branch and branch != "main" else None)
        return open_catalog(self.warehouse, **dict(self.storage)).get_table(base)


@dataclass(frozen=True)
class ReadVersion:
    """A batch read's version: at most one of these is normally set (Paimon's ``scan.*`` keys)."""

    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_millis: int | None = None
    timestamp: str | None = None  # ISO text, UTC unless it carries an offset
    version: str | None = None  # a snapshot id or a tag name (``VERSION AS OF``)
    #: Read the version in the table's current schema, not the one it was written with (a
    #: row-level statement's pinned latest snapshot; time travel keeps the snapshot's own schema).
    current_schema: bool = False

    def to_options(self) -> dict[str, str]:
        values = (self.snapshot_id, self.tag, self.timestamp_millis, self.timestamp, self.version,
                  "true" if self.current_schema else None)
        return {k: str(v) for k, v in zip(TIME_TRAVEL_KEYS, values, strict=True) if v is not None}

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadVersion | None:
        if not any(k in options for k in TIME_TRAVEL_KEYS):
            return None
        return cls(_int(options, SNAPSHOT_ID), options.get(TAG_NAME), _int(options, TIMESTAMP_MILLIS),
                   options.get(TIMESTAMP), options.get(VERSION),
                   options.get(CURRENT_SCHEMA, "false").lower() == "true")


def incremental_options(query: IncrementalQuery) -> dict[str, str]:
    """Paimon's option keys of an incremental read."""
    values = (query.between, query.between_timestamp, query.to_auto_tag, query.scan_mode,
              "true" if query.tag_to_snapshot else None)
    return {k: v for k, v in zip(INCREMENTAL_KEYS, values, strict=True) if v is not None}


def incremental_query(options: Mapping[str, str]) -> IncrementalQuery | None:
    """The incremental read Paimon's option keys ask for (lower-case keys), or None."""
    between, timestamp, to_tag = (options.get(k) for k in INCREMENTAL_KEYS[:3])
    if between is None and timestamp is None and to_tag is None:
        return None
    return IncrementalQuery(between, timestamp, to_tag, options.get(INCREMENTAL_MODE) or "auto",
                            bool(_bool(options, INCREMENTAL_TAG_TO_SNAPSHOT)))


@dataclass(frozen=True)
class ReadRequest:
    """One batch or streaming read.

    ``columns``: the projection (Spark pushes no column pruning into Python sources, so the SQL
    layer passes it); ``filter``: a pruning predicate in the engine's JSON form, used to skip
    partitions, buckets and files (Spark still applies the query's own filter); ``filter_exact``:
    the filter is implied by the query, so the source may also drop the rows that fail it (after
    the merge); ``limit``: each split may stop after this many rows (a plain ``LIMIT``);
    ``changelog``: add the ``rowkind`` column; ``incremental``: a batch incremental read (Paimon's
    ``incremental-between`` / ``-timestamp`` / ``incremental-to-auto-tag`` with the scan mode
    options; ``engine.IncrementalQuery``); ``merge_only``: a snapshot id — read only its splits that
    need a merge (the native scan reads the others); ``passthrough``: every other option,
    unchanged (streaming ``scan.mode``, ``consumer-id``, ``read.native-scan.enabled``, …).
    """

    target: TableTarget
    columns: tuple[str, ...] | None = None
    filter: str | None = None
    travel: ReadVersion | None = None
    changelog: bool = False
    incremental: IncrementalQuery | None = None
    merge_only: int | None = None
    passthrough: Mapping[str, str] = field(default_factory=dict)
    filter_exact: bool = False
    limit: int | None = None

    def to_options(self) -> dict[str, str]:
        out = dict(self.passthrough)
        if self.filter and self.filter_exact:
            out[FILTER_EXACT] = "true"
        if self.limit is not None:
            out[LIMIT] = str(self.limit)
        out.update(self.target.to_options())
        out[SESSION_APPLIED] = "true"
        if self.merge_only is not None:
            out[MERGE_ONLY] = str(self.merge_only)
        if self.columns is not None:
            out[COLUMNS] = ",".join(self.columns)
        if self.filter:
            out[FILTER] = self.filter
        if self.travel is not None:
            out.update(self.travel.to_options())
        if self.changelog:
            out[READ_CHANGELOG] = "true"
        if self.incremental is not None:
            out.update(incremental_options(self.incremental))
        return out

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadRequest:
        """Parse a source's options; the session's dynamic options (``session-conf``) apply under
        the explicit ones (a hint or ``.option()`` wins), as every other option does."""
        low = _lower_keys(options)
        low = {**session_dynamic(low), **low}
        text = low.get(COLUMNS)
        columns = tuple(c.strip() for c in text.split(",") if c.strip()) if text else None
        return cls(
            TableTarget.from_options(low),
            columns,
            low.get(FILTER) or None,
            ReadVersion.from_options(low),
            bool(_bool(low, READ_CHANGELOG)),
            incremental_query(low),
            _int(low, MERGE_ONLY),
            {k: v for k, v in low.items() if k not in _READ_KEYS},
            bool(_bool(low, FILTER_EXACT)),
            _int(low, LIMIT),
        )


@dataclass(frozen=True)
class WriteRequest:
    """One batch write (one commit): the table, the overwrite and the commit identity.

    ``overwrite``: what the commit replaces (None: an append); ``commit_user`` +
    ``commit_identifier``: a commit with an identifier this user already committed is skipped
    (exactly-once ``foreachBatch`` writes); ``base_snapshot_id``: an overwrite computed from a
    read of that snapshot conflicts with any change to the replaced partitions after it. Table
    options such as ``write-only`` travel in ``passthrough`` and apply to the opened table;
    ``dynamic``: the session's dynamic options for the table (``session-conf``), applied like the
    passthrough but never stored by a write that creates its table; ``job_parallelism``: the
    writing session's, the default number of dynamic-bucket assigners (None: one);
    ``compaction_by_driver``: the commit leaves its compaction to the writing driver.
    """

    target: TableTarget
    overwrite: OverwriteSpec | None = None
    commit_user: str | None = None
    commit_identifier: int | None = None
    base_snapshot_id: int | None = None
    change_tracking: bool | None = None
    passthrough: Mapping[str, str] = field(default_factory=dict)
    dynamic: Mapping[str, str] = field(default_factory=dict)
    job_parallelism: int | None = None
    compaction_by_driver: bool = False

    @property
    def save_mode(self) -> str:
        """Spark's save mode of this write."""
        return "append" if self.overwrite is None else "overwrite"

    def to_options(self) -> dict[str, str]:
        out = {**self.dynamic, **self.passthrough}
        out.update(self.target.to_options())
        out[SESSION_APPLIED] = "true"
        o = self.overwrite
        if o is not None and o.dynamic:
            out[OVERWRITE_MODE] = "dynamic"
        elif o is not None and o.partitions is not None:
            out[OVERWRITE_PARTITIONS] = json.dumps([dict(p) for p in o.partitions], default=str)
        elif o is not None and o.files is not None:
            out[OVERWRITE_FILES] = json.dumps(list(o.files))
        elif o is not None and o.static:
            out[OVERWRITE_PARTITION] = json.dumps(dict(o.static), default=str)
        if self.commit_user:
            out[COMMIT_USER] = self.commit_user
        if self.commit_identifier is not None:
            out[COMMIT_IDENTIFIER] = str(self.commit_identifier)
        if self.base_snapshot_id is not None:
            out[OVERWRITE_BASE_SNAPSHOT] = str(self.base_snapshot_id)
        if self.change_tracking is not None:
            out[CHANGE_TRACKING] = str(self.change_tracking).lower()
        if self.compaction_by_driver:
            out[COMPACTION_BY_DRIVER] = "true"
        return out

    @classmethod
    def from_options(cls, options: Mapping[str, str], overwrite: bool) -> WriteRequest:
        """``overwrite``: Spark's save mode (``mode("overwrite")``); the options refine it."""
        low = _lower_keys(options)
        spec: OverwriteSpec | None = None
        if overwrite:
            listed = _json(low, OVERWRITE_PARTITIONS, list, "a JSON list of partition objects")
            files = _json(low, OVERWRITE_FILES, list, "a JSON list of data file names")
            static = _json(low, OVERWRITE_PARTITION, dict, "a JSON object of partition values")
            dynamic = (low.get(OVERWRITE_MODE.lower()) or "").lower() == "dynamic"
            if listed is not None:
                if not all(isinstance(p, dict) for p in listed):
                    raise InvalidArgumentError(
                        f"option '{OVERWRITE_PARTITIONS}' must be a JSON list of partition objects")
                spec = OverwriteSpec(partitions=tuple(listed))
            elif files is not None:
                if not all(isinstance(f, str) for f in files):
                    raise InvalidArgumentError(
                        f"option '{OVERWRITE_FILES}' must be a JSON list of data file names")
                spec = OverwriteSpec(files=tuple(files))
            elif static is not None:
                spec = OverwriteSpec(static=static)
            elif dynamic or low.get("dynamic-partition-overwrite") == "true":
                spec = OverwriteSpec(dynamic=True)
            else:
                spec = OverwriteSpec()
        return cls(
            TableTarget.from_options(low),
            spec,
            low.get(COMMIT_USER) or None,
            _int(low, COMMIT_IDENTIFIER),
            _int(low, OVERWRITE_BASE_SNAPSHOT),
            _bool(low, CHANGE_TRACKING),
            {k: v for k, v in low.items() if k not in _WRITE_KEYS},
            session_dynamic(low),
            _int(low, JOB_PARALLELISM),
            bool(_bool(low, COMPACTION_BY_DRIVER)),
        )
