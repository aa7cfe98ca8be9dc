"""The JDBC metadata results BI tools ask for on connect (GetTables, GetColumns, …) as Arrow tables.

Each function answers one HiveServer2 metadata call with the columns ``java.sql.DatabaseMetaData``
defines for it (names, order, types), from the warehouse's catalog.

* Managed tables are ``TABLE``, with their comment as ``REMARKS``; dyntable views are ``VIEW``
  (a database's permanent views in it, the session's temporary views with an empty schema, as
  Spark's Thrift server lists its temporary views). Each table's system tables
  (``t$snapshots``, ``t$files``, ``t$audit_log``, …) are ``SYSTEM TABLE`` and are listed only
  when asked for: when the table types name ``SYSTEM TABLE``, or when the table-name pattern has
  a ``$`` (``orders$%``, ``orders$snapshots``). A GUI browsing a schema (DBeaver, DataGrip) so
  sees each table once, and a query naming a system table still finds its columns. Paimon's
  global system tables ``sys.tables``, ``sys.partitions`` and ``sys.all_table_options`` are
  ``SYSTEM TABLE`` of schema ``sys`` under the same rule (asked for by type, or by a schema
  pattern that is exactly ``sys``); ``sys.catalog_options`` is not listed (it exists only when a
  catalog option enables it, as Paimon lists it).
* Name arguments are search patterns as HiveServer2 reads them: JDBC's ``%`` (any text) and
  ``_`` (one character) with ``\\`` escaping, and the Hive forms clients send for "any": ``*``
  and ``.*`` (impyla's default). Null or empty matches everything; comparison ignores case.
* Column types are the types Spark reads the table with (``sqlext.source.spark_types``), mapped to
  ``java.sql.Types`` codes; column comments are ``REMARKS``.
* Functions: Spark's (no schema) and dyntable's procedures (schema ``sys``); a schema pattern
  that does not match everything selects by schema (``getFunctions(null, "sys", "%")`` lists
  the procedures alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from TCLIService import ttypes as tt

from engine import (
    DATA_TABLES,
    GLOBAL_TABLES,
    METADATA_TABLES,
    SYSTEM_DATABASE,
    DyntableError,
    FileSystemCatalog,
    Identifier,
    binlog_schema,
    global_table_schema,
    system_table_schema,
)
from engine.arrow_types import to_arrow_field
from sqlext.execute.views import list_views, temporary_names
from sqlext.server.results import hive_type, type_name
from sqlext.source.spark_types import spark_arrow_schema

if TYPE_CHECKING:
    from sqlext.session import SqlSession

TABLE, SYSTEM_TABLE, VIEW = "TABLE", "SYSTEM TABLE", "VIEW"
TABLE_TYPES = (TABLE, SYSTEM_TABLE, VIEW)

# java.sql.Types of each Hive type id (what Hive's and Spark's Thrift servers report).
JDBC_TYPES: dict[int, int] = {
    tt.TTypeId.BOOLEAN_TYPE: 16, tt.TTypeId.TINYINT_TYPE: -6, tt.TTypeId.SMALLINT_TYPE: 5,
    tt.TTypeId.INT_TYPE: 4, tt.TTypeId.BIGINT_TYPE: -5, tt.TTypeId.FLOAT_TYPE: 6, tt.TTypeId.DOUBLE_TYPE: 8,
    tt.TTypeId.STRING_TYPE: 12, tt.TTypeId.TIMESTAMP_TYPE: 93, tt.TTypeId.BINARY_TYPE: -2,
    tt.TTypeId.ARRAY_TYPE: 2003, tt.TTypeId.MAP_TYPE: 2000, tt.TTypeId.STRUCT_TYPE: 2002,
    tt.TTypeId.DECIMAL_TYPE: 3, tt.TTypeId.NULL_TYPE: 0, tt.TTypeId.DATE_TYPE: 91,
}
_STR, _I32, _I16 = pa.string(), pa.int32(), pa.int16()


_ANY = ("", "%", "*", ".*")


def like(pattern: str | None) -> re.Pattern[str] | None:
    """A search pattern as a regex; None when it matches everything.

    ``%`` and ``*`` are any text, ``_`` one character, ``.*`` any text (Hive reads patterns as
    regular expressions once ``%`` and ``_`` are translated, and impyla sends ``.*``), ``\\``
    escapes the next character; everything else, ``$`` included, stands for itself.
    """
    if pattern is None or pattern in _ANY:
        return None
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if pattern.startswith(".*", i):
            out.append(".*")
            i += 2
            continue
        out.append(".*" if ch in "%*" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def _names_system_tables(pattern: str | None) -> bool:
    """Whether a table-name pattern asks for system tables (it has a ``$``)."""
    return pattern is not None and "$" in pattern


def _match(regex: re.Pattern[str] | None, name: str) -> bool:
    return regex is None or regex.fullmatch(name) is not None


def _table(columns: list[tuple[str, pa.DataType]], rows: Iterable[tuple[Any, ...]]) -> pa.Table:
    rows = list(rows)
    schema = pa.schema(columns)
    return pa.table({name: [r[i] for r in rows] for i, (name, _) in enumerate(columns)}, schema=schema)


def catalogs() -> pa.Table:
    """No catalog level: the warehouse's databases are the schemas (as Spark's Thrift server shows them)."""
    return _table([("TABLE_CAT", _STR)], [])


def table_types() -> pa.Table:
    return _table([("TABLE_TYPE", _STR)], [(t,) for t in TABLE_TYPES])


def schemas(catalog: FileSystemCatalog, schema_pattern: str | None) -> pa.Table:
    regex = like(schema_pattern)
    rows = [(db, "") for db in catalog.list_databases() if _match(regex, db)]
    return _table([("TABLE_SCHEM", _STR), ("TABLE_CATALOG", _STR)], rows)


def _system_names(table: str) -> list[str]:
    return [f"{table}${name}" for name in (*METADATA_TABLES, *DATA_TABLES)]


# The global system tables a listing shows (sys.catalog_options only exists when enabled).
_LISTED_GLOBALS = tuple(g for g in GLOBAL_TABLES if g != "catalog_options")


def _is_global(catalog: FileSystemCatalog, db: str, name: str) -> bool:
    return (db.lower() == SYSTEM_DATABASE and name.lower() in GLOBAL_TABLES
            and not catalog.table_exists(Identifier(db, name)))


def _globals_of(catalog: FileSystemCatalog, schema_pattern: str | None, table_regex: re.Pattern[str] | None,
                system: bool) -> list[tuple[str, str, str]]:
    named = schema_pattern is not None and schema_pattern.lower() == SYSTEM_DATABASE
    if not (named or (system and _match(like(schema_pattern), SYSTEM_DATABASE))):
        return []
    if catalog.database_exists(SYSTEM_DATABASE):
        return []  # a warehouse database named sys: its own tables are listed instead
    return [(SYSTEM_DATABASE, g, SYSTEM_TABLE) for g in _LISTED_GLOBALS if _match(table_regex, g)]


def _tables_of(catalog: FileSystemCatalog, schema_pattern: str | None, table_pattern: str | None,
               system: bool = False) -> list[tuple[str, str, str]]:
    """(database, name, type) of every managed table the patterns match, and of their system
    tables when ``system`` or the table pattern names them."""
    schema_regex, table_regex = like(schema_pattern), like(table_pattern)
    system = system or _names_system_tables(table_pattern)
    found = _globals_of(catalog, schema_pattern, table_regex, system)
    for db in catalog.list_databases():
        if not _match(schema_regex, db):
            continue
        try:
            names = catalog.list_tables(db)
        except DyntableError:
            continue  # dropped while we listed
        for name in names:
            if _match(table_regex, name):
                found.append((db, name, TABLE))
            if system:
                found.extend((db, s, SYSTEM_TABLE) for s in _system_names(name) if _match(table_regex, s))
    return found


TABLES_COLUMNS = [
    ("TABLE_CAT", _STR), ("TABLE_SCHEM", _STR), ("TABLE_NAME", _STR), ("TABLE_TYPE", _STR), ("REMARKS", _STR),
    ("TYPE_CAT", _STR), ("TYPE_SCHEM", _STR), ("TYPE_NAME", _STR), ("SELF_REFERENCING_COL_NAME", _STR),
    ("REF_GENERATION", _STR),
]


def _comment(catalog: FileSystemCatalog, db: str, name: str) -> str:
    if "$" in name:
        return ""
    try:
        fmt = catalog.get_format_table(Identifier(db, name))
        if fmt is not None:
            return fmt.comment or ""
        return catalog.get_table(Identifier(db, name)).schema.comment or ""
    except DyntableError:
        return ""  # dropped while we listed


def _views_of(session: SqlSession, schema_pattern: str | None,
              table_pattern: str | None) -> list[tuple[str, str, str]]:
    """(schema, name, comment) of the dyntable views the patterns match: every matching database's
    permanent views, then the session's temporary ones (schema "", whatever the schema pattern)."""
    schema_regex, table_regex = like(schema_pattern), like(table_pattern)
    found: list[tuple[str, str, str]] = []
    for db in session.catalog.list_databases():
        if _match(schema_regex, db):
            try:
                views = list_views(session, db)
            except (DyntableError, FileNotFoundError):
                continue  # dropped while we listed
            found.extend((db, v.name, v.comment or "") for v in views if _match(table_regex, v.name))
    for name in temporary_names(session):
        if _match(table_regex, name):
            view = session.temp_views.get(name.lower())
            found.append(("", name, (view.comment if view is not None else None) or ""))
    return found


