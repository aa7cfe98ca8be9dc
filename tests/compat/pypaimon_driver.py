"""Drive pypaimon from JSON requests; this script runs INSIDE the pypaimon virtual environment.

Its one job is to expose a handful of pypaimon operations (create, write, read, snapshots,
incremental read, manifest dump) behind a JSON protocol, so our test suite can exercise the
reference Python implementation without importing it (pypaimon pins an older pyarrow/fsspec).

Invariants:
* Imports only the standard library, pypaimon and the pyarrow/fastavro pypaimon depends on.
  It must never import anything from the dyntable repository.
* Tabular data crosses the process boundary only as files: Arrow IPC (``.arrow``/``.ipc``/
  ``.feather``) or Parquet in, Arrow IPC out. Both pyarrow versions read IPC format v5.
* Every request is handled against a freshly created catalog and freshly loaded table, so no
  pypaimon object state is carried between requests (the server mode below relies on this).

Two ways to run it:
* One shot: ``python pypaimon_driver.py COMMAND [REQUEST_JSON]`` (request JSON from argv[2] or
  stdin). The result JSON goes to stdout, exit code 0. On failure the exit code is 1 and stderr
  holds ``{"error": <exception class>, "message": <text>, "traceback": <text>}``.
* Server: ``python pypaimon_driver.py --serve`` reads one JSON object per line,
  ``{"command": ..., "request": {...}}``, and answers one JSON line each:
  ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ..., "message": ..., "traceback": ...}``.
  Anything pypaimon prints is redirected to stderr so stdout carries only protocol lines. This
  saves the ~1 s pypaimon import per operation.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

_IMPORT_STARTED = time.perf_counter()
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pypaimon import CatalogFactory, Schema  # noqa: E402
from pypaimon.schema.data_types import (  # noqa: E402
    AtomicInteger,
    DataTypeParser,
    PyarrowFieldParser,
)

_IMPORT_SECONDS = time.perf_counter() - _IMPORT_STARTED

# Request keys accepted by the commands; unknown keys are rejected so typos fail loudly.
_ALLOWED_KEYS: dict[str, set[str]] = {
    "version": set(),
    "create": {"warehouse", "table", "schema", "schema_ipc", "partition_keys", "primary_keys",
               "options", "comment", "ignore_if_exists"},
    "write": {"warehouse", "table", "data", "overwrite"},
    "read": {"warehouse", "table", "out", "snapshot_id", "projection", "filter", "options"},
    "snapshots": {"warehouse", "table"},
    "read_incremental": {"warehouse", "table", "out", "start_snapshot", "end_snapshot",
                         "projection", "include_row_kind"},
    "manifest": {"warehouse", "table", "snapshot_id"},
    "schema": {"warehouse", "table"},
    "add_column": {"warehouse", "table", "name", "type"},
}


class DriverError(Exception):
    """A malformed request (as opposed to a failure raised inside pypaimon)."""


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _require(req: dict, key: str) -> Any:
    if key not in req or req[key] is None:
        raise DriverError(f"request is missing required key {key!r}")
    return req[key]


def _catalog(req: dict):
    warehouse = _require(req, "warehouse")
    return CatalogFactory.create({"warehouse": str(warehouse)})


def _table(req: dict, extra_options: dict[str, str] | None = None):
    table = _catalog(req).get_table(_require(req, "table"))
    if extra_options:
        # copy() applies dynamic options (time travel, incremental ranges) without a schema change.
        table = table.copy({k: str(v) for k, v in extra_options.items()})
    return table


def _read_input_table(path: str) -> pa.Table:
    lower = path.lower()
    if lower.endswith(".parquet"):
        return pq.read_table(path)
    with pa.memory_map(path, "r") as source:
        try:
            return pa.ipc.open_file(source).read_all()
        except pa.ArrowInvalid:
            pass
    with pa.memory_map(path, "r") as source:
        return pa.ipc.open_stream(source).read_all()


def _write_ipc(table: pa.Table, path: str) -> None:
    tmp = path + ".tmp"
    with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


def _table_arrow_schema(table) -> pa.Schema:
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def _conform(data: pa.Table, target: pa.Schema) -> pa.Table:
    """Select ``target``'s columns from ``data`` by name and cast each to the target type.

    Nullability is taken from ``target`` only where the column has no nulls, because pypaimon's
    own schema check ignores top-level nullability anyway.
    """
    missing = [f.name for f in target if f.name not in data.column_names]
    if missing:
        raise DriverError(f"data lacks table columns {missing}; data has {data.column_names}")
    extra = [n for n in data.column_names if n not in target.names]
    if extra:
        raise DriverError(f"data has columns {extra} that the table does not have")
    arrays, fields = [], []
    for field in target:
        col = data.column(field.name)
        if col.type != field.type:
            col = col.cast(field.type)
        nullable = field.nullable or col.null_count > 0
        arrays.append(col)
        fields.append(pa.field(field.name, field.type, nullable=nullable))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _filter_predicate(read_builder, spec: Any):
    """Build an AND of equalities from ``{"col": value, ...}`` (null value = IS NULL)."""
    if not isinstance(spec, dict) or not spec:
        raise DriverError('filter must be a non-empty object {"column": value, ...}')
    builder = read_builder.new_predicate_builder()
    preds = [builder.is_null(col) if val is None else builder.equal(col, val)
             for col, val in spec.items()]
    return builder.and_predicates(preds)


# ----------------------------------------------------------------------------------------------
# commands
# ----------------------------------------------------------------------------------------------

def cmd_version(req: dict) -> dict:
    import fsspec
    import pypaimon

    try:  # pypaimon 2.x has no __version__; the build writes _version.VERSION
        from pypaimon._version import VERSION
    except ImportError:
        VERSION = getattr(pypaimon, "__version__", None)  # noqa: N806
    return {
        "pypaimon": VERSION,
        "pyarrow": pa.__version__,
        "fsspec": fsspec.__version__,
        "python": sys.version.split()[0],
        "import_seconds": round(_IMPORT_SECONDS, 3),
        "module_path": os.path.dirname(pypaimon.__file__),
    }


def _fields_from_spec(spec: list) -> list:
    """Turn ``[[name, type], ...]`` (type: Paimon SQL string or JSON type object) into DataFields.

    Field ids are assigned depth-first from 0 (a column, then its nested fields), like Java.
    """
    if not isinstance(spec, list) or not spec:
        raise DriverError("schema must be a non-empty list of [name, paimon_type] pairs")
    counter = AtomicInteger(-1)
    fields = []
    for item in spec:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise DriverError(f"schema entry {item!r} is not a [name, paimon_type] pair")
        name, type_spec = item
        fields.append(DataTypeParser.parse_data_field({"name": name, "type": type_spec}, counter))
    return fields


def cmd_create(req: dict) -> dict:
    catalog = _catalog(req)
    ident = _require(req, "table")
    if "." not in ident:
        raise DriverError(f"table must be 'db.table', got {ident!r}")
    database = ident.split(".", 1)[0]
    partition_keys = list(req.get("partition_keys") or [])
    primary_keys = list(req.get("primary_keys") or [])
    options = {str(k): str(v) for k, v in (req.get("options") or {}).items()}
    comment = req.get("comment")
    if req.get("schema_ipc"):
        with pa.memory_map(req["schema_ipc"], "r") as source:
            arrow_schema = pa.ipc.open_file(source).schema
        schema = Schema.from_pyarrow_schema(arrow_schema, partition_keys=partition_keys,
                                            primary_keys=primary_keys, options=options,
                                            comment=comment)
    else:
        fields = _fields_from_spec(_require(req, "schema"))
        schema = Schema(fields, partition_keys, primary_keys, options, comment)
    catalog.create_database(database, True)
    catalog.create_table(ident, schema, bool(req.get("ignore_if_exists", False)))
    return cmd_schema(req)


def cmd_schema(req: dict) -> dict:
    table = _table(req)
    ts = table.table_schema
    return {
        "id": ts.id,
        "fields": [f.to_dict() for f in ts.fields],
        "partition_keys": list(ts.partition_keys),
        "primary_keys": list(ts.primary_keys),
        "options": dict(ts.options),
        "arrow_schema": str(_table_arrow_schema(table)),
        "bucket_mode": table.bucket_mode().name,
    }


def cmd_write(req: dict) -> dict:
    overwrite = req.get("overwrite")
    # pypaimon (like Java) defaults to dynamic-partition-overwrite=true: an overwrite of a
    # partitioned table then replaces only the partitions present in the new data and ignores
    # the static spec. The harness promises static semantics (True = whole table, spec = that
    # partition), so turn it off for this write.
    table = _table(req, {"dynamic-partition-overwrite": "false"} if overwrite else None)
    data = _conform(_read_input_table(_require(req, "data")), _table_arrow_schema(table))
    builder = table.new_batch_write_builder()
    if overwrite is True:
        builder = builder.overwrite()
    elif isinstance(overwrite, dict):
        builder = builder.overwrite({str(k): v for k, v in overwrite.items()})
    elif overwrite not in (None, False):
        raise DriverError("overwrite must be null, true or a partition spec object")
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        writer.write_arrow(data)
        messages = writer.prepare_commit()
        committer.commit(messages)
    finally:
        writer.close()
        committer.close()
    latest = table.snapshot_manager().get_latest_snapshot()
    return {"rows": data.num_rows, "snapshot_id": latest.id if latest else None}


def _read_builder(table, req: dict):
    builder = table.new_read_builder()
    # Build the predicate before projecting: a projected builder only knows projected columns.
    if req.get("filter"):
        builder = builder.with_filter(_filter_predicate(builder, req["filter"]))
    if req.get("projection"):
        builder = builder.with_projection(list(req["projection"]))
    return builder


def _finish_read(table, result: pa.Table, projection: list | None, keep: list[str]) -> pa.Table:
    """Cast the result to the table's declared Arrow types (pypaimon may hand back variants)."""
    declared = _table_arrow_schema(table)
    names = projection or declared.names
    target = pa.schema([declared.field(n) for n in names if n in declared.names])
    # system columns asked for by name (row tracking's _ROW_ID), as pypaimon returns them
    system = [n for n in (projection or []) if n not in declared.names and n not in keep
              and n in result.column_names]
    arrays, fields = [], []
    for name in keep + system + [f.name for f in target]:
        col = result.column(name)
        if name in target.names:
            field = target.field(name)
            if col.type != field.type:
                col = col.cast(field.type)
            fields.append(pa.field(name, field.type, nullable=field.nullable or col.null_count > 0))
        else:
            fields.append(result.schema.field(name))
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def cmd_read(req: dict) -> dict:
    out = _require(req, "out")
    extra = dict(req.get("options") or {})
    if req.get("snapshot_id") is not None:
        extra["scan.snapshot-id"] = int(req["snapshot_id"])
    table = _table(req, extra)
    builder = _read_builder(table, req)
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits)
    if result is None:  # some pypaimon versions return None for an empty plan
        result = _table_arrow_schema(table).empty_table()
    result = _finish_read(table, result, req.get("projection"), [])
    _write_ipc(result, out)
    return {"rows": result.num_rows, "splits": len(splits), "out": out}


