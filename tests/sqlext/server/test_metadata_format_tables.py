"""The JDBC metadata listing of Paimon's format tables (columns and comment), without a JVM."""

from __future__ import annotations

from engine.types import INT, STRING, DataField
from sqlext.server import metadata


def test_format_table_columns_and_comment(catalog):
    catalog.create_format_table("db.f", [DataField(0, "id", INT(), "the id"), DataField(1, "dt", STRING())],
                                "csv", ["dt"], comment="files")
    cols = metadata.columns(catalog, "db", "f", None).to_pylist()
    assert [(c["COLUMN_NAME"], c["TYPE_NAME"], c["REMARKS"]) for c in cols] == [
        ("id", "INT", "the id"), ("dt", "STRING", "")]
    listed = metadata.tables(catalog, "db", "f", None).to_pylist()
    assert [(r["TABLE_NAME"], r["REMARKS"]) for r in listed] == [("f", "files")]