def tables(catalog: FileSystemCatalog, schema_pattern: str | None, table_pattern: str | None,
           types: list[str] | None, session: SqlSession | None = None) -> pa.Table:
    """GetTables; with ``session``, its dyntable views (permanent and temporary) as ``VIEW`` too."""
    wanted = {t.upper() for t in types} if types else None
    system = wanted is not None and SYSTEM_TABLE in wanted
    rows = [
        ("", db, name, kind, _comment(catalog, db, name), None, None, None, None, None)
        for db, name, kind in _tables_of(catalog, schema_pattern, table_pattern, system)
        if wanted is None or kind in wanted
    ]
    if session is not None and (wanted is None or VIEW in wanted):
        rows.extend(
            ("", db, name, VIEW, comment, None, None, None, None, None)
            for db, name, comment in _views_of(session, schema_pattern, table_pattern)
        )
    return _table(TABLES_COLUMNS, rows)


def _columns_of(catalog: FileSystemCatalog, db: str, name: str) -> tuple[pa.Schema, dict[str, str]]:
    """The columns of a table or system table as Spark reads them, and the column comments."""
    if _is_global(catalog, db, name):
        return spark_arrow_schema(global_table_schema(name)), {}
    base, _, system = name.partition("$")
    fmt = catalog.get_format_table(Identifier(db, base)) if not system else None
    if fmt is not None:  # a format table: its columns, from its schema file
        columns = pa.schema([to_arrow_field(f) for f in fmt.fields])
        return spark_arrow_schema(columns), {f.name: f.description for f in fmt.fields if f.description}
    table = catalog.get_table(Identifier(db, base))
    data = spark_arrow_schema(table.arrow_schema)
    comments = {f.name: f.description for f in table.schema.fields if f.description}
    if not system:
        return data, comments
    if system.lower() == "audit_log":
        return pa.schema([pa.field("rowkind", pa.string(), False), *data]), comments
    if system.lower() == "binlog":
        return spark_arrow_schema(binlog_schema(pa.schema([pa.field("rowkind", pa.string(), False),
                                                           *table.arrow_schema]))), {}
    if system.lower() == "ro":
        return data, comments
    return spark_arrow_schema(system_table_schema(table, system)), {}


