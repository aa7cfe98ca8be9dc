"""The Avro writer schemas of Paimon's manifest-type files, as plain data.

One job: hold the exact record layouts (field names, order and Avro types) of a manifest
entry, a data file's metadata, its SimpleStats and a manifest-list entry, as Java Paimon writes
them (``docs/design/format-notes.md`` §5–§6). ``engine.meta.manifest`` parses them once with fastavro.

Invariants (each is something Java's reader depends on, see §5):

* every nullable field is the union ``["null", T]`` (null branch first) with ``default: null``;
  non-nullable fields are a bare type with no default;
* ``_CREATION_TIME`` carries the ``timestamp-millis`` logical type; BIGINT is ``long``, every
  INT/TINYINT is ``int`` (the reader picks its decoder from the file's type, not its own);
* every top-level record starts with ``_VERSION`` (always :data:`FORMAT_IDENTIFIER`);
* nested record names follow Java's ``parent + "_" + field`` rule; readers ignore names, but Avro
  forbids defining the same name twice, so each SimpleStats use gets its own name.

The builders return fresh dicts on every call because ``fastavro.parse_schema`` annotates the
dicts it is given; callers that keep a schema should parse it once.
"""

from __future__ import annotations

from typing import Any

#: Value of ``_VERSION`` in every manifest-type record: a permanent format identifier
#: (Java ``ManifestSchemaUtils.FORMAT_IDENTIFIER``), not a schema version.
FORMAT_IDENTIFIER = 2

#: Name Java gives to the top-level record; nested records append ``_<field name>``.
ROOT_RECORD_NAME = "org.apache.paimon.avro.generated.record"

Schema = dict[str, Any]


def _nullable(avro_type: Any) -> list[Any]:
    """The only union shape Java reads: null first."""
    return ["null", avro_type]


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": _nullable(avro_type), "default": None}


def _req(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": avro_type}


def simple_stats_schema(record_name: str) -> Schema:
    """SimpleStats (§6.1): min row, max row (serialized BinaryRows) and per-column null counts.

    Args:
        record_name: The full Avro record name (distinct for each use inside one schema).

    Returns:
        A fresh Avro record schema dict.
    """
    return {
        "type": "record",
        "name": record_name,
        "fields": [
            _req("_MIN_VALUES", "bytes"),
            _req("_MAX_VALUES", "bytes"),
            _opt("_NULL_COUNTS", {"type": "array", "items": _nullable("long")}),
        ],
    }


def data_file_meta_schema(record_name: str = ROOT_RECORD_NAME + "__FILE") -> Schema:
    """DataFileMeta (§6.4), fields 0–19 (``_WRITE_COLS_SEQUENCES``, field 20, is not written).

    Args:
        record_name: The full Avro record name; the default is the name Java uses for ``_FILE``.

    Returns:
        A fresh Avro record schema dict.
    """
    string_array = {"type": "array", "items": "string"}
    return {
        "type": "record",
        "name": record_name,
        "fields": [
            _req("_FILE_NAME", "string"),
            _req("_FILE_SIZE", "long"),
            _req("_ROW_COUNT", "long"),
            _req("_MIN_KEY", "bytes"),
            _req("_MAX_KEY", "bytes"),
            _req("_KEY_STATS", simple_stats_schema(record_name + "__KEY_STATS")),
            _req("_VALUE_STATS", simple_stats_schema(record_name + "__VALUE_STATS")),
            _req("_MIN_SEQUENCE_NUMBER", "long"),
            _req("_MAX_SEQUENCE_NUMBER", "long"),
            _req("_SCHEMA_ID", "long"),
            _req("_LEVEL", "int"),
            _req("_EXTRA_FILES", string_array),
            _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
            _opt("_DELETE_ROW_COUNT", "long"),
            _opt("_EMBEDDED_FILE_INDEX", "bytes"),
            _opt("_FILE_SOURCE", "int"),
            _opt("_VALUE_STATS_COLS", dict(string_array)),
            _opt("_EXTERNAL_PATH", "string"),
            _opt("_FIRST_ROW_ID", "long"),
            _opt("_WRITE_COLS", dict(string_array)),
        ],
    }


def manifest_entry_schema() -> Schema:
    """One record of a manifest file (§6.3): kind, partition, bucket, total buckets, file.

    Returns:
        A fresh Avro record schema dict.
    """
    return {
        "type": "record",
        "name": ROOT_RECORD_NAME,
        "fields": [
            _req("_VERSION", "int"),
            _req("_KIND", "int"),
            _req("_PARTITION", "bytes"),
            _req("_BUCKET", "int"),
            _req("_TOTAL_BUCKETS", "int"),
            _req("_FILE", data_file_meta_schema(ROOT_RECORD_NAME + "__FILE")),
        ],
    }


def manifest_file_meta_schema() -> Schema:
    """One record of a manifest list (§6.2): all 13 fields, 7–12 nullable.

    Returns:
        A fresh Avro record schema dict.
    """
    return {
        "type": "record",
        "name": ROOT_RECORD_NAME,
        "fields": [
            _req("_VERSION", "int"),
            _req("_FILE_NAME", "string"),
            _req("_FILE_SIZE", "long"),
            _req("_NUM_ADDED_FILES", "long"),
            _req("_NUM_DELETED_FILES", "long"),
            _req("_PARTITION_STATS", simple_stats_schema(ROOT_RECORD_NAME + "__PARTITION_STATS")),
            _req("_SCHEMA_ID", "long"),
            _opt("_MIN_BUCKET", "int"),
            _opt("_MAX_BUCKET", "int"),
            _opt("_MIN_LEVEL", "int"),
            _opt("_MAX_LEVEL", "int"),
            _opt("_MIN_ROW_ID", "long"),
            _opt("_MAX_ROW_ID", "long"),
        ],
    }
