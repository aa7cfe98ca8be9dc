"""Planners of the metadata-only DDL over a fake context (no JVM): each statement's catalog action,
its checks and typed errors, and the action applied to a real catalog where it matters."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import Identifier
from engine.schema_changes import (
    AddColumn,
    DropColumn,
    MoveColumn,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnDefault,
    UpdateColumnType,
    UpdateComment,
)
from engine.types import parse_sql_type
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute import planning
from sqlext.execute.ddl import PLANNERS
from sqlext.execute.planning import (
    AlterTable,
    CreateDatabase,
    CreateTable,
    Done,
    DropDatabase,
    DropPartitions,
    DropTable,
    PlannerContext,
    RenameTable,
    ToEngine,
    UseDatabase,
)
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of, view


@pytest.fixture
def ctx(tmp_path):
    c = fake_context(tmp_path)
    c.catalog.create_table("default.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                           options={"bucket": "-1"}, comment="a table")
    return c


def run(ctx, sql):
    return plan_of(PLANNERS, ctx, sql)


def alter(ctx, sql) -> tuple:
    plan = run(ctx, sql)
    assert isinstance(plan, AlterTable), plan
    assert plan.identifier == Identifier("default", "t")
    return plan.changes


def test_the_fake_context_has_every_member_of_the_protocol():
    members = {n for n in vars(PlannerContext) if not n.startswith("_")}
    assert members <= set(dir(FakeContext)) | set(FakeContext.__dataclass_fields__)


# -- databases ------------------------------------------------------------------------------------
def test_create_database(ctx):
    assert run(ctx, "CREATE DATABASE sales") == CreateDatabase("sales", "Database sales created")


def test_create_existing_database_is_refused(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "CREATE DATABASE default")
    assert e.value.sqlstate == "42710"
    assert "IF NOT EXISTS" in str(e.value)


def test_create_existing_database_if_not_exists_does_nothing(ctx):
    assert run(ctx, "CREATE DATABASE IF NOT EXISTS default") == Done(
        "Database default already exists; nothing created"
    )


def test_drop_database(ctx):
    ctx.catalog.create_database("old")
    assert run(ctx, "DROP DATABASE old") == DropDatabase("old", False, False, "Database old dropped")


def test_drop_missing_database_if_exists_does_nothing(ctx):
    assert isinstance(run(ctx, "DROP DATABASE IF EXISTS nope"), Done)


def test_drop_missing_database_is_left_to_the_catalog(ctx):
    # the catalog's own error (no such database) is what the user sees
    assert run(ctx, "DROP DATABASE nope") == DropDatabase("nope", False, False, "Database nope dropped")


def test_drop_database_with_views_needs_cascade(ctx):
    ctx.catalog.create_database("old")
    ctx.view_definitions = [view("v1", "old"), view("v2", "old")]
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DROP DATABASE old")
    assert e.value.sqlstate == "2BP01"
    assert "v1, v2" in str(e.value)


def test_drop_database_cascade_drops_views_too(ctx):
    ctx.catalog.create_database("old")
    ctx.view_definitions = [view("v1", "old")]
    assert run(ctx, "DROP DATABASE old CASCADE") == DropDatabase("old", False, True, "Database old dropped")


def test_use_database(ctx):
    ctx.catalog.create_database("sales")
    assert run(ctx, "USE sales") == UseDatabase("sales", "Using database sales")


def test_use_missing_database(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "USE nope")
    assert e.value.sqlstate == "42P01"


# -- CREATE TABLE LIKE / DROP TABLE / RENAME ------------------------------------------------------
def test_create_table_like_copies_the_schema_and_merges_options(ctx):
    plan = run(ctx, "CREATE TABLE c LIKE t WITH ('bucket' = '2', 'bucket-key' = 'id')")
    assert isinstance(plan, CreateTable)
    assert plan.identifier == Identifier("default", "c")
    assert [f.name for f in plan.fields] == ["id", "v"]
    assert plan.options["bucket"] == "2"
    assert plan.comment == "a table"
    created = ctx.catalog.create_table(plan.identifier, list(plan.fields), plan.partition_keys,
                                       plan.primary_keys, dict(plan.options), plan.comment)
    assert list(created.schema.field_names) == ["id", "v"]  # the action is one the catalog accepts


def test_create_table_like_an_existing_table_if_not_exists(ctx):
    assert run(ctx, "CREATE TABLE IF NOT EXISTS t LIKE t") == Done("Table default.t already exists")


def test_create_table_like_an_unknown_source(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "CREATE TABLE c LIKE nope")
    assert e.value.sqlstate == "42P01"


def test_drop_table(ctx):
    assert run(ctx, "DROP TABLE t") == DropTable(Identifier("default", "t"), "Table default.t dropped")


def test_drop_table_of_a_branch_drops_the_table(ctx):
    plan = run(ctx, "DROP TABLE `t$branch_b1`")
    assert plan == DropTable(Identifier("default", "t"), "Table default.t dropped")


def test_drop_a_view_as_a_table_is_refused(ctx):
    ctx.view_definitions = [view("v")]
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DROP TABLE v")
    assert e.value.sqlstate == "42809"
    assert "DROP VIEW" in str(e.value)


def test_drop_missing_table_if_exists(ctx):
    assert run(ctx, "DROP TABLE IF EXISTS nope") == Done("Table default.nope does not exist; nothing dropped")


def test_drop_missing_table_names_the_session_database(ctx):
    ctx.catalog.create_database("mine")
    ctx.current_database = "mine"
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DROP TABLE nope")
    assert e.value.sqlstate == "42P01"
    assert "mine.nope" in str(e.value)


def test_drop_an_engine_table_goes_to_the_engine(ctx):
    ctx.engine_tables.add("spark_t")
    assert run(ctx, "DROP TABLE spark_t") == ToEngine()


def test_drop_a_qualified_unknown_table_goes_to_the_engine(ctx):
    assert run(ctx, "DROP TABLE other_db.x") == ToEngine()


def test_rename_table_keeps_the_database(ctx):
    plan = run(ctx, "ALTER TABLE t RENAME TO u")
    old, new = Identifier("default", "t"), Identifier("default", "u")
    assert plan == RenameTable(old, new, "Table renamed to default.u")


def test_rename_table_into_another_database(ctx):
    ctx.catalog.create_database("other")
    plan = run(ctx, "ALTER TABLE default.t RENAME TO other.u")
    assert plan.target == Identifier("other", "u")


def test_rename_a_missing_table(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "ALTER TABLE nope RENAME TO u")
    assert e.value.sqlstate == "42P01"


# -- ALTER TABLE ----------------------------------------------------------------------------------
def test_set_options(ctx):
    assert alter(ctx, "ALTER TABLE t SET TBLPROPERTIES ('a' = '1', 'b' = '2')") == (
        SetOption("a", "1"), SetOption("b", "2"),
    )


def test_set_comment_property_is_the_table_comment(ctx):
    assert alter(ctx, "ALTER TABLE t SET TBLPROPERTIES ('comment' = 'new')") == (UpdateComment("new"),)


def test_reset_options(ctx):
    assert alter(ctx, "ALTER TABLE t UNSET TBLPROPERTIES ('a', 'comment')") == (
        RemoveOption("a"), UpdateComment(None),
    )


def test_alter_a_missing_table(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "ALTER TABLE nope SET TBLPROPERTIES ('a' = '1')")
    assert e.value.sqlstate == "42P01"


def test_add_columns_with_types_comments_and_positions(ctx):
    sql = "ALTER TABLE t ADD COLUMNS (a INT NOT NULL COMMENT 'x', b STRING FIRST, c DOUBLE AFTER id)"
    changes = alter(ctx, sql)
    assert changes == (
        AddColumn("a", parse_sql_type("INT").copy(False), "x", None),
        AddColumn("b", parse_sql_type("STRING"), None, "first"),
        AddColumn("c", parse_sql_type("DOUBLE"), None, ("after", "id")),
    )


def test_add_column_with_a_default_is_refused(ctx):
    with pytest.raises(UnsupportedStatementError) as e:
        run(ctx, "ALTER TABLE t ADD COLUMN d INT DEFAULT 3")
    assert "Cannot add column [d] with default value 3" in str(e.value)


def test_drop_columns(ctx):
    assert alter(ctx, "ALTER TABLE t DROP COLUMNS (v)") == (DropColumn("v"),)


def test_drop_columns_if_exists_skips_unknown_ones(ctx):
    plan = run(ctx, "ALTER TABLE t DROP COLUMN IF EXISTS nope")
    assert plan.changes == ()
    assert plan.message == "Dropped 0 column(s)"


def test_drop_unknown_column_is_left_to_the_schema_check(ctx):
    assert alter(ctx, "ALTER TABLE t DROP COLUMN nope") == (DropColumn("nope"),)


def test_rename_column(ctx):
    plan = run(ctx, "ALTER TABLE t RENAME COLUMN v TO w")
    assert plan.changes == (RenameColumn("v", "w"),)
    assert plan.message == "Renamed column v to w"


def test_alter_column_type_comment_and_position(ctx):
    string = parse_sql_type("STRING")
    assert alter(ctx, "ALTER TABLE t ALTER COLUMN v TYPE STRING") == (UpdateColumnType("v", string),)
    assert alter(ctx, "ALTER TABLE t ALTER COLUMN v COMMENT 'c'") == (UpdateColumnComment("v", "c"),)
    assert alter(ctx, "ALTER TABLE t ALTER COLUMN v FIRST") == (MoveColumn("v", "first"),)
    assert alter(ctx, "ALTER TABLE t ALTER COLUMN id AFTER v") == (MoveColumn("id", ("after", "v")),)


def test_alter_column_nullability_is_refused(ctx):
    with pytest.raises(UnsupportedStatementError):
        run(ctx, "ALTER TABLE t ALTER COLUMN v DROP NOT NULL")


# Paimon's SparkSchemaEvolutionITCase nested-column statements (release 2.0), each as its change.
NESTED = "STRUCT<f1: INT, f2: STRUCT<f1: STRING, f2: INT>>"


@pytest.fixture
def nested(ctx):
    ctx.catalog.create_table("default.n", [("k", "INT NOT NULL"), ("v", NESTED),
                                           ("a", "ARRAY<STRUCT<f1: STRING, f2: INT>>"),
                                           ("m", "MAP<INT, STRUCT<f1: STRING, f2: INT>>")])
    return ctx


@pytest.mark.parametrize(
    ("sql", "change"),
    [
        ("ALTER TABLE n ADD COLUMN v.f3 STRING", AddColumn(("v", "f3"), parse_sql_type("STRING"))),
        ("ALTER TABLE n ADD COLUMN v.f2.f0 DECIMAL(5, 2) AFTER f2",
         AddColumn(("v", "f2", "f0"), parse_sql_type("DECIMAL(5, 2)"), None, ("after", "f2"))),
        ("ALTER TABLE n ADD COLUMN a.element.f3 STRING AFTER f2",
         AddColumn(("a", "element", "f3"), parse_sql_type("STRING"), None, ("after", "f2"))),
        ("ALTER TABLE n DROP COLUMN v.f2.f1", DropColumn(("v", "f2", "f1"))),
        ("ALTER TABLE n DROP COLUMN m.value.f1", DropColumn(("m", "value", "f1"))),
        ("ALTER TABLE n RENAME COLUMN v.f2.f1 to f100", RenameColumn(("v", "f2", "f1"), "f100")),
        ("ALTER TABLE n RENAME COLUMN a.element.f1 to f100", RenameColumn(("a", "element", "f1"), "f100")),
        ("ALTER TABLE n CHANGE COLUMN v.f2.f2 f2 BIGINT",
         UpdateColumnType(("v", "f2", "f2"), parse_sql_type("BIGINT"))),
        ("ALTER TABLE n CHANGE COLUMN m.value.f2 f2 BIGINT",
         UpdateColumnType(("m", "value", "f2"), parse_sql_type("BIGINT"))),
        ("ALTER TABLE n ALTER COLUMN v.f1 TYPE BIGINT",
         UpdateColumnType(("v", "f1"), parse_sql_type("BIGINT"))),
        ("ALTER TABLE n ALTER COLUMN v.f1 COMMENT 'c'", UpdateColumnComment(("v", "f1"), "c")),
        ("ALTER TABLE n ALTER COLUMN v.f2 FIRST", MoveColumn(("v", "f2"), "first")),
    ],
)
def test_nested_column_changes(nested, sql, change):
    plan = run(nested, sql)
    assert plan.changes == (change,)
    # and the catalog takes it
    nested.catalog.alter_table(plan.identifier, list(plan.changes))


def test_drop_nested_columns_if_exists_skips_unknown_ones(nested):
    sql = "ALTER TABLE n DROP COLUMN IF EXISTS v.nope, v.f2.f1, a.element.f2, a.element.x, m.key"
    plan = run(nested, sql)
    assert plan.changes == (DropColumn(("v", "f2", "f1")), DropColumn(("a", "element", "f2")))


def test_nested_add_with_a_default_is_refused(nested):
    with pytest.raises(UnsupportedStatementError, match=r"Cannot add column \[v.f3\] with default value 1"):
        run(nested, "ALTER TABLE n ADD COLUMN v.f3 INT DEFAULT 1")


def test_set_and_drop_default(ctx):
    assert alter(ctx, "ALTER TABLE t ALTER COLUMN v SET DEFAULT 'x'") == (UpdateColumnDefault("v", "'x'"),)
    assert alter(ctx, "ALTER TABLE t ALTER COLUMN v DROP DEFAULT") == (UpdateColumnDefault("v", None),)


def test_alter_actions_apply_to_a_real_catalog(ctx):
    plan = run(ctx, "ALTER TABLE t ADD COLUMNS (n INT)")
    ctx.catalog.alter_table(plan.identifier, list(plan.changes))
    assert list(ctx.catalog.get_table("default.t").schema.field_names) == ["id", "v", "n"]


def test_every_catalog_action_carries_its_message():
    for action in planning.CatalogAction.__args__:
        assert "message" in action.__dataclass_fields__, action


# -- DROP PARTITION -------------------------------------------------------------------------------
@pytest.fixture
def parted(ctx):
    schema = pa.schema([("dt", pa.string()), ("hh", pa.int32()), ("v", pa.int64())])
    table = ctx.catalog.create_table("default.p", schema, partition_keys=["dt", "hh"])
    hours = pa.array([1, 2, 1], pa.int32())
    table.write_arrow(pa.table({"dt": ["a", "a", "b"], "hh": hours, "v": [1, 2, 3]}))
    return table


def test_drop_partition_plans_typed_specs(ctx, parted):
    plan = run(ctx, "ALTER TABLE p DROP PARTITION (dt = 'a', hh = '1')")
    assert plan == DropPartitions(Identifier("default", "p"), ({"dt": "a", "hh": 1},), False,
                                  "Dropped 1 partition spec(s)")


def test_drop_several_partitions_if_exists(ctx, parted):
    plan = run(ctx, "ALTER TABLE p DROP IF EXISTS PARTITION (dt = 'a'), PARTITION (dt = 'b')")
    assert plan.specs == ({"dt": "a"}, {"dt": "b"})
    assert plan.if_exists


def test_drop_partition_spec_must_be_a_prefix(ctx, parted):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "ALTER TABLE p DROP PARTITION (hh = 1)")
    assert e.value.sqlstate == "42000"
    assert "not a prefix" in str(e.value)


def test_drop_partition_of_a_missing_table(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "ALTER TABLE nope DROP PARTITION (dt = 'a')")
    assert e.value.sqlstate == "42P01"


def test_drop_partition_action_applies_to_the_table(ctx, parted):
    plan = run(ctx, "ALTER TABLE p DROP PARTITION (dt = 'a')")
    ctx.catalog.get_table(plan.identifier).drop_partitions(list(plan.specs), if_exists=plan.if_exists)
    left = ctx.catalog.get_table("default.p").to_arrow()
    assert sorted(left.column("dt").to_pylist()) == ["b"]


def test_drop_partition_of_a_branch_targets_the_branch(ctx, parted):
    parted.refs.branches.create("b1")
    plan = run(ctx, "ALTER TABLE `p$branch_b1` DROP PARTITION (dt = 'a')")
    assert plan.identifier == Identifier("default", "p", "b1")


def test_drop_table_if_exists_of_an_existing_table_drops_it(ctx):
    expected = DropTable(Identifier("default", "t"), "Table default.t dropped")
    assert run(ctx, "DROP TABLE IF EXISTS t") == expected


def test_drop_table_in_another_database(ctx):
    ctx.catalog.create_database("other")
    ctx.catalog.create_table("other.t", pa.schema([("id", pa.int64())]))
    assert run(ctx, "DROP TABLE other.t").identifier == Identifier("other", "t")


def test_create_table_like_across_databases(ctx):
    ctx.catalog.create_database("other")
    plan = run(ctx, "CREATE TABLE other.c LIKE default.t")
    assert plan.identifier == Identifier("other", "c")
    assert plan.message == "Table other.c created"


def test_alter_table_of_a_branch_names_the_branch(ctx):
    ctx.catalog.get_table("default.t").refs.branches.create("b1")
    plan = run(ctx, "ALTER TABLE `t$branch_b1` SET TBLPROPERTIES ('a' = '1')")
    assert plan.identifier.branch == "b1"


def test_use_database_follows_the_current_database_of_later_plans(ctx):
    ctx.catalog.create_database("other")
    ctx.catalog.create_table("other.t2", pa.schema([("id", pa.int64())]))
    plan = run(ctx, "USE other")
    ctx.current_database = plan.name  # what the runner does
    assert run(ctx, "DROP TABLE t2").identifier == Identifier("other", "t2")


def test_an_instant_default_is_stored_as_utc_wall_time():
    """``DEFAULT TIMESTAMP '…'`` on an instant column is read in the session's zone, as Spark
    reads it, and stored as UTC wall time; DATE/TIMESTAMP literals keep only their quoted text."""
    from engine.types import parse_sql_type
    from sqlext.execute.column_types import stored_default

    ltz, ntz = parse_sql_type("TIMESTAMP_LTZ(6)"), parse_sql_type("TIMESTAMP(6)")
    new_york = "America/New_York"
    assert stored_default("TIMESTAMP '2024-06-01 10:00:00'", ltz, new_york) == "'2024-06-01 14:00:00'"
    assert stored_default("'2024-06-01 10:00:00+02:00'", ltz, new_york) == "'2024-06-01 08:00:00'"
    assert stored_default("DATE '2024-06-01'", parse_sql_type("DATE"), None) == "'2024-06-01'"
    assert stored_default("TIMESTAMP_NTZ '2024-06-01 10:00:00'", ntz, "Asia/Tokyo") == "'2024-06-01 10:00:00'"
    assert stored_default(" NULL ", ltz, None) is None
    assert stored_default("5", parse_sql_type("INT"), None) == "5"


# -- rewrites: table jobs the runner carries out ------------------------------------------------------
def test_compact_plans_the_table_and_its_typed_partition(ctx):
    ctx.catalog.create_table("default.p", pa.schema([("v", pa.string()), ("dt", pa.int32())]),
                             partition_keys=["dt"], options={"bucket": "-1"})
    p = run(ctx, "ALTER TABLE p PARTITION (dt = '7') COMPACT")
    assert isinstance(p, planning.Compact) and p.table.name == "default.p" and p.partitions == ({"dt": 7},)
    p = run(ctx, "ALTER TABLE t COMPACT")
    assert isinstance(p, planning.Compact) and p.partitions is None
    with pytest.raises(SqlAnalysisError, match="table or view not found"):
        run(ctx, "ALTER TABLE nope COMPACT")


def test_add_primary_key_plans_the_rewrite_at_the_latest_snapshot(ctx):
    table = ctx.catalog.get_table("default.t")
    table.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    ctx.options.update({"table-storage.bucket": "4", "table-storage.file.format": "orc"})
    p = run(ctx, "ALTER TABLE t ADD PRIMARY KEY (id) NOT ENFORCED")
    assert isinstance(p, planning.AddPrimaryKey)
    assert (p.columns, p.snapshot) == (("id",), 1)
    # the table's own options but its bucket layout: the session's bucket default (no other default)
    assert p.options["bucket"] == "4" and p.options["file.format"] == "parquet"
    assert "bucket-key" not in p.options


def test_add_primary_key_refuses_a_keyed_table(ctx):
    ctx.catalog.create_table("default.k", pa.schema([("id", pa.int64())]), primary_keys=["id"],
                             options={"bucket": "1"})
    with pytest.raises(SqlAnalysisError, match="already has a primary key") as info:
        run(ctx, "ALTER TABLE k ADD PRIMARY KEY (id)")
    assert info.value.sqlstate == "42000"


def test_rescale_checks_the_bucket_count_and_the_partition(ctx):
    p = run(ctx, "ALTER TABLE t CLUSTERED INTO 3 BUCKETS")
    assert isinstance(p, planning.Rescale) and (p.name.table, p.buckets) == ("t", 3)
    assert p.message == "Table rewritten into 3 bucket(s)"
    with pytest.raises(SqlAnalysisError, match="at least 1") as info:
        run(ctx, "ALTER TABLE t CLUSTERED INTO 0 BUCKETS")
    assert info.value.sqlstate == "22023"
    ctx.catalog.create_table("default.p", pa.schema([("v", pa.string()), ("dt", pa.int32())]),
                             partition_keys=["dt"], options={"bucket": "-1"})
    with pytest.raises(UnsupportedStatementError, match="single partition"):
        run(ctx, "ALTER TABLE p PARTITION (dt = 1) CLUSTERED INTO 2 BUCKETS")
