"""Planners of the tag and branch statements over a fake context (no JVM): the ref action each
returns, the checks made while planning (nothing changes on disk), and the listings as rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from engine.errors import NoSuchBranchError
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import CreateBranch, CreateTag, Done, DropBranch, DropTags, RenameTag, Rows
from sqlext.execute.refs import PLANNERS
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    table = ctx.catalog.create_table("default.t", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    table.write_arrow(pa.table({"id": [1]}))
    table.write_arrow(pa.table({"id": [2]}))
    table.refs.tags.create("old", 1)
    table.refs.branches.create("dev")
    return ctx


def plan(ctx: FakeContext, sql: str):
    return plan_of(PLANNERS, ctx, sql)


def tags(ctx: FakeContext) -> list[str]:
    return sorted(ctx.catalog.get_table("default.t").refs.tags.names())


def test_create_tag_plans_the_tag_and_changes_nothing(ctx):
    p = plan(ctx, "ALTER TABLE t CREATE TAG v1 AS OF VERSION 2 RETAIN 2 DAYS")
    assert isinstance(p, CreateTag)
    assert (p.table.name, p.tag, p.version, p.retain, p.replace, p.if_not_exists) == (
        "default.t", "v1", 2, dt.timedelta(days=2), False, False)
    assert tags(ctx) == ["old"]


@pytest.mark.parametrize(("sql", "replace"), [
    ("ALTER TABLE t REPLACE TAG old", True),
    ("ALTER TABLE t CREATE OR REPLACE TAG old", True),  # it exists: replaced
    ("ALTER TABLE t CREATE OR REPLACE TAG new", False),  # it does not: created
    ("ALTER TABLE t CREATE TAG IF NOT EXISTS old", False),
])
def test_create_or_replace_decides_by_the_tags_existence(ctx, sql, replace):
    p = plan(ctx, sql)
    assert isinstance(p, CreateTag) and p.replace is replace


def test_drop_tag_leaves_out_missing_tags_only_with_if_exists(ctx):
    assert plan(ctx, "ALTER TABLE t DROP TAG IF EXISTS nope") == Done("No tag to drop")
    p = plan(ctx, "ALTER TABLE t DELETE TAG IF EXISTS `old,nope`")
    assert isinstance(p, DropTags) and p.tags == ("old",)
    p = plan(ctx, "ALTER TABLE t DROP TAG nope")
    assert isinstance(p, DropTags) and p.tags == ("nope",)  # the engine refuses it when it runs


def test_rename_tag(ctx):
    p = plan(ctx, "ALTER TABLE t RENAME TAG old TO newer")
    assert isinstance(p, RenameTag) and (p.old, p.new) == ("old", "newer")
    assert p.message == "Tag 'old' renamed to 'newer'"


def test_create_branch_from_a_tag_or_a_version(ctx):
    p = plan(ctx, "ALTER TABLE t CREATE BRANCH b1 FROM TAG old")
    assert isinstance(p, CreateBranch) and (p.branch, p.from_tag, p.from_snapshot) == ("b1", "old", None)
    p = plan(ctx, "ALTER TABLE t CREATE BRANCH IF NOT EXISTS dev AS OF VERSION 1")
    assert isinstance(p, CreateBranch) and (p.from_snapshot, p.if_not_exists) == (1, True)
    assert ctx.catalog.get_table("default.t").refs.branches.names() == ["dev"]


def test_drop_branch_checks_it_exists(ctx):
    p = plan(ctx, "ALTER TABLE t DROP BRANCH dev")
    assert p == DropBranch(p.table, "dev", "Branch 'dev' dropped")
    assert plan(ctx, "ALTER TABLE t DROP BRANCH IF EXISTS nope") == Done("No branch 'nope'")
    with pytest.raises(NoSuchBranchError, match="SHOW BRANCHES lists them"):
        plan(ctx, "ALTER TABLE t DROP BRANCH nope")


def test_listings_are_rows(ctx):
    ctx.catalog.get_table("default.t").refs.tags.create("a_first", 2)
    p = plan(ctx, "SHOW TAGS t")
    assert isinstance(p, Rows) and p.table.column("tag_name").to_pylist() == ["a_first", "old"]
    p = plan(ctx, "SHOW BRANCHES t")
    assert isinstance(p, Rows) and p.table.column("branch_name").to_pylist() == ["dev"]


def test_a_table_dyntable_does_not_own_is_refused(ctx):
    with pytest.raises(SqlAnalysisError, match="table or view not found") as info:
        plan(ctx, "SHOW TAGS nope")
    assert info.value.sqlstate == "42P01"
