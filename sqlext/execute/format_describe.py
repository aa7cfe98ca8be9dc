"""SHOW/DESCRIBE of Paimon's format tables (``engine.FormatTable``): DESCRIBE, SHOW CREATE TABLE,
SHOW TBLPROPERTIES and SHOW PARTITIONS, answered from the schema file and the directory listing.

A format table has no snapshots, so what the data-table planners (``describe.py``) read — the
latest snapshot, live partitions from manifests — does not exist; they hand a format table here.
SHOW CREATE TABLE prints the table the way Spark prints a catalog table of a file format
(``USING csv``, ``PARTITIONED BY``, ``TBLPROPERTIES``), which is how Paimon's Spark catalog shows
it; SHOW PARTITIONS lists the ``key=value`` directories that hold files, as Paimon's does.
"""

from __future__ import annotations

import pyarrow as pa

from engine import FormatTable, Identifier
from engine.types import type_to_sql
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import Plan, PlannerContext, Rows
from sqlext.parse import ast
from sqlext.parse.names import TableName, quote_name, sql_string
from sqlext.parse.splitter import Statement

# Shown by USING and the catalog type, not repeated as properties.
_NOT_PROPERTIES = frozenset({"type", "file.format", "path"})
_DESCRIBE_SCHEMA = pa.schema(
    [("col_name", pa.string()), ("data_type", pa.string()), ("comment", pa.string())])


def format_table_of(ctx: PlannerContext, name: TableName) -> FormatTable | None:
    """The format table ``name`` names, or None (a data table, a branch or a system table)."""
    if name.branch is not None or name.system_table is not None:
        return None
    ident = ctx.identifier(name)
    return ctx.catalog.get_format_table(Identifier(ident.database, ident.table))


def properties(table: FormatTable) -> dict[str, str]:
    return {k: v for k, v in table.options.items() if k not in _NOT_PROPERTIES}


def describe(ctx: PlannerContext, table: FormatTable, n: ast.DescribeTable) -> Plan:
    fields = {f.name: f for f in table.fields}
    if n.column is not None:
        f = fields[n.column]
        return Rows(pa.table({"info_name": ["col_name", "data_type", "comment"],
                              "info_value": pa.array([f.name, ctx.type_text(f.type), f.description],
                                                     pa.string())}))
    out = [(f.name, ctx.type_text(f.type), f.description) for f in table.fields]
    if table.partition_keys:
        out.append(("# Partition Information", "", ""))
        out.append(("# col_name", "data_type", "comment"))
        out.extend((k, ctx.type_text(fields[k].type), fields[k].description) for k in table.partition_keys)
    if n.extended or n.formatted:
        out.append(("", "", ""))
        out.append(("# Detailed Table Information", "", ""))
        out.extend([("Name", table.name, ""), ("Type", "FORMAT_TABLE", ""), ("Provider", table.format, ""),
                    ("Location", table.location, "")])
        if table.comment is not None:
            out.append(("Comment", table.comment, ""))
        props = sorted(properties(table).items())
        out.append(("Table Properties", "[" + ", ".join(f"{k}={v}" for k, v in props) + "]", ""))
    return Rows(pa.Table.from_pylist([dict(zip(_DESCRIBE_SCHEMA.names, r, strict=True)) for r in out],
                                     schema=_DESCRIBE_SCHEMA))


def show_create(table: FormatTable) -> Plan:
    columns = []
    for f in table.fields:
        line = f"  {quote_name(f.name)} {type_to_sql(f.type)}"
        if f.description is not None:
            line += f" COMMENT {sql_string(f.description)}"
        columns.append(line)
    ident = table.identifier
    name = ".".join(quote_name(p) for p in (ident.database, ident.table))
    text = f"CREATE TABLE {name} (\n" + ",\n".join(columns) + f")\nUSING {table.format}\n"
    if table.partition_keys:
        text += f"PARTITIONED BY ({', '.join(quote_name(k) for k in table.partition_keys)})\n"
    if table.comment is not None:
        text += f"COMMENT {sql_string(table.comment)}\n"
    props = sorted(properties(table).items())
    if props:
        listed = ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in props)
        text += f"TBLPROPERTIES (\n{listed})\n"
    return Rows(pa.table({"createtab_stmt": [text]}))


def show_tblproperties(table: FormatTable, n: ast.ShowTableProperties) -> Plan:
    props = properties(table)
    if n.key is not None:
        pairs = [(n.key, props.get(n.key, f"Table {table.name} does not have property: {n.key}"))]
    else:
        pairs = sorted(props.items())
    return Rows(pa.table({"key": [k for k, _ in pairs], "value": [v for _, v in pairs]},
                         schema=pa.schema([("key", pa.string()), ("value", pa.string())])))


def show_partitions(ctx: PlannerContext, table: FormatTable, n: ast.ShowPartitions,
                    stmt: Statement) -> Plan:
    if not table.partition_keys:
        raise SqlAnalysisError(
            f"SHOW PARTITIONS needs a partitioned table; '{table.name}' is not partitioned",
            line=stmt.line, column=stmt.column, sqlstate="42000")
    given = n.partition.values() if n.partition else {}
    spec = {k: None if v is None else str(v) for k, v in given.items()}
    unknown = [k for k in spec if k not in table.partition_keys]
    if unknown:
        raise SqlAnalysisError(f"{unknown} are not partition columns of '{table.name}'",
                               line=stmt.line, column=stmt.column, sqlstate="42703")
    texts = ["/".join(f"{k}={p[k]}" for k in table.partition_keys)
             for p in table.partition_dirs(ctx.catalog.io) if all(p.get(k) == v for k, v in spec.items())]
    return Rows(pa.table({"partition": pa.array(texts, pa.string())}))
