"""The binder and Paimon's metadata columns: read when named, never through a star."""

from __future__ import annotations

from sqlext.bind.rewrite import bind
from sqlext.parse.names import TableName
from tests.sqlext.bind.test_rewrite import FakeCatalog, describe

HIDDEN = ["_ROW_ID", "_SEQUENCE_NUMBER", "__paimon_file_path", "__paimon_row_index"]


class MetadataCatalog(FakeCatalog):
    """db.t tracks row ids; every table has the file columns."""

    def metadata_columns(self, name: TableName) -> list[str]:
        return HIDDEN if name.table.lower() == "t" else HIDDEN[2:]


def _bound(sql: str) -> tuple[str, list[str]]:
    out = bind(sql, MetadataCatalog(), "db")
    return out.sql, [describe(b) for b in out.bindings]


def test_a_named_metadata_column_joins_the_view_and_a_star_is_spelled_out() -> None:
    sql, views = _bound("SELECT *, _ROW_ID FROM t")
    assert sql == "SELECT t.id, t.name, t.v, t.ts, t.s, _ROW_ID FROM __dyntable_1_t AS t"
    assert views == ["__dyntable_1_t = db.t [id, name, v, ts, s, _ROW_ID]"]


def test_without_metadata_columns_nothing_changes() -> None:
    assert _bound("SELECT * FROM t") == ("SELECT * FROM __dyntable_1_t AS t", ["__dyntable_1_t = db.t *"])
    sql, views = _bound("SELECT id, __paimon_row_index FROM u")
    assert sql == "SELECT id, __paimon_row_index FROM __dyntable_1_u AS u"
    assert views == ["__dyntable_1_u = db.u [id, __paimon_row_index]"]


def test_qualified_stars_and_joins() -> None:
    sql, views = _bound("SELECT x.*, x._ROW_ID, u.* FROM t x JOIN u ON x.id = u.id")
    assert sql == ("SELECT x.id, x.name, x.v, x.ts, x.s, x._ROW_ID, u.* "
                   "FROM __dyntable_1_t x JOIN __dyntable_2_u AS u ON x.id = u.id")
    assert views[0] == "__dyntable_1_t = db.t [id, name, v, ts, s, _ROW_ID]"
    sql, _ = _bound("SELECT *, t._SEQUENCE_NUMBER FROM t JOIN u ON t.id = u.id")
    assert sql.startswith("SELECT t.id, t.name, t.v, t.ts, t.s, u.*, t._SEQUENCE_NUMBER FROM")
