"""Runs in pypaimon's own venv: pypaimon 2.1's format-table reader and writer over a format table
dyntable created (its ``schema/schema-0``; pypaimon's filesystem catalog has no format tables,
so the script builds pypaimon's ``FormatTable`` from the schema file and the table directory, as
its REST catalog builds one).

Usage: ``python pypaimon_format_tables.py <warehouse> <db.table> read`` prints the rows as JSON;
``… write`` writes the JSON rows (a list of objects) read from stdin in one commit.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
from pypaimon import CatalogFactory
from pypaimon.common.identifier import Identifier
from pypaimon.schema.data_types import PyarrowFieldParser
from pypaimon.table.format.format_table import Format, FormatTable


def main() -> None:
    warehouse, name, action = sys.argv[1:4]
    catalog = CatalogFactory.create({"warehouse": warehouse})
    ident = Identifier.from_string(name)
    schema = catalog.get_table_schema(ident)
    table = FormatTable(file_io=catalog.file_io, identifier=ident, table_schema=schema,
                        location=catalog.get_table_path(ident),
                        format=Format.parse(schema.options.get("file.format", "parquet")),
                        options=dict(schema.options), comment=schema.comment)
    if action == "read":
        builder = table.new_read_builder()
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        print(json.dumps(rows.to_pylist() if rows is not None else []))
        return
    # Typed as the table's columns, as a Paimon writer is handed them.
    arrow_schema = PyarrowFieldParser.from_paimon_schema(schema.fields)
    data = pa.Table.from_pylist(json.loads(sys.stdin.read()), arrow_schema)
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(data)
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    print(json.dumps({"ok": True}))


if __name__ == "__main__":
    main()