def _snapshot_dict(snapshot) -> dict:
    return {
        "id": snapshot.id,
        "schema_id": snapshot.schema_id,
        "commit_kind": snapshot.commit_kind,
        "commit_user": snapshot.commit_user,
        "commit_identifier": snapshot.commit_identifier,
        "time_millis": snapshot.time_millis,
        "total_record_count": snapshot.total_record_count,
        "delta_record_count": snapshot.delta_record_count,
        "changelog_record_count": snapshot.changelog_record_count,
        "base_manifest_list": snapshot.base_manifest_list,
        "delta_manifest_list": snapshot.delta_manifest_list,
        "changelog_manifest_list": snapshot.changelog_manifest_list,
        "index_manifest": snapshot.index_manifest,
        "watermark": snapshot.watermark,
        "next_row_id": snapshot.next_row_id,
    }


def cmd_snapshots(req: dict) -> dict:
    table = _table(req)
    snapshots = sorted(table.snapshot_manager().list_snapshots(), key=lambda s: s.id)
    return {"snapshots": [_snapshot_dict(s) for s in snapshots]}


def cmd_read_incremental(req: dict) -> dict:
    """Read what changed in snapshots (start_snapshot, end_snapshot].

    pypaimon 2.1 has no snapshot-id based incremental option; it offers
    ``incremental-between-timestamp`` = ``start_ms(exclusive),end_ms(inclusive)`` which it maps
    back to snapshot ids with "latest snapshot at or before the timestamp". We therefore pass
    the two snapshots' commit times; the range is ambiguous only if two snapshots share a
    millisecond, which we detect and report.
    """
    out = _require(req, "out")
    start_id = int(_require(req, "start_snapshot"))
    end_id = int(_require(req, "end_snapshot"))
    base = _table(req)
    manager = base.snapshot_manager()
    times = {s.id: s.time_millis for s in manager.list_snapshots()}
    if end_id not in times:
        raise DriverError(f"snapshot {end_id} does not exist; known {sorted(times)}")
    start_ms = times[start_id] if start_id in times else times[min(times)] - 1
    end_ms = times[end_id]
    clashes = sorted(i for i, t in times.items() if t in (start_ms, end_ms)
                     and i not in (start_id, end_id))
    if clashes:
        raise DriverError(f"snapshots {clashes} share a commit millisecond with the requested "
                          "range bounds; pypaimon's timestamp-based incremental read is ambiguous")
    table = base.copy({"incremental-between-timestamp": f"{start_ms},{end_ms}"})
    include_row_kind = bool(req.get("include_row_kind", True))
    from pypaimon.read.table_read import TableRead

    builder = _read_builder(table, req)
    splits = builder.new_scan().plan().splits()
    reader = TableRead(table=table, predicate=None, read_type=builder.read_type(),
                       include_row_kind=include_row_kind)
    result = reader.to_arrow(splits)
    if result is None:
        result = _table_arrow_schema(table).empty_table()
    keep = [n for n in result.column_names if n.startswith("_row_kind")]
    result = _finish_read(table, result, req.get("projection"), keep)
    _write_ipc(result, out)
    return {"rows": result.num_rows, "splits": len(splits), "out": out,
            "mechanism": "incremental-between-timestamp", "range_ms": [start_ms, end_ms]}


