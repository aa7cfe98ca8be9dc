"""CALL procedures for branches, with Paimon's Spark names and parameters.

One job: bind ``sys.create_branch``, ``delete_branch``, ``rename_branch``, ``fast_forward`` and
``replace_main`` to the engine's branch operations (``engine.ops.branches``,
``engine.ops.replace_main``). ``fast_forward`` and ``replace_main`` publish the branch head's
content as one new main snapshot (atomic for readers, streaming readers of main continue) rather
than deleting and copying snapshot files as Paimon does; engine errors pass through typed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.errors import BranchAlreadyExistsError
from sqlext.execute.procedures.plans import EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument

if TYPE_CHECKING:
    from sqlext.execute.planning import PlannerContext

_RESULT = pa.schema([("result", pa.bool_())])


def _ok() -> pa.Table:
    return pa.table({"result": [True]}, schema=_RESULT)


def _create_branch(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def create() -> pa.Table:
        try:
            table.refs.branches.create(args["branch"], from_tag=args["tag"])
        except BranchAlreadyExistsError:
            if not (args["ignoreIfExists"] or False):
                raise
        return _ok()

    return EngineWork(table, create)


def _delete_branch(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    names = [b.strip() for b in args["branch"].split(",") if b.strip()]  # Paimon accepts a list

    def delete() -> pa.Table:
        for name in names:
            table.refs.branches.delete(name)
        return _ok()

    return EngineWork(table, delete)


def _rename_branch(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def rename() -> pa.Table:
        table.refs.branches.rename(args["from_branch"], args["to_branch"])
        return _ok()

    return EngineWork(table, rename)


def _fast_forward(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def forward() -> pa.Table:
        table.refs.branches.fast_forward(args["branch"])
        return _ok()

    return EngineWork(table, forward)


def _replace_main(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    keep = args["keep_backup"]
    table = table_argument(ctx, args["table"])

    def replace() -> pa.Table:
        result = table.refs.branches.replace_main(args["branch"], keep_backup=keep is None or keep)
        return pa.table({"previous_snapshot_id": pa.array([result.previous_snapshot_id], pa.int64()),
                         "current_snapshot_id": pa.array([result.current_snapshot_id], pa.int64()),
                         "backup_tag": pa.array([result.backup_tag], pa.string())}, schema=_REPLACE_MAIN)

    return EngineWork(table, replace)


_REPLACE_MAIN = pa.schema([pa.field("previous_snapshot_id", pa.int64()),
                           pa.field("current_snapshot_id", pa.int64(), nullable=False),
                           pa.field("backup_tag", pa.string())])


def register_branch_procedures() -> None:
    S, B = ParamType.STRING, ParamType.BOOLEAN  # noqa: N806
    for proc in (
        Procedure("create_branch",
                  (Param("table", S, True), Param("branch", S, True), Param("tag", S),
                   Param("ignoreIfExists", B)),
                  _RESULT, _create_branch, "Create a branch: empty (the table's schemas) or from a tag."),
        Procedure("delete_branch", (Param("table", S, True), Param("branch", S, True)), _RESULT,
                  _delete_branch,
                  "Delete branches (comma-separated) and the files no other branch, tag or snapshot "
                  "references."),
        Procedure("rename_branch",
                  (Param("table", S, True), Param("from_branch", S, True), Param("to_branch", S, True)),
                  _RESULT, _rename_branch, "Rename a branch."),
        Procedure("fast_forward", (Param("table", S, True), Param("branch", S, True)), _RESULT, _fast_forward,
                  "Give main the branch head's content as one new main snapshot."),
        Procedure("replace_main",
                  (Param("table", S, True), Param("branch", S, True), Param("keep_backup", B)),
                  _REPLACE_MAIN, _replace_main,
                  "Give main the branch head's content and schema as one new main snapshot; main's old "
                  "head is kept as tag replace-main-backup-<id> unless keep_backup => false."),
    ):
        register(proc, replace=True)
