"""The COPY INTO planners over a fake context (no JVM): the plans they return (Spark reader and
writer options, target columns and their casts, ON_ERROR, the write's ``Write``), Paimon's checks of
FILE_FORMAT and the column list, and their typed, located errors."""

from __future__ import annotations

import pytest

from engine.types import parse_sql_type
from sqlext.errors import SqlAnalysisError, SqlParseError, UnsupportedStatementError
from sqlext.execute.copy_into import PLANNERS
from sqlext.execute.planning import BoundFrame, CopyIntoTable, CopyToLocation, Write, WriteShape
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    ctx.catalog.create_table(
        "default.t",
        [("id", parse_sql_type("INT")), ("name", parse_sql_type("STRING")), ("age", parse_sql_type("INT"))],
    )
    return ctx


def plan(ctx: FakeContext, sql: str):
    return plan_of(PLANNERS, ctx, sql)


def test_csv_import_plans_every_column_with_its_cast(ctx):
    p = plan(
        ctx,
        "COPY INTO t FROM '/data' FILE_FORMAT = (TYPE = CSV, FIELD_DELIMITER = '|', SKIP_HEADER = 1, "
        "NULL_IF = ('NULL', ''), EMPTY_FIELD_AS_NULL = TRUE) PATTERN = '.*csv' ON_ERROR = CONTINUE",
    )
    assert isinstance(p, CopyIntoTable)
    assert (p.source, p.format, p.pattern, p.force, p.on_error) == (
        "/data",
        "CSV",
        ".*csv",
        False,
        "CONTINUE",
    )
    assert p.reader_options == {"sep": "|", "header": "true"}
    assert p.null_if == ("NULL", "") and p.empty_as_null
    assert p.columns == ("id", "name", "age")
    assert p.strings == (False, True, False)
    assert p.casts[0].upper() == "INT"


def test_the_rows_go_through_the_insert_write_plan(ctx):
    p = plan(
        ctx, "COPY INTO t (name, id) FROM '/d' FILE_FORMAT = (TYPE = JSON, MULTI_LINE = TRUE) FORCE = TRUE"
    )
    assert p.columns == ("name", "id") and p.force and p.reader_options == {"multiLine": "true"}
    frame = BoundFrame(object(), None, ())
    write = p.write_for(frame)
    assert isinstance(write, Write)
    assert write.shape == WriteShape(("name", "id")) and write.overwrite is None and write.frame is frame


def test_column_names_match_case_insensitively(ctx):
    assert plan(ctx, "COPY INTO t (ID, Name) FROM '/d' FILE_FORMAT = (TYPE = PARQUET)").columns == (
        "id",
        "name",
    )


@pytest.mark.parametrize(
    ("fmt", "message", "cls", "sqlstate"),
    [
        ("TYPE = ORC", "Unsupported file format type: ORC", UnsupportedStatementError, "0A000"),
        (
            "TYPE = CSV, BOGUS = 1",
            "Unsupported FILE_FORMAT options for import: BOGUS",
            SqlAnalysisError,
            "22023",
        ),
        (
            "TYPE = CSV, SKIP_HEADER = 2",
            "SKIP_HEADER supports only 0 or 1, got: 2",
            SqlAnalysisError,
            "22023",
        ),
        ("TYPE = CSV, MODE = 'x'", "MODE cannot be specified", SqlAnalysisError, "22023"),
        (
            "TYPE = JSON, QUOTE = '\"'",
            "Unsupported FILE_FORMAT options for import: QUOTE",
            SqlAnalysisError,
            "22023",
        ),
        ("TYPE = CSV, TYPE = CSV", "Duplicate FILE_FORMAT option: TYPE", SqlParseError, "42601"),
        ("FIELD_DELIMITER = ','", "FILE_FORMAT must include TYPE", SqlParseError, "42601"),
    ],
)
def test_file_format_checks(ctx, fmt, message, cls, sqlstate):
    with pytest.raises(cls, match=message) as info:
        plan(ctx, f"COPY INTO t FROM '/d'\n  FILE_FORMAT = ({fmt})")
    assert info.value.sqlstate == sqlstate and info.value.line is not None


