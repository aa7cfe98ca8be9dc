"""Planners of the tag and branch statements: ALTER TABLE … {CREATE | REPLACE | DROP | RENAME} TAG,
ALTER TABLE … {CREATE | DROP} BRANCH, SHOW TAGS, SHOW BRANCHES.

Each checks the statement against the table's refs and returns a ref action (``planning.py``)
that the session's runner applies with the engine's tag and branch operations (``engine.ops``),
or the listing as rows. The engine's typed errors (unknown tag, existing branch, bad name, missing
snapshot) surface with their SQLSTATEs and nothing is changed on disk when one is raised.
"""

from __future__ import annotations

import pyarrow as pa

from engine.errors import NoSuchBranchError
from sqlext.execute.ddl import require_managed
from sqlext.execute.planning import (
    CreateBranch,
    CreateTag,
    Done,
    DropBranch,
    DropTags,
    Plan,
    Planner,
    PlannerContext,
    RenameTag,
    Rows,
)
from sqlext.parse import ast
from sqlext.parse.splitter import Statement


def create_tag(ctx: PlannerContext, n: ast.CreateTag, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    table = ctx.table(n.table)
    replace = n.mode == "replace" or (n.mode == "create_or_replace" and table.refs.tags.exists(n.tag))
    return CreateTag(table, n.tag, n.version, n.retain, replace, n.if_not_exists)


def drop_tag(ctx: PlannerContext, n: ast.DropTag, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    table = ctx.table(n.table)
    names = tuple(t for t in n.tags if not n.if_exists or table.refs.tags.exists(t))
    return DropTags(table, names) if names else Done("No tag to drop")


def rename_tag(ctx: PlannerContext, n: ast.RenameTag, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    return RenameTag(ctx.table(n.table), n.old, n.new, f"Tag '{n.old}' renamed to '{n.new}'")


def create_branch(ctx: PlannerContext, n: ast.CreateBranch, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    return CreateBranch(ctx.table(n.table), n.branch, n.from_tag, n.version, n.if_not_exists)


def drop_branch(ctx: PlannerContext, n: ast.DropBranch, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    table = ctx.table(n.table)
    if n.branch not in table.refs.branches.names():
        if n.if_exists:
            return Done(f"No branch '{n.branch}'")
        raise NoSuchBranchError(
            f"branch '{n.branch}' does not exist in {table.name}; SHOW BRANCHES lists them"
        )
    return DropBranch(table, n.branch, f"Branch '{n.branch}' dropped")


def show_tags(ctx: PlannerContext, n: ast.ShowTags, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    names = sorted(ctx.table(n.table).refs.tags.names())
    return Rows(pa.table({"tag_name": pa.array(names, pa.string())}))


def show_branches(ctx: PlannerContext, n: ast.ShowBranches, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    names = sorted(ctx.table(n.table).refs.branches.names())
    return Rows(pa.table({"branch_name": pa.array(names, pa.string())}))


PLANNERS: dict[type, Planner] = {
    ast.CreateTag: create_tag,
    ast.DropTag: drop_tag,
    ast.RenameTag: rename_tag,
    ast.CreateBranch: create_branch,
    ast.DropBranch: drop_branch,
    ast.ShowTags: show_tags,
    ast.ShowBranches: show_branches,
}