def cmd_manifest(req: dict) -> dict:
    """Dump the raw Avro records (lists and entries) reachable from one snapshot."""
    import fastavro

    table = _table(req)
    manager = table.snapshot_manager()
    snapshot = (manager.get_snapshot_by_id(int(req["snapshot_id"])) if req.get("snapshot_id")
                else manager.get_latest_snapshot())
    if snapshot is None:
        raise DriverError("table has no snapshot")
    manifest_dir = os.path.join(table.table_path, "manifest")

    def read_avro(name: str) -> tuple[dict, str, list]:
        with open(os.path.join(manifest_dir, name), "rb") as fh:
            reader = fastavro.reader(fh)
            return reader.writer_schema, reader.codec, list(reader)

    result: dict[str, Any] = {"snapshot": _snapshot_dict(snapshot), "lists": {}}
    for kind in ("base_manifest_list", "delta_manifest_list", "changelog_manifest_list"):
        name = getattr(snapshot, kind)
        if not name:
            continue
        schema, codec, metas = read_avro(name)
        manifests = []
        for meta in metas:
            m_schema, m_codec, entries = read_avro(meta["_FILE_NAME"])
            manifests.append({"meta": meta, "codec": m_codec, "entries": entries,
                              "schema": m_schema})
        result["lists"][kind] = {"name": name, "codec": codec, "schema": schema,
                                 "manifests": manifests}
    return _jsonable(result)


