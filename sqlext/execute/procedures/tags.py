"""CALL procedures for tags and rollback, with Paimon's Spark names, parameters and outputs.

One job: bind ``sys.create_tag``, ``replace_tag``, ``rename_tag``, ``delete_tag``,
``create_tag_from_timestamp``, ``expire_tags``, ``rollback`` and ``rollback_to_timestamp`` to the
engine's tag and rollback operations (``engine.ops``). Engine errors (unknown tag, bad name,
existing tag, missing snapshot) pass through typed; argument problems are 22023.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from engine.errors import NoSuchSnapshotError, NoSuchTagError
from engine.identifier import validate_name
from sqlext.errors import ProcedureArgumentError, ProcedureTargetError, sqlstate_for
from sqlext.execute.procedures.plans import EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument

if TYPE_CHECKING:
    from engine import Table
    from sqlext.execute.planning import PlannerContext

R = TypeVar("R")

log = logging.getLogger(__name__)
NO_EXPIRED_TAGS = "No expired tags."
_RESULT = pa.schema([("result", pa.bool_())])
_ROLLBACK = pa.schema([pa.field("previous_snapshot_id", pa.int64()),
                       pa.field("current_snapshot_id", pa.int64(), nullable=False)])


def _ok() -> pa.Table:
    return pa.table({"result": [True]}, schema=_RESULT)


def _on_snapshot(table: Table, argument: str, op: Callable[[], R]) -> R:
    """Run ``op``; a missing snapshot is reported at ``argument``, naming the table, not its path."""
    try:
        return op()
    except NoSuchSnapshotError as e:
        if type(e) is not NoSuchSnapshotError:
            raise  # expired concurrently / behind the retention mark: their own advice stands
        paths = table.store.paths
        message = str(e)
        for path in (paths.snapshot_dir, paths.branch_root, paths.root):
            message = message.replace(path, f"table '{table.name}'")
        raise ProcedureTargetError(message, argument=argument, sqlstate=sqlstate_for(e)) from None


def _create_tag(ctx: PlannerContext, args: dict[str, Any], *, replace: bool = False) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    tags = table.refs.tags
    op = tags.replace if replace else tags.create

    def create() -> pa.Table:
        _on_snapshot(table, "table" if args["snapshot"] is None else "snapshot",
                     lambda: op(args["tag"], args["snapshot"], args["time_retained"]))
        return _ok()

    return EngineWork(table, create)


def _replace_tag(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    return _create_tag(ctx, args, replace=True)


def _rename_tag(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def rename() -> pa.Table:
        table.refs.tags.rename(args["tag"], args["target_tag"])
        return _ok()

    return EngineWork(table, rename)


def _delete_tag(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    # Paimon accepts a comma-separated list of tags here, and skips (with a warning) the tags that
    # do not exist: deleting a missing tag answers true.
    table = table_argument(ctx, args["table"])
    names = list(dict.fromkeys(n.strip() for n in args["tag"].split(",")))
    if not all(names):
        raise ProcedureArgumentError(f"argument 'tag' = {args['tag']!r}: a tag name must not be blank")
    for name in names:
        validate_name("tag", name)

    def delete() -> pa.Table:
        existing = [n for n in names if table.refs.tags.exists(n)]
        for missing in (n for n in names if n not in existing):
            log.warning("delete_tag: tag '%s' of %s does not exist; nothing to delete", missing, table.name)
        if existing:
            table.refs.tags.delete(existing)
        return _ok()

    return EngineWork(table, delete)


def _create_tag_from_timestamp(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def create() -> pa.Table:
        tag = _on_snapshot(table, "timestamp", lambda: table.refs.tags.create_from_timestamp(
            args["tag"], args["timestamp"], args["time_retained"]))
        snap = tag.snapshot
        return pa.table({
            "tagName": [args["tag"]],
            "snapshot": pa.array([snap.id], pa.int64()),
            "commit_time": pa.array([snap.time_millis], pa.int64()),
            # Paimon prints String.valueOf(watermark): 'null' when there is none.
            "watermark": [str(snap.watermark) if snap.watermark is not None else "null"],
        })

    return EngineWork(table, create)


def _expire_tags(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def expire() -> pa.Table:
        # Paimon answers one row 'No expired tags.' when nothing expires.
        expired = list(table.maintenance.expire_tags(args["older_than"]).tags) or [NO_EXPIRED_TAGS]
        return pa.table({"expired_tags": pa.array(expired, pa.string())},
                        schema=pa.schema([pa.field("expired_tags", pa.string(), nullable=False)]))

    return EngineWork(table, expire)


def _rollback(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    given = [(k, args[k]) for k in ("version", "snapshot", "tag") if args[k] is not None]
    if len(given) != 1:
        raise ProcedureArgumentError("rollback takes exactly one of 'version', 'snapshot' and 'tag'")
    key, value = given[0]
    table = table_argument(ctx, args["table"])
    if key == "tag" and not table.refs.tags.exists(validate_name("tag", value)):
        # A tag argument names a tag only (an all-digit one included), never a snapshot id.
        raise NoSuchTagError(f"tag '{value}' does not exist in table '{table.name}'; nothing was rolled back")
    return EngineWork(table, lambda: _rollback_row(
        _on_snapshot(table, key, lambda: table.refs.rollback_to(value))
    ))


def _rollback_row(result: Any) -> pa.Table:
    return pa.table({"previous_snapshot_id": pa.array([result.previous_snapshot_id], pa.int64()),
                     "current_snapshot_id": pa.array([result.current_snapshot_id], pa.int64())},
                    schema=_ROLLBACK)


def _rollback_to_timestamp(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    return EngineWork(table, lambda: _rollback_row(
        _on_snapshot(table, "timestamp", lambda: table.refs.rollback_to_timestamp(args["timestamp"]))
    ))


def register_tag_procedures() -> None:
    S, L, T = ParamType.STRING, ParamType.LONG, ParamType.TIME  # noqa: N806
    tag_params = (Param("table", S, True), Param("tag", S, True), Param("snapshot", L),
                  Param("time_retained", S))
    for proc in (
        Procedure("create_tag", tag_params, _RESULT, _create_tag,
                  "Tag a snapshot (default the latest), optionally with a retention such as '1 d'."),
        Procedure("replace_tag", tag_params, _RESULT, _replace_tag,
                  "Point an existing tag at another snapshot."),
        Procedure("rename_tag",
                  (Param("table", S, True), Param("tag", S, True), Param("target_tag", S, True)),
                  _RESULT, _rename_tag, "Rename a tag."),
        Procedure("delete_tag", (Param("table", S, True), Param("tag", S, True)), _RESULT, _delete_tag,
                  "Delete tags (comma-separated) and the files nothing else references."),
        Procedure("create_tag_from_timestamp",
                  (Param("table", S, True), Param("tag", S, True), Param("timestamp", T),
                   Param("time_retained", S)),
                  pa.schema([("tagName", pa.string()), ("snapshot", pa.int64()), ("commit_time", pa.int64()),
                             ("watermark", pa.string())]),
                  _create_tag_from_timestamp, "Tag the first snapshot committed at or after a time."),
        Procedure("expire_tags", (Param("table", S, True), Param("older_than", T)),
                  pa.schema([pa.field("expired_tags", pa.string(), nullable=False)]), _expire_tags,
                  "Delete tags past their retention, or created before older_than (a time such as "
                  "'yyyy-MM-dd HH:mm:ss' or '7 d')."),
        Procedure("rollback",
                  (Param("table", S, True), Param("version", S), Param("snapshot", L), Param("tag", S)),
                  _ROLLBACK, _rollback,
                  "Roll back to a snapshot id or tag as a new snapshot; the replaced head is kept as a tag."),
        Procedure("rollback_to_timestamp", (Param("table", S, True), Param("timestamp", T, True)), _ROLLBACK,
                  _rollback_to_timestamp, "Roll back to the newest snapshot at or before a time."),
    ):
        register(proc, replace=True)
