"""System tables about a table's declared behaviour: ``$aggregation_fields`` and ``$statistics``.

One job: lay out Paimon 2.0's ``AggregationFieldsTable`` (one row per column of the latest
schema with its ``fields.<column>.*`` options) and ``StatisticTable`` (the ``ANALYZE`` statistics
file of the chosen snapshot, default latest). Invariants:

* ``field_type`` is Paimon's SQL text of the type (``INT NOT NULL``, ``ARRAY<STRING>``,
  ``ROW<`a` INT>``), as Java's ``DataType.toString`` prints it;
* ``function`` / ``function_options`` are Java's list text (``[sum]``, ``[]``) of the values /
  keys of every option ``fields.<column>.<x>``, in the schema file's option order;
* ``$statistics`` has at most one row; dyntable never writes statistics files (no ``ANALYZE``),
  so it shows what another engine's ``ANALYZE TABLE`` recorded, ``colstat`` re-printed as
  Jackson's pretty JSON; a snapshot naming a missing statistics file is CorruptMetadataError.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.errors import CorruptMetadataError
from engine.jackson import jackson_json
from engine.meta.paths import join
from engine.system_tables.columns import arrow_schema, build_table
from engine.system_tables.files import resolve_snapshot
from engine.types import DataType, TypeRoot, type_to_json

if TYPE_CHECKING:
    from engine.store import FileStore


def paimon_type_string(t: DataType) -> str:
    """Java Paimon's ``DataType.toString`` (its SQL text) of ``t``."""
    suffix = "" if t.nullable else " NOT NULL"
    r = t.root
    if r in (TypeRoot.ARRAY, TypeRoot.MULTISET):
        assert t.element is not None
        return f"{r.value}<{paimon_type_string(t.element)}>{suffix}"
    if r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        return f"MAP<{paimon_type_string(t.key)}, {paimon_type_string(t.value)}>{suffix}"
    if r is TypeRoot.ROW:
        parts = []
        for f in t.fields:
            part = "`" + f.name.replace("`", "``") + "` " + paimon_type_string(f.type)
            if f.description is not None:
                part += " '" + f.description.replace("'", "''") + "'"
            parts.append(part)
        return "ROW<" + ", ".join(parts) + ">" + suffix
    text = type_to_json(t)
    assert isinstance(text, str)  # atomic types serialize as their SQL text
    return text


def _java_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def read_aggregation_fields(store: FileStore) -> pa.Table:
    """``$aggregation_fields``: each column of the newest schema and its per-field options."""
    # The newest schema version (as Java reads ``schemaManager().latest()``), not the one this
    # Table object was loaded with: ALTER TABLE may have changed the options since.
    schema = store.schemas.latest() or store.schema
    values: dict[str, list[str]] = {}
    keys: dict[str, list[str]] = {}
    for key, value in schema.options.items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            values.setdefault(parts[1], []).append(value)
            keys.setdefault(parts[1], []).append(key)
    fields = schema.fields
    return build_table("aggregation_fields", {
        "field_name": [f.name for f in fields],
        "field_type": [paimon_type_string(f.type) for f in fields],
        "function": [_java_list(values.get(f.name, [])) for f in fields],
        "function_options": [_java_list(keys.get(f.name, [])) for f in fields],
        "comment": [f.description for f in fields],
    })


def _long(doc: dict[str, Any], key: str, path: str) -> int | None:
    value = doc.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise CorruptMetadataError(f"statistics file {path}: {key} is not an integer: {value!r}")


def read_statistics(store: FileStore, snapshot_id: int | None) -> pa.Table:
    """``$statistics``: the snapshot's statistics file (none: no row)."""
    snapshot = resolve_snapshot(store, snapshot_id)
    if snapshot is None or snapshot.statistics is None:
        return arrow_schema("statistics").empty_table()
    path = join(store.paths.root, "statistics", snapshot.statistics)
    try:
        doc = json.loads(store.io.read_text(path))
    except FileNotFoundError:
        raise CorruptMetadataError(
            f"statistics file {path} is referenced by snapshot {snapshot.id} but missing"
        ) from None
    except ValueError as e:
        raise CorruptMetadataError(f"statistics file {path} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise CorruptMetadataError(f"statistics file {path} does not hold a JSON object")
    snap, schema = _long(doc, "snapshotId", path), _long(doc, "schemaId", path)
    if snap is None or schema is None:
        raise CorruptMetadataError(f"statistics file {path} lacks snapshotId or schemaId")
    col_stats = doc.get("colStats")
    return build_table("statistics", {
        "snapshot_id": [snap],
        "schema_id": [schema],
        "mergedRecordCount": [_long(doc, "mergedRecordCount", path)],
        "mergedRecordSize": [_long(doc, "mergedRecordSize", path)],
        "colstat": [jackson_json(col_stats if col_stats is not None else {})],
    })