def cmd_add_column(req: dict) -> dict:
    """ALTER TABLE ADD COLUMN through pypaimon's catalog: ``name`` (a column, or a list naming a
    nested field's path) of ``type`` (Paimon SQL text or a JSON type object)."""
    from pypaimon.schema.schema_change import SchemaChange

    name = _require(req, "name")
    path = [name] if isinstance(name, str) else list(name)
    spec = {"name": path[-1], "type": _require(req, "type")}
    field = DataTypeParser.parse_data_field(spec, AtomicInteger(-1))
    _catalog(req).alter_table(_require(req, "table"), [SchemaChange.add_column(path, field.type)])
    return cmd_schema(req)


COMMANDS: dict[str, Callable[[dict], dict]] = {
    "version": cmd_version,
    "create": cmd_create,
    "write": cmd_write,
    "read": cmd_read,
    "snapshots": cmd_snapshots,
    "read_incremental": cmd_read_incremental,
    "manifest": cmd_manifest,
    "schema": cmd_schema,
    "add_column": cmd_add_column,
}


def dispatch(command: str, request: dict) -> dict:
    """Validate and run one command; raises on any failure."""
    if command not in COMMANDS:
        raise DriverError(f"unknown command {command!r}; known: {sorted(COMMANDS)}")
    if not isinstance(request, dict):
        raise DriverError("request must be a JSON object")
    unknown = set(request) - _ALLOWED_KEYS[command]
    if unknown:
        raise DriverError(f"unknown request keys {sorted(unknown)} for {command!r}; "
                          f"allowed: {sorted(_ALLOWED_KEYS[command])}")
    return COMMANDS[command](request)


def _error_payload(exc: BaseException) -> dict:
    return {"error": type(exc).__name__, "message": str(exc),
            "traceback": traceback.format_exc()}


def serve() -> int:
    """Answer one JSON request per stdin line until EOF (see module docstring)."""
    protocol_out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            # pypaimon logs/prints must not corrupt the protocol stream.
            with contextlib.redirect_stdout(sys.stderr):
                result = dispatch(message.get("command"), message.get("request") or {})
            reply = {"ok": True, "result": result}
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the caller
            reply = {"ok": False, **_error_payload(exc)}
        protocol_out.write(json.dumps(reply) + "\n")
        protocol_out.flush()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "--serve":
        return serve()
    if len(argv) < 2:
        sys.stderr.write(json.dumps({"error": "DriverError",
                                     "message": "usage: pypaimon_driver.py COMMAND [JSON]"}) + "\n")
        return 1
    try:
        raw = argv[2] if len(argv) > 2 else sys.stdin.read()
        request = json.loads(raw) if raw.strip() else {}
        with contextlib.redirect_stdout(sys.stderr):
            result = dispatch(argv[1], request)
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(json.dumps(_error_payload(exc)) + "\n")
        return 1
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