def test_an_unknown_option_error_points_at_the_option(ctx):
    with pytest.raises(SqlAnalysisError) as info:
        plan(ctx, "COPY INTO t FROM '/d'\nFILE_FORMAT = (TYPE = CSV, BOGUS = 1)")
    assert (info.value.line, info.value.column) == (2, 28)


def test_column_list_checks(ctx):
    with pytest.raises(SqlAnalysisError, match="Column 'zz' does not exist in target table") as info:
        plan(ctx, "COPY INTO t (id, zz) FROM '/d' FILE_FORMAT = (TYPE = CSV)")
    assert info.value.sqlstate == "42703"
    with pytest.raises(SqlParseError, match="Duplicate columns in column list: ID"):
        plan(ctx, "COPY INTO t (id, ID) FROM '/d' FILE_FORMAT = (TYPE = CSV)")


def test_a_left_out_not_null_column_without_default_is_refused(ctx):
    ctx.catalog.create_table(
        "default.nn", [("id", parse_sql_type("INT NOT NULL")), ("v", parse_sql_type("STRING"))]
    )
    with pytest.raises(SqlAnalysisError, match="Non-nullable column 'id'") as info:
        plan(ctx, "COPY INTO nn (v) FROM '/d' FILE_FORMAT = (TYPE = CSV)")
    assert info.value.sqlstate == "23502"


def test_on_error_takes_paimons_three_modes_only(ctx):
    with pytest.raises(SqlParseError, match="ABORT_STATEMENT, CONTINUE or SKIP_FILE"):
        plan(ctx, "COPY INTO t FROM '/d' FILE_FORMAT = (TYPE = CSV) ON_ERROR = SKIP_FILE_3")


def test_a_table_spark_owns_is_refused(ctx):
    with pytest.raises(SqlAnalysisError, match="not one") as info:
        plan(ctx, "COPY INTO spark_t FROM '/d' FILE_FORMAT = (TYPE = CSV)")
    assert info.value.sqlstate == "42P01"


def test_export_plans_spark_writer_options(ctx):
    ctx.queries["SELECT * FROM `t`"] = ()
    p = plan(
        ctx,
        "COPY INTO '/out' FROM t FILE_FORMAT = (TYPE = CSV, HEADER = TRUE, FIELD_DELIMITER = ';') "
        "OVERWRITE = TRUE",
    )
    assert isinstance(p, CopyToLocation)
    assert (p.target, p.format, p.overwrite) == ("/out", "csv", True)
    assert p.options == {"header": "true", "sep": ";"}


def test_export_of_a_query_binds_its_text(ctx):
    ctx.queries["SELECT id FROM t WHERE id IN (1, 2)"] = ()
    p = plan(
        ctx,
        "COPY INTO 'file:/out' FROM (SELECT id FROM t WHERE id IN (1, 2)) FILE_FORMAT = (TYPE = PARQUET, "
        "COMPRESSION = GZIP)",
    )
    assert ctx.asked == ["SELECT id FROM t WHERE id IN (1, 2)"]
    assert (p.format, p.options, p.overwrite) == ("parquet", {"compression": "GZIP"}, False)


def test_export_rejects_import_only_options(ctx):
    with pytest.raises(SqlAnalysisError, match="Unsupported FILE_FORMAT options for export: SKIP_HEADER"):
        plan(ctx, "COPY INTO '/out' FROM t FILE_FORMAT = (TYPE = CSV, SKIP_HEADER = 1)")


def test_export_of_an_empty_query_is_refused(ctx):
    with pytest.raises(SqlParseError):
        plan(ctx, "COPY INTO '/out' FROM () FILE_FORMAT = (TYPE = CSV)")