COLUMNS_COLUMNS = [
    ("TABLE_CAT", _STR), ("TABLE_SCHEM", _STR), ("TABLE_NAME", _STR), ("COLUMN_NAME", _STR),
    ("DATA_TYPE", _I32), ("TYPE_NAME", _STR), ("COLUMN_SIZE", _I32), ("BUFFER_LENGTH", pa.int8()),
    ("DECIMAL_DIGITS", _I32), ("NUM_PREC_RADIX", _I32), ("NULLABLE", _I32), ("REMARKS", _STR),
    ("COLUMN_DEF", _STR), ("SQL_DATA_TYPE", _I32), ("SQL_DATETIME_SUB", _I32), ("CHAR_OCTET_LENGTH", _I32),
    ("ORDINAL_POSITION", _I32), ("IS_NULLABLE", _STR), ("SCOPE_CATALOG", _STR), ("SCOPE_SCHEMA", _STR),
    ("SCOPE_TABLE", _STR), ("SOURCE_DATA_TYPE", _I16), ("IS_AUTO_INCREMENT", _STR),
]


def _size(t: pa.DataType) -> tuple[int | None, int | None, int | None]:
    """(COLUMN_SIZE, DECIMAL_DIGITS, NUM_PREC_RADIX) as Hive reports them."""
    if pa.types.is_decimal(t):
        return t.precision, t.scale, 10
    if pa.types.is_integer(t):
        return {1: 3, 2: 5, 4: 10, 8: 19}[t.bit_width // 8], 0, 10
    if pa.types.is_float32(t):
        return 7, 7, 10
    if pa.types.is_float64(t):
        return 15, 15, 10
    if pa.types.is_date(t):
        return 10, None, None
    if pa.types.is_timestamp(t):
        return 29, 9, None
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return 2147483647, None, None
    return None, None, None


def columns(catalog: FileSystemCatalog, schema_pattern: str | None, table_pattern: str | None,
            column_pattern: str | None) -> pa.Table:
    column_regex = like(column_pattern)
    rows = []
    for db, name, _kind in _tables_of(catalog, schema_pattern, table_pattern):
        try:
            schema, comments = _columns_of(catalog, db, name)
        except DyntableError:
            continue  # dropped while we listed
        for position, field in enumerate(schema, 1):
            if not _match(column_regex, field.name):
                continue
            size, digits, radix = _size(field.type)
            rows.append((
                "", db, name, field.name, JDBC_TYPES.get(hive_type(field.type), 1111), type_name(field.type),
                size, None, digits, radix, 1 if field.nullable else 0, comments.get(field.name, ""),
                None, None, None, None,
                position, "YES" if field.nullable else "NO", None, None, None, None, "NO",
            ))
    return _table(COLUMNS_COLUMNS, rows)


def primary_keys(catalog: FileSystemCatalog, schema: str | None, table: str | None) -> pa.Table:
    """The primary-key columns; the sequence column is JDBC's ``KEY_SEQ`` (Hive misspells it ``KEQ_SEQ``)."""
    rows = []
    if table:
        db = schema or "default"
        try:
            keys = catalog.get_table(Identifier(db, table)).primary_keys
        except DyntableError:
            keys = ()
        rows = [("", db, table, key, seq, f"pk_{table}") for seq, key in enumerate(keys, 1)]
    return _table([("TABLE_CAT", _STR), ("TABLE_SCHEM", _STR), ("TABLE_NAME", _STR), ("COLUMN_NAME", _STR),
                   ("KEY_SEQ", _I32), ("PK_NAME", _STR)], rows)


_TYPE_INFO = [  # (name, hive type id, precision, literal quote, searchable, numeric)
    ("BOOLEAN", tt.TTypeId.BOOLEAN_TYPE, None, None, 2, False),
    ("TINYINT", tt.TTypeId.TINYINT_TYPE, 3, None, 2, True),
    ("SMALLINT", tt.TTypeId.SMALLINT_TYPE, 5, None, 2, True),
    ("INT", tt.TTypeId.INT_TYPE, 10, None, 2, True),
    ("BIGINT", tt.TTypeId.BIGINT_TYPE, 19, None, 2, True),
    ("FLOAT", tt.TTypeId.FLOAT_TYPE, 7, None, 2, True),
    ("DOUBLE", tt.TTypeId.DOUBLE_TYPE, 15, None, 2, True),
    ("DECIMAL", tt.TTypeId.DECIMAL_TYPE, 38, None, 2, True),
    ("STRING", tt.TTypeId.STRING_TYPE, None, "'", 3, False),
    ("DATE", tt.TTypeId.DATE_TYPE, None, "'", 2, False),
    ("TIMESTAMP", tt.TTypeId.TIMESTAMP_TYPE, None, "'", 2, False),
    ("BINARY", tt.TTypeId.BINARY_TYPE, None, None, 0, False),
    ("ARRAY", tt.TTypeId.ARRAY_TYPE, None, None, 0, False),
    ("MAP", tt.TTypeId.MAP_TYPE, None, None, 0, False),
    ("STRUCT", tt.TTypeId.STRUCT_TYPE, None, None, 0, False),
    ("VOID", tt.TTypeId.NULL_TYPE, None, None, 3, False),
]


def type_info() -> pa.Table:
    cols = [
        ("TYPE_NAME", _STR),
        ("DATA_TYPE", _I32),
        ("PRECISION", _I32),
        ("LITERAL_PREFIX", _STR),
        ("LITERAL_SUFFIX", _STR),
        ("CREATE_PARAMS", _STR),
        ("NULLABLE", _I16),
        ("CASE_SENSITIVE", pa.bool_()),
        ("SEARCHABLE", _I16),
        ("UNSIGNED_ATTRIBUTE", pa.bool_()),
        ("FIXED_PREC_SCALE", pa.bool_()),
        ("AUTO_INCREMENT", pa.bool_()),
        ("LOCAL_TYPE_NAME", _STR),
        ("MINIMUM_SCALE", _I16),
        ("MAXIMUM_SCALE", _I16),
        ("SQL_DATA_TYPE", _I32),
        ("SQL_DATETIME_SUB", _I32),
        ("NUM_PREC_RADIX", _I32),
    ]
    rows = [
        (name, JDBC_TYPES[tid], precision, quote, quote, None, 1, tid == tt.TTypeId.STRING_TYPE, searchable,
         False if numeric else None, False, False, None, 0, 38 if tid == tt.TTypeId.DECIMAL_TYPE else 0,
         None, None, 10 if numeric else None)
        for name, tid, precision, quote, searchable, numeric in _TYPE_INFO
    ]
    return _table(cols, rows)


FUNCTIONS_COLUMNS = [("FUNCTION_CAT", _STR), ("FUNCTION_SCHEM", _STR), ("FUNCTION_NAME", _STR),
                     ("REMARKS", _STR), ("FUNCTION_TYPE", _I32), ("SPECIFIC_NAME", _STR)]
_FUNCTION_RESULT_UNKNOWN, _FUNCTION_RETURNS_TABLE = 0, 2


def functions(spark: Any, schema_pattern: str | None, function_pattern: str | None) -> pa.Table:
    """Spark's built-in and registered functions, and dyntable's procedures (schema ``sys``, for CALL).

    Built-in functions have no schema: a schema pattern that does not match everything leaves
    them out (Spark's Thrift server repeats them under every database instead).
    """
    from sqlext.execute.procedures import REGISTRY

    regex, schema_regex = like(function_pattern), like(schema_pattern)
    rows = []
    # SHOW FUNCTIONS lists names only; spark.catalog.listFunctions() describes every function
    # (hundreds of JVM lookups), far too slow for a call BI tools make on connect.
    names = spark.sql("SHOW FUNCTIONS").toArrow().column(0).to_pylist()
    for qualified in names:
        parts = qualified.split(".")  # name, or catalog.database.name for a registered function
        schema, name = (parts[-2] if len(parts) > 1 else None), parts[-1]
        if schema_regex is not None and (schema is None or not _match(schema_regex, schema)):
            continue
        if _match(regex, name):
            rows.append(("", schema, name, "", _FUNCTION_RESULT_UNKNOWN, qualified))
    if not _match(schema_regex, "sys"):
        return _table(FUNCTIONS_COLUMNS, rows)
    for name in REGISTRY.names():
        proc = REGISTRY.get(name)
        if proc is not None and _match(regex, proc.name):
            rows.append(("", "sys", proc.name, proc.description or proc.signature(), _FUNCTION_RETURNS_TABLE,
                         proc.signature()))
    return _table(FUNCTIONS_COLUMNS, rows)
