"""CALL procedures as planners over a fake context (no JVM): what each one plans, that planning
changes nothing, the argument errors raised before anything runs, and the metadata plans carried
out through the engine as the runner does. The Spark parts (compactions, rewrites, migrations)
are checked here as plans; tests/integration runs them end to end."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from engine import CommitResult, Identifier
from engine.errors import BranchAlreadyExistsError, InvalidArgumentError, InvalidNameError, NoSuchTagError
from sqlext.errors import ProcedureArgumentError, ProcedureTargetError, UnsupportedStatementError
from sqlext.execute.call import PLANNERS
from sqlext.execute.planning import CallProcedure, CreateTable
from sqlext.execute.procedures.plans import (
    Answer,
    Compactions,
    CopyTable,
    EngineWork,
    MigrateDatabase,
    MigrateTable,
    PartitionsWhere,
    RescaleTable,
)
from sqlext.parse.names import TableName
from tests.sqlext.execute.fake_context import FakeContext, carry_out, fake_context, plan_of

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
PARTED = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    """``default.t``: three snapshots (ids 1..3) of a fixed-bucket primary-key table; ``default.p``:
    partitioned by ``dt`` with partitions a and b; ``default.e``: empty."""
    ctx = fake_context(tmp_path)
    t = ctx.catalog.create_table("default.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    for i in range(3):
        t.write_arrow(pa.table({"id": [i], "v": [str(i)]}, schema=t.arrow_schema))
    p = ctx.catalog.create_table("default.p", PARTED, partition_keys=["dt"])
    p.write_arrow(pa.table({"id": [1, 2], "dt": ["a", "b"]}, schema=p.arrow_schema))
    ctx.catalog.create_table("default.e", SCHEMA)
    return ctx


def call(ctx: FakeContext, sql: str) -> CallProcedure:
    plan = plan_of(PLANNERS, ctx, sql)
    assert isinstance(plan, CallProcedure), plan
    return plan


def table(ctx: FakeContext, name: str = "t"):
    return ctx.catalog.get_table(f"default.{name}")


def state(ctx: FakeContext) -> tuple:
    """What a procedure could change: snapshots, tags, branches and consumers of every table."""
    out = []
    for name in ctx.catalog.list_tables("default"):
        t = table(ctx, name)
        out.append((name, t.snapshot_id_range(), tuple(t.refs.tags.names()), tuple(t.refs.branches.names()),
                    tuple(t.refs.consumers.ids())))
    return tuple(out)


# -- planning changes nothing -------------------------------------------------------------------

METADATA_CALLS = [
    "CALL sys.create_tag('t', 'v1', 1)",
    "CALL sys.replace_tag(table => 't', tag => 'v1', snapshot => 2)",
    "CALL sys.rename_tag('t', 'a', 'b')",
    "CALL sys.delete_tag('t', 'a,b')",
    "CALL sys.create_tag_from_timestamp('t', 'ts', 0)",
    "CALL sys.expire_tags('t', '2099-01-01')",
    "CALL sys.rollback('t', '1')",
    "CALL sys.rollback_to_timestamp('t', '2099-01-01')",
    "CALL sys.create_branch('t', 'b1')",
    "CALL sys.delete_branch('t', 'b1')",
    "CALL sys.rename_branch('t', 'b1', 'b2')",
    "CALL sys.fast_forward('t', 'b1')",
    "CALL sys.replace_main('t', 'b1')",
    "CALL sys.merge_branch('t', 'b1')",
    "CALL sys.expire_snapshots('t', 1)",
    "CALL sys.retention_mark('t')",
    "CALL sys.remove_orphan_files('t')",
    "CALL sys.remove_orphan_files('default.*')",
    "CALL sys.expire_partitions('p', '1 d')",
    "CALL sys.reset_consumer('t', 'c', 1)",
    "CALL sys.reset_consumer('t', 'c')",
    "CALL sys.clear_consumers('t')",
    "CALL sys.compact_manifest('t')",
    "CALL sys.purge_files('t')",
    "CALL sys.remove_unexisting_files('t')",
    "CALL sys.rollback_to_watermark('t', 5)",
    "CALL sys.mark_partition_done('p', 'dt=a')",
    "CALL sys.trigger_tag_automatic_creation('t')",
    "CALL sys.repair_earliest_snapshot('t', 1)",
    "CALL sys.rewrite_file_index('t')",
    "CALL sys.rebuild_iceberg_metadata('t')",
]


@pytest.mark.parametrize("sql", METADATA_CALLS)
def test_a_metadata_procedure_plans_engine_work_and_changes_nothing(ctx, sql):
    before = state(ctx)
    plan = call(ctx, sql)
    assert isinstance(plan.work, EngineWork)
    assert plan.message == f"Procedure {plan.procedure.name} finished"
    assert state(ctx) == before
    assert ctx.asked == []  # no query was needed


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("CALL sys.compact('t')", Compactions),
        ("CALL sys.compact(table => 'p', `where` => 'dt = ''a''')", PartitionsWhere),
        ("CALL sys.compact_database()", Compactions),
        ("CALL sys.rescale('t', 4)", RescaleTable),
        ("CALL sys.copy('t', 'c')", CopyTable),
        ("CALL sys.migrate_table('parquet', 'spark_t')", MigrateTable),
        ("CALL sys.migrate_database('parquet', 'sdb')", MigrateDatabase),
        ("CALL sys.rewrite_file_index('p', 'dt = ''a''')", PartitionsWhere),
        ("CALL sys.list_procedures()", Answer),
    ],
)
def test_the_procedures_that_need_the_sql_engine_plan_it_and_change_nothing(ctx, sql, kind):
    before = state(ctx)
    assert isinstance(call(ctx, sql).work, kind)
    assert state(ctx) == before and not ctx.catalog.table_exists("default.c")


def test_an_unknown_table_is_refused_while_planning(ctx):
    with pytest.raises(Exception, match="does not exist") as info:
        call(ctx, "CALL sys.create_tag('nope', 'v1')")
    assert info.value.sqlstate == "42P01" and info.value.line == 1


def test_a_system_table_argument_is_refused(ctx):
    with pytest.raises(ProcedureArgumentError, match="is a system table"):
        call(ctx, "CALL sys.create_tag('t$snapshots', 'v1')")


# -- compact ------------------------------------------------------------------------------------


def test_compact_plans_one_full_compaction_of_the_table(ctx):
    work = call(ctx, "CALL sys.compact('t')").work
    assert isinstance(work, Compactions) and not work.keep_going
    (job,) = work.jobs
    assert (job.table.name, job.full, job.partitions, job.order_strategy, job.order_by) == (
        "default.t", True, None, None, ())
    result = work.answer([CommitResult((4,))])  # an unpartitioned table is one partition
    assert result.to_pylist() == [{"result": True, "snapshot_id": 4, "partitions": 1}]


def test_compact_answers_the_live_partitions_it_compacted(ctx):
    work = call(ctx, "CALL sys.compact('p')").work
    assert work.answer([CommitResult(())]).to_pylist() == [
        {"result": True, "snapshot_id": None, "partitions": 2}]


def test_compact_is_minor_by_default_on_incremental_clustering(ctx):
    ctx.catalog.create_table("default.k", SCHEMA, options={"clustering.incremental": "true"})
    assert call(ctx, "CALL sys.compact('k')").work.jobs[0].full is False
    assert call(ctx, "CALL sys.compact(table => 'k', compact_strategy => 'full')").work.jobs[0].full is True


def test_compact_with_an_order(ctx):
    sql = "CALL sys.compact(table => 't', order_strategy => 'ZORDER', order_by => 'id,v')"
    job = call(ctx, sql).work.jobs[0]
    assert (job.order_strategy, job.order_by) == ("zorder", ("id", "v"))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ("compact_strategy => 'major'", "must be 'full' or 'minor'"),
        ("order_by => 'id'", 'order_strategy "none" cannot work with order_by'),
        ("partitions => 'dt=a', `where` => 'dt = 1'", "cannot be used together"),
    ],
)
def test_compact_argument_errors(ctx, args, words):
    with pytest.raises(ProcedureArgumentError, match=words) as info:
        call(ctx, f"CALL sys.compact(table => 'p', {args})")
    assert info.value.sqlstate == "22023"


def test_compact_of_named_partitions(ctx):
    work = call(ctx, "CALL sys.compact('p', 'dt=a;dt=b')").work
    assert work.jobs[0].partitions == ({"dt": "a"}, {"dt": "b"})
    assert work.answer([CommitResult((3,))]).column("partitions").to_pylist() == [2]


def test_compact_where_first_finds_the_partitions_then_compacts_them(ctx):
    work = call(ctx, "CALL sys.compact(table => 'p', `where` => 'dt > ''a''')").work
    assert isinstance(work, PartitionsWhere)
    assert (work.table.name, work.where) == ("default.p", "dt > 'a'")
    then = work.then([{"dt": "b"}])
    assert isinstance(then, Compactions) and then.jobs[0].partitions == ({"dt": "b"},)
    nothing = work.then([])  # no partition matched: nothing to compact, nothing run
    assert isinstance(nothing, Answer)
    assert nothing.table.to_pylist() == [{"result": True, "snapshot_id": None, "partitions": 0}]


def test_compact_where_needs_a_partitioned_table(ctx):
    with pytest.raises(ProcedureArgumentError, match="'where': the table is not partitioned"):
        call(ctx, "CALL sys.compact(table => 't', `where` => 'id = 1')")


def test_compact_database_plans_the_matching_tables_and_counts_failures(ctx):
    ctx.catalog.create_database("other")
    ctx.catalog.create_table("other.x", SCHEMA)
    work = call(ctx, "CALL sys.compact_database(including_tables => 'default\\..*', "
                     "excluding_tables => 'default\\.e')").work
    assert isinstance(work, Compactions) and work.keep_going
    assert sorted(j.table.name for j in work.jobs) == ["default.p", "default.t"]
    assert all(j.full for j in work.jobs)
    assert work.answer([CommitResult((1,)), None]).to_pylist() == [
        {"result": "Compact database finished. Success: 1, Failed: 1"}]
    every = call(ctx, "CALL sys.compact_database(including_databases => 'other')").work
    assert [j.table.name for j in every.jobs] == ["other.x"]


def test_compact_database_refuses_a_bad_pattern_or_options(ctx):
    with pytest.raises(ProcedureArgumentError, match="not a regular expression"):
        call(ctx, "CALL sys.compact_database(including_tables => '(')")
    with pytest.raises(ProcedureArgumentError, match="key=value"):
        call(ctx, "CALL sys.compact_database(options => 'nonsense')")


def test_compact_database_applies_its_options_to_every_table(ctx):
    work = call(ctx, "CALL sys.compact_database(options => 'num-sorted-run.compaction-trigger=2')").work
    assert {j.table.options.get("num-sorted-run.compaction-trigger") for j in work.jobs} == {"2"}
    assert table(ctx).options.get("num-sorted-run.compaction-trigger") is None  # for this run only


# -- reset_consumer, list_procedures ------------------------------------------------------------


def test_reset_consumer_moves_then_deletes_a_consumer(ctx):
    assert carry_out(call(ctx, "CALL sys.reset_consumer('t', 'c', 2)")).to_pylist() == [
        {"result": True, "next_snapshot_id": 2}]
    assert table(ctx).refs.consumers.get("c").next_snapshot == 2
    delete = call(ctx, "CALL sys.reset_consumer('t', 'c')")
    assert table(ctx).refs.consumers.get("c") is not None  # planned, not yet done
    assert carry_out(delete).to_pylist() == [{"result": True, "next_snapshot_id": None}]
    assert carry_out(call(ctx, "CALL sys.reset_consumer('t', 'c')")).column("result").to_pylist() == [False]


@pytest.mark.parametrize(("name", "next_id", "words"),
                         [("t", 9, "valid: 1..4"), ("e", 1, "has no snapshots")])
def test_reset_consumer_refuses_a_snapshot_it_cannot_resume_from(ctx, name, next_id, words):
    with pytest.raises(ProcedureArgumentError, match=words):
        call(ctx, f"CALL sys.reset_consumer('{name}', 'c', {next_id})")


def test_list_procedures_answers_every_registered_signature(ctx):
    work = call(ctx, "CALL sys.list_procedures()").work
    rows = {r["name"]: r["signature"] for r in work.table.to_pylist()}
    assert rows["compact"].startswith("compact(table, partitions?") and "copy" in rows
    assert len(rows) >= 42


# -- tags and rollback --------------------------------------------------------------------------


def test_create_and_replace_tag_carry_out(ctx):
    carry_out(call(ctx, "CALL sys.create_tag('t', 'v1', 1)"))
    assert table(ctx).refs.tags.get("v1").snapshot.id == 1
    carry_out(call(ctx, "CALL sys.replace_tag('t', 'v1', 3)"))
    assert table(ctx).refs.tags.get("v1").snapshot.id == 3


def test_a_missing_snapshot_is_the_snapshot_arguments_error(ctx):
    sql = "CALL sys.create_tag('t', 'v1', 42)"
    with pytest.raises(ProcedureTargetError, match="table 'default.t'") as info:
        carry_out(call(ctx, sql))
    assert info.value.argument == "snapshot"
    assert str(table(ctx).path) not in str(info.value)  # the table's name, not its path


def test_rename_and_delete_tags(ctx):
    t = table(ctx)
    t.refs.tags.create("a", 1)
    t.refs.tags.create("b", 2)
    carry_out(call(ctx, "CALL sys.rename_tag('t', 'a', 'c')"))
    assert t.refs.tags.names() == ["b", "c"]
    # A list, a missing tag skipped: Paimon answers true.
    assert carry_out(call(ctx, "CALL sys.delete_tag('t', 'b, zz ,c')")).to_pylist() == [{"result": True}]
    assert t.refs.tags.names() == []


def test_delete_tag_checks_the_names_while_planning(ctx):
    with pytest.raises(ProcedureArgumentError, match="must not be blank"):
        call(ctx, "CALL sys.delete_tag('t', 'a,,b')")
    with pytest.raises(InvalidNameError):
        call(ctx, "CALL sys.delete_tag('t', 'a/b')")


def test_create_tag_from_timestamp_answers_the_tagged_snapshot(ctx):
    first = table(ctx).snapshots()[0]
    row = carry_out(call(ctx, "CALL sys.create_tag_from_timestamp('t', 'ts', 0)")).to_pylist()[0]
    assert row == {"tagName": "ts", "snapshot": 1, "commit_time": first.time_millis, "watermark": "null"}


def test_expire_tags_answers_the_expired_ones(ctx):
    table(ctx).refs.tags.create("a", 1)
    assert carry_out(call(ctx, "CALL sys.expire_tags('t', '2000-01-01')")).to_pylist() == [
        {"expired_tags": "No expired tags."}]
    assert carry_out(call(ctx, "CALL sys.expire_tags('t', '2099-01-01')")).to_pylist() == [
        {"expired_tags": "a"}]


def test_rollback_to_a_snapshot_answers_the_ids(ctx):
    result = carry_out(call(ctx, "CALL sys.rollback(table => 't', snapshot => 1)")).to_pylist()
    assert result == [{"previous_snapshot_id": 3, "current_snapshot_id": 4}]
    assert table(ctx).to_arrow().column("id").to_pylist() == [0]


@pytest.mark.parametrize("args", ["'t'", "'t', '1', 1", "table => 't', snapshot => 1, tag => 'x'"])
def test_rollback_takes_exactly_one_target(ctx, args):
    with pytest.raises(ProcedureArgumentError, match="exactly one of"):
        call(ctx, f"CALL sys.rollback({args})")


def test_rollback_to_a_missing_tag_is_refused_while_planning(ctx):
    with pytest.raises(NoSuchTagError, match="tag '1' does not exist"):
        call(ctx, "CALL sys.rollback(table => 't', tag => '1')")  # an all-digit tag is a tag


def test_rollback_to_timestamp_before_any_snapshot_is_the_timestamps_error(ctx):
    with pytest.raises(ProcedureTargetError) as info:
        carry_out(call(ctx, "CALL sys.rollback_to_timestamp('t', 0)"))
    assert info.value.argument == "timestamp"


def test_a_bad_time_is_the_arguments_error_when_carried_out(ctx):
    plan = call(ctx, "CALL sys.rollback_to_timestamp('t', 'someday')")  # the engine reads the time
    with pytest.raises(ProcedureArgumentError, match="argument timestamp = 'someday'") as info:
        carry_out(plan)
    assert info.value.sqlstate == "22023"


# -- branches -----------------------------------------------------------------------------------


def test_branches_created_renamed_and_deleted(ctx):
    t = table(ctx)
    t.refs.tags.create("v1", 1)
    carry_out(call(ctx, "CALL sys.create_branch('t', 'b1', 'v1')"))
    carry_out(call(ctx, "CALL sys.create_branch('t', 'b2')"))
    with pytest.raises(BranchAlreadyExistsError):
        carry_out(call(ctx, "CALL sys.create_branch('t', 'b2')"))
    carry_out(call(ctx, "CALL sys.create_branch(table => 't', branch => 'b2', ignoreIfExists => true)"))
    carry_out(call(ctx, "CALL sys.rename_branch('t', 'b2', 'b3')"))
    assert sorted(t.refs.branches.names()) == ["b1", "b3"]
    carry_out(call(ctx, "CALL sys.delete_branch('t', 'b1, b3')"))
    assert t.refs.branches.names() == []


def test_fast_forward_gives_main_the_branch_head(ctx):
    t = table(ctx)
    t.refs.tags.create("v1", 1)
    t.refs.branches.create("b", from_tag="v1")
    plan = call(ctx, "CALL sys.fast_forward('t', 'b')")
    assert t.to_arrow().num_rows == 3  # planned, not yet done
    carry_out(plan)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0]


def test_replace_main_answers_the_ids_and_the_backup_tag(ctx):
    t = table(ctx)
    t.refs.tags.create("v1", 1)
    t.refs.branches.create("b", from_tag="v1")
    row = carry_out(call(ctx, "CALL sys.replace_main('t', 'b')")).to_pylist()[0]
    assert (row["previous_snapshot_id"], row["current_snapshot_id"]) == (3, 4)
    assert row["backup_tag"] in t.refs.tags.names()
    assert t.to_arrow().column("id").to_pylist() == [0]


def test_merge_branch_dry_run_answers_whether_it_would_go_through(ctx):
    t = table(ctx)
    t.refs.tags.create("v1", 3)
    t.refs.branches.create("b", from_tag="v1")
    branch = ctx.catalog.get_table(Identifier("default", "t", "b"))
    branch.write_arrow(pa.table({"id": [9], "v": ["nine"]}, schema=branch.arrow_schema))
    plan = call(ctx, "CALL sys.merge_branch(table => 't', source_branch => 'b', dry_run => true)")
    assert carry_out(plan).to_pylist() == [{"result": True}]
    assert 9 not in t.to_arrow().column("id").to_pylist()  # a dry run merges nothing
    carry_out(call(ctx, "CALL sys.merge_branch('t', 'b')"))
    assert 9 in table(ctx).to_arrow().column("id").to_pylist()


# -- expiration, the retention mark -------------------------------------------------------------


def test_expire_snapshots_answers_paimons_count(ctx):
    assert carry_out(call(ctx, "CALL sys.expire_snapshots('t', 1)")).to_pylist() == [
        {"deleted_snapshots_count": 2}]
    assert table(ctx).snapshot_id_range() == (3, 3)


def test_expire_snapshots_detail_of_a_dry_run_lists_each_object(ctx):
    result = carry_out(call(ctx, "CALL sys.expire_snapshots(table => 't', retain_max => 2, "
                                 "dry_run => true, detail => true)"))
    rows = result.to_pylist()
    assert rows[0]["deleted_snapshots_count"] == 1 and rows[0]["dry_run"] is True
    assert rows[0]["object"] is None
    assert {"action": "delete", "object_kind": "snapshot", "object": "1"} in [
        {k: r[k] for k in ("action", "object_kind", "object")} for r in rows[1:]]
    assert table(ctx).snapshot_id_range() == (1, 3)


def test_expire_snapshots_refuses_bad_options_while_planning(ctx):
    with pytest.raises(ProcedureArgumentError, match="write 'key=value"):
        call(ctx, "CALL sys.expire_snapshots(table => 't', options => 'retain')")


def test_expire_snapshots_with_options_for_this_run(ctx):
    work = call(ctx, "CALL sys.expire_snapshots(table => 't', options => 'snapshot.num-retained.max=1')").work
    assert work.table.options["snapshot.num-retained.max"] == "1"
    assert "snapshot.num-retained.max" not in table(ctx).options


def test_retention_mark_in_databends_two_argument_form(ctx):
    plan = call(ctx, "CALL system$retention_mark('default', 't', '1 ms')")
    assert plan.work.table.name == "default.t"
    row = carry_out(plan).to_pylist()[0]
    assert row["advanced"] is True and row["snapshot_id"] == 3


# -- cleanup ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ("table => 't', mode => 'cluster'", "use 'local' or 'distributed'"),
        ("table => 't', parallelism => 0", "must be at least 1"),
        ("'default*'", "write 'database.\\*'"),
        ("'nodb.*'", "database 'nodb' does not exist"),
    ],
)
def test_remove_orphan_files_argument_errors(ctx, args, words):
    with pytest.raises(ProcedureArgumentError, match=words):
        call(ctx, f"CALL sys.remove_orphan_files({args})")


def test_remove_orphan_files_of_a_database_plans_every_table(ctx):
    orphan = Path(table(ctx, "e").path) / "bucket-0" / "orphan.parquet"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"x" * 10)
    two_days_ago = time.time() - 2 * 86_400
    os.utime(orphan, (two_days_ago, two_days_ago))
    plan = call(ctx, "CALL sys.remove_orphan_files('*', null, true)")
    assert plan.work.table is None  # several tables
    assert carry_out(plan).to_pylist() == [{"deletedFileCount": 1, "deletedFileTotalLenInBytes": 10}]
    assert orphan.exists()


def test_expire_partitions_answers_one_row_per_partition_or_paimons_row(ctx):
    d = ctx.catalog.create_table("default.d", PARTED, partition_keys=["dt"])
    d.write_arrow(pa.table({"id": [1, 2], "dt": ["2000-01-01", "2099-01-01"]}, schema=d.arrow_schema))
    sql = ("CALL sys.expire_partitions(table => 'd', expiration_time => '1 d', "
           "timestamp_formatter => 'yyyy-MM-dd'{})")
    dry = carry_out(call(ctx, sql.format(", dry_run => true")))
    assert dry.to_pylist() == [{"expired_partitions": "dt=2000-01-01"}]
    assert d.to_arrow().num_rows == 2
    carry_out(call(ctx, sql.format("")))
    assert table(ctx, "d").to_arrow().column("dt").to_pylist() == ["2099-01-01"]
    none_left = carry_out(call(ctx, sql.format("")))
    assert none_left.to_pylist() == [{"expired_partitions": "No expired partitions."}]


# -- further maintenance ------------------------------------------------------------------------


def test_clear_consumers_by_pattern(ctx):
    consumers = table(ctx).refs.consumers
    consumers.start("keep", 1)
    consumers.start("go-1", 1)
    carry_out(call(ctx, "CALL sys.clear_consumers('t', 'go.*')"))
    assert consumers.ids() == ["keep"]


def test_compact_manifest_refuses_sorting_while_planning(ctx):
    with pytest.raises(ProcedureArgumentError, match="manifest_sort_"):
        call(ctx, "CALL sys.compact_manifest('t', manifest_sort_enabled => true)")
    assert carry_out(call(ctx, "CALL sys.compact_manifest('t')")).to_pylist() == [{"result": True}]


def test_purge_files_dry_run_lists_and_keeps(ctx):
    result = carry_out(call(ctx, "CALL sys.purge_files('t', true)")).column("result").to_pylist()
    assert result and result != ["Success"]
    assert table(ctx).to_arrow().num_rows == 3
    assert carry_out(call(ctx, "CALL sys.purge_files('t')")).to_pylist() == [{"result": "Success"}]
    assert table(ctx).to_arrow().num_rows == 0


def test_remove_unexisting_files(ctx):
    with pytest.raises(ProcedureArgumentError, match="must be at least 1"):
        call(ctx, "CALL sys.remove_unexisting_files(table => 't', parallelism => 0)")
    assert carry_out(call(ctx, "CALL sys.remove_unexisting_files('t', true)")).num_rows == 0


def test_mark_partition_done_checks_its_partitions_while_planning(ctx):
    with pytest.raises(ProcedureArgumentError, match="'id' is not a partition column"):
        call(ctx, "CALL sys.mark_partition_done('p', 'id=1')")
    ctx.catalog.alter_table("default.p", [_set("partition.mark-done-action", "success-file")])
    carry_out(call(ctx, "CALL sys.mark_partition_done('p', 'dt=a')"))
    assert ctx.catalog.io.exists(table(ctx, "p").path + "/dt=a/_SUCCESS")


def test_trigger_tag_automatic_creation_without_the_option_answers_true(ctx):
    assert carry_out(call(ctx, "CALL sys.trigger_tag_automatic_creation('t')")).to_pylist() == [
        {"result": True}]
    assert table(ctx).refs.tags.names() == []


def test_repair_earliest_snapshot_refuses_a_snapshot_that_is_not_there(ctx):
    with pytest.raises(InvalidArgumentError, match="snapshot 9 must not be later than the latest snapshot 3"):
        carry_out(call(ctx, "CALL sys.repair_earliest_snapshot('t', 9)"))
    assert table(ctx).snapshot_id_range() == (1, 3)


def test_rebuild_iceberg_metadata_without_the_option_publishes_nothing(ctx):
    assert carry_out(call(ctx, "CALL sys.rebuild_iceberg_metadata('t')")).to_pylist() == [
        {"metadata_version": None}]


# -- rewrites and copies ------------------------------------------------------------------------


def test_rescale_plans_the_rewrite_of_the_whole_table(ctx):
    work = call(ctx, "CALL sys.rescale('t', 4)").work
    assert isinstance(work, RescaleTable) and work.table.name == "default.t"
    assert (work.job.name, work.job.buckets) == (TableName(None, None, "t"), 4)
    assert call(ctx, "CALL sys.rescale('t')").work.job.buckets == 2  # the table's own count
    assert table(ctx).core_options.bucket == 2


@pytest.mark.parametrize(
    ("sql", "error", "words"),
    [
        ("CALL sys.rescale('t', 4, 'dt=a')", UnsupportedStatementError, "one bucket count per table"),
        ("CALL sys.rescale(table => 't', bucket_num => 4, `where` => 'id=1')", UnsupportedStatementError,
         "one bucket count per table"),
        ("CALL sys.rescale('t', 0)", ProcedureArgumentError, "must be at least 1"),
        ("CALL sys.rescale('p')", ProcedureArgumentError, "give bucket_num"),
        ("CALL sys.rescale('p', 2)", UnsupportedStatementError, "fixed-bucket tables only"),
    ],
)
def test_rescale_refusals(ctx, sql, error, words):
    with pytest.raises(error, match=words):
        call(ctx, sql)


def test_copy_into_a_new_table_plans_its_creation_like_the_source(ctx):
    work = call(ctx, "CALL sys.copy('t', 'other.c')").work
    assert isinstance(work, CopyTable)
    assert (work.source.name, work.snapshot, work.target, work.where) == ("default.t", 3, None, None)
    create = work.create
    assert isinstance(create, CreateTable) and create.identifier == Identifier("other", "c")
    assert [f.name for f in create.fields] == ["id", "v"] and create.primary_keys == ("id",)
    assert create.options["bucket"] == "2" and "path" not in create.options


def test_copy_into_an_existing_table_checks_it_matches(ctx):
    ctx.catalog.create_table("default.same", SCHEMA, primary_keys=["id"])
    work = call(ctx, "CALL sys.copy('t', 'same')").work
    assert work.create is None and work.target.name == "default.same"
    with pytest.raises(ProcedureArgumentError, match="exists with other columns or partitioning"):
        call(ctx, "CALL sys.copy('t', 'p')")


def test_copy_where_needs_a_partitioned_source_and_an_empty_source_copies_nothing(ctx):
    with pytest.raises(ProcedureArgumentError, match="needs a partitioned source"):
        call(ctx, "CALL sys.copy('t', 'c', 'id > 1')")
    assert call(ctx, "CALL sys.copy('p', 'c', 'dt = ''a''')").work.where == "dt = 'a'"
    assert call(ctx, "CALL sys.copy('e', 'c')").work.snapshot is None


def test_migrate_table_in_place_stages_then_takes_the_origins_name(ctx):
    work = call(ctx, "CALL sys.migrate_table('hive', 'sdb.events', 'file.format=parquet', null, null, "
                     "'bucket=-1')").work
    assert isinstance(work, MigrateTable)
    assert (work.origin, work.staging, work.rename_to, work.delete_origin) == (
        "sdb.events", Identifier("sdb", "events__migrating"), Identifier("sdb", "events"), True)
    assert dict(work.options) == {"file.format": "parquet", "bucket": "-1"}


def test_migrate_table_into_a_target_keeps_the_origin_when_asked(ctx):
    work = call(ctx, "CALL sys.migrate_table(source_type => 'parquet', `table` => 'src', "
                     "delete_origin => false, target_table => 'db2.dst')").work
    assert (work.origin, work.staging, work.rename_to, work.delete_origin) == (
        "src", Identifier("db2", "dst"), None, False)


@pytest.mark.parametrize(
    ("args", "error", "words"),
    [
        ("'orc', 'src'", UnsupportedStatementError, "source_type 'orc' is not supported"),
        ("'parquet', 't'", ProcedureArgumentError, "already a dyntable table"),
        ("'parquet', 'src', null, false", ProcedureArgumentError, "give target_table"),
        ("'parquet', 'src', null, null, 'p'", ProcedureArgumentError, "'p' already exists"),
        ("'parquet', 'src', 'x'", ProcedureArgumentError, "key=value"),
    ],
)
def test_migrate_table_refusals(ctx, args, error, words):
    with pytest.raises(error, match=words):
        call(ctx, f"CALL sys.migrate_table({args})")


def test_migrate_database_plans_each_table_in_place(ctx):
    work = call(ctx, "CALL sys.migrate_database('parquet', 'sdb', 'k=v')").work
    assert isinstance(work, MigrateDatabase) and work.database == "sdb"
    one = work.migrate("sdb.x")
    assert (one.origin, one.staging, one.rename_to, dict(one.options)) == (
        "sdb.x", Identifier("sdb", "x__migrating"), Identifier("sdb", "x"), {"k": "v"})
    assert work.answer(2, 1).to_pylist() == [
        {"result": "migrate database is finished, success cnt: 2 , failed cnt: 1"}]


def test_rewrite_file_index_where_selecting_nothing_rewrites_nothing(ctx):
    work = call(ctx, "CALL sys.rewrite_file_index('p', 'dt = ''z''')").work
    assert isinstance(work, PartitionsWhere) and work.where == "dt = 'z'"
    then = work.then([])
    assert isinstance(then, EngineWork)
    assert then.run().to_pylist() == [{"written_partitions": 0, "written_indexes": 0}]
    with pytest.raises(ProcedureArgumentError, match="not partitioned"):
        call(ctx, "CALL sys.rewrite_file_index('t', 'id = 1')")


def test_repair_and_the_procedures_of_missing_features_are_refused(ctx):
    with pytest.raises(UnsupportedStatementError, match="nothing to repair"):
        call(ctx, "CALL sys.repair('t')")
    with pytest.raises(UnsupportedStatementError, match="global indexes") as info:
        call(ctx, "CALL sys.create_global_index('t')")
    assert info.value.sqlstate == "0A000"


def _set(key: str, value: str):
    from engine.schema_changes import SetOption

    return SetOption(key, value)
