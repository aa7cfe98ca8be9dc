"""Executors of the tag and branch statements: ALTER TABLE … {CREATE | REPLACE | DROP | RENAME} TAG,
ALTER TABLE … {CREATE | DROP} BRANCH, SHOW TAGS, SHOW BRANCHES.

Each binds to the engine's tag and branch operations (``engine.ops``); the engine's typed errors
(unknown tag, existing branch, bad name, missing snapshot) surface with their SQLSTATEs and
nothing is changed on disk when one is raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from engine.errors import BranchAlreadyExistsError, NoSuchBranchError, TagAlreadyExistsError
from sqlext.execute.common import done, require_managed, rows
from sqlext.execute.results import StatementResult
from sqlext.parse import ast
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession


def create_tag(s: SqlSession, n: ast.CreateTag, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    table = s.table(n.table)
    if n.mode == "replace" or (n.mode == "create_or_replace" and table.refs.tags.exists(n.tag)):
        table.refs.tags.replace(n.tag, n.version, n.retain)
        return done(stmt, f"Tag '{n.tag}' replaced")
    try:
        table.refs.tags.create(n.tag, n.version, n.retain)
    except TagAlreadyExistsError:
        if not n.if_not_exists:
            raise
        return done(stmt, f"Tag '{n.tag}' exists already")
    return done(stmt, f"Tag '{n.tag}' created")


def drop_tag(s: SqlSession, n: ast.DropTag, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    table = s.table(n.table)
    names = [t for t in n.tags if not n.if_exists or table.refs.tags.exists(t)]
    if not names:
        return done(stmt, "No tag to drop")
    result = table.refs.tags.delete(names)
    return done(stmt, f"Dropped tag(s) {', '.join(result.tags)}")


def rename_tag(s: SqlSession, n: ast.RenameTag, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    s.table(n.table).refs.tags.rename(n.old, n.new)
    return done(stmt, f"Tag '{n.old}' renamed to '{n.new}'")


def create_branch(s: SqlSession, n: ast.CreateBranch, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    try:
        s.table(n.table).refs.branches.create(n.branch, from_tag=n.from_tag, from_snapshot=n.version)
    except BranchAlreadyExistsError:
        if not n.if_not_exists:
            raise
        return done(stmt, f"Branch '{n.branch}' exists already")
    return done(stmt, f"Branch '{n.branch}' created")


def drop_branch(s: SqlSession, n: ast.DropBranch, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    table = s.table(n.table)
    if n.if_exists and n.branch not in table.refs.branches.names():
        return done(stmt, f"No branch '{n.branch}'")
    if n.branch not in table.refs.branches.names():
        raise NoSuchBranchError(
            f"branch '{n.branch}' does not exist in {table.name}; SHOW BRANCHES lists them"
        )
    table.refs.branches.delete(n.branch)
    return done(stmt, f"Branch '{n.branch}' dropped")


def show_tags(s: SqlSession, n: ast.ShowTags, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    names = sorted(s.table(n.table).refs.tags.names())
    return rows(s, stmt, pa.table({"tag_name": pa.array(names, pa.string())}))


def show_branches(s: SqlSession, n: ast.ShowBranches, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    names = sorted(s.table(n.table).refs.branches.names())
    return rows(s, stmt, pa.table({"branch_name": pa.array(names, pa.string())}))


HANDLERS = {
    ast.CreateTag: create_tag,
    ast.DropTag: drop_tag,
    ast.RenameTag: rename_tag,
    ast.CreateBranch: create_branch,
    ast.DropBranch: drop_branch,
    ast.ShowTags: show_tags,
    ast.ShowBranches: show_branches,
}
