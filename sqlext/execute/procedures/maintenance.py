"""CALL procedures for Paimon's further table maintenance, with Paimon's Spark names and outputs.

One job: bind ``clear_consumers``, ``compact_manifest``, ``purge_files``,
``remove_unexisting_files``, ``rollback_to_watermark``, ``mark_partition_done``,
``trigger_tag_automatic_creation`` and ``compact_database`` to the engine's operations
(``engine.ops.consumers``, ``compact_manifest``, ``purge``, ``missing_files``,
``watermark_rollback``, ``partition_done``, ``auto_tags``) and to the SQL layer's compaction
(a ``Compactions`` plan).
Each one that changes a table is recorded in its maintenance log by the engine operation.

Beyond Paimon: ``purge_files``, ``clear_consumers`` and ``compact_manifest`` take ``dry_run``
(Paimon's ``compact_manifest`` has it; the others delete without one in Paimon). A dry run of
``purge_files`` answers one line per kind of object that would go instead of ``Success``.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sqlext.errors import ProcedureArgumentError
from sqlext.execute.procedures.expire import with_options
from sqlext.execute.procedures.plans import Compaction, Compactions, EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import (
    Param,
    ParamType,
    Procedure,
    parse_partitions,
    register,
    table_argument,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine import CommitResult
    from sqlext.execute.planning import PlannerContext

log = logging.getLogger(__name__)

_BOOL = pa.schema([pa.field("result", pa.bool_())])
_TEXT = pa.schema([pa.field("result", pa.string())])
_FILES = pa.schema([pa.field("fileName", pa.string(), nullable=False)])
_ROLLBACK = pa.schema(
    [
        pa.field("previous_snapshot_id", pa.int64()),
        pa.field("current_snapshot_id", pa.int64(), nullable=False),
    ]
)


def _true() -> pa.Table:
    return pa.table({"result": [True]}, schema=_BOOL)


def _clear_consumers(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def clear() -> pa.Table:
        table.refs.consumers.clear(
            args["including_consumers"], args["excluding_consumers"], dry_run=bool(args["dry_run"])
        )
        return _true()

    return EngineWork(table, clear)


def _compact_manifest(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = with_options(table_argument(ctx, args["table"]), args["options"])
    if (
        args["manifest_sort_enabled"]
        or args["manifest_sort_partition_field"]
        or args["manifest_sort_max_rewrite_size"]
    ):
        raise ProcedureArgumentError(
            "compact_manifest: sorting manifests by partition (manifest_sort_*) is not supported by "
            "dyntable; omit those arguments (the merged manifests hold only live files)"
        )

    def compact() -> pa.Table:
        result = table.maintenance.compact_manifests(dry_run=bool(args["dry_run"]))
        log.info(
            "compact_manifest of %s: %d manifest(s) → %d%s",
            table.name,
            result.manifests_before,
            result.manifests_after,
            " (dry run)" if result.dry_run else "",
        )
        return _true()

    return EngineWork(table, compact)


def _purge_files(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def purge() -> pa.Table:
        report = table.maintenance.purge_files(dry_run=bool(args["dry_run"]))
        rows = report.lines() if report.dry_run else ["Success"]
        return pa.table({"result": rows}, schema=_TEXT)

    return EngineWork(table, purge)


def _remove_unexisting_files(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    parallelism = args["parallelism"]
    if parallelism is not None and parallelism < 1:
        raise ProcedureArgumentError(f"argument 'parallelism' = {parallelism}: must be at least 1")
    table = table_argument(ctx, args["table"])

    def remove() -> pa.Table:
        result = table.maintenance.remove_missing_files(dry_run=bool(args["dry_run"]),
                                                        parallelism=parallelism)
        return pa.table({"fileName": pa.array(list(result.paths), pa.string())}, schema=_FILES)

    return EngineWork(table, remove)


def _rollback_to_watermark(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def rollback() -> pa.Table:
        result = table.refs.rollback_to_watermark(args["watermark"])
        return pa.table(
            {
                "previous_snapshot_id": pa.array([result.previous_snapshot_id], pa.int64()),
                "current_snapshot_id": pa.array([result.current_snapshot_id], pa.int64()),
            },
            schema=_ROLLBACK,
        )

    return EngineWork(table, rollback)


def _mark_partition_done(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    specs = parse_partitions(table.schema, args["partitions"])

    def mark() -> pa.Table:
        table.maintenance.mark_partitions_done(specs)
        return _true()

    return EngineWork(table, mark)


def _trigger_tag_automatic_creation(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def trigger() -> pa.Table:
        # Unlike the run after a commit (which never fails the commit), a called run reports its
        # errors. With tag.automatic-creation = 'none' there is nothing to create: Paimon answers true.
        created = table.maintenance.trigger_tag_automatic_creation()
        log.info("trigger_tag_automatic_creation of %s created %s", table.name, created or "no tag")
        return _true()

    return EngineWork(table, trigger)


def _regex(text: str | None, default: str | None, what: str) -> re.Pattern[str] | None:
    text = text if text is not None and text.strip() else default
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise ProcedureArgumentError(
            f"argument '{what}' = {text!r} is not a regular expression: {e}"
        ) from None


def _compact_database(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    databases = _regex(args["including_databases"], ".*", "including_databases")
    including = _regex(args["including_tables"], ".*", "including_tables")
    excluding = _regex(args["excluding_tables"], None, "excluding_tables")
    assert databases is not None and including is not None
    catalog = ctx.catalog
    jobs: list[Compaction] = []
    unreadable = 0
    for database in catalog.list_databases():
        if not databases.fullmatch(database):
            continue
        for name in catalog.list_tables(database):
            full = f"{database}.{name}"
            if not including.fullmatch(full) or (excluding is not None and excluding.fullmatch(full)):
                continue
            try:
                jobs.append(Compaction(with_options(catalog.get_table(full), args["options"]), full=True))
            except ProcedureArgumentError:
                raise  # a bad options argument fails every table alike: say so once
            except Exception as e:  # noqa: BLE001 - Paimon counts a failing table and goes on
                log.error("compact_database: compacting %s failed: %s", full, e)
                unreadable += 1

    def answer(results: Sequence[CommitResult | None]) -> pa.Table:
        ok = sum(r is not None for r in results)
        failed = unreadable + len(results) - ok
        return pa.table({"result": [f"Compact database finished. Success: {ok}, Failed: {failed}"]},
                        schema=_TEXT)

    return Compactions(tuple(jobs), answer, keep_going=True)


def register_maintenance_procedures() -> None:
    S, N, L, B = ParamType.STRING, ParamType.INT, ParamType.LONG, ParamType.BOOLEAN  # noqa: N806
    table = Param("table", S, True)
    for proc in (
        Procedure(
            "clear_consumers",
            (
                table,
                Param("including_consumers", S, aliases=("includingConsumers",)),
                Param("excluding_consumers", S, aliases=("excludingConsumers",)),
                Param("dry_run", B, default=False),
            ),
            _BOOL,
            _clear_consumers,
            "Delete the consumers whose id fully matches including_consumers (default all) and not "
            "excluding_consumers (regular expressions).",
        ),
        Procedure(
            "compact_manifest",
            (
                table,
                Param("options", S),
                Param("dry_run", B, default=False),
                Param("manifest_sort_enabled", B),
                Param("manifest_sort_partition_field", S),
                Param("manifest_sort_max_rewrite_size", S),
            ),
            _BOOL,
            _compact_manifest,
            "Merge the data manifests into few manifests of live files, as one COMPACT snapshot.",
        ),
        Procedure(
            "purge_files",
            (table, Param("dry_run", B, default=False)),
            _TEXT,
            _purge_files,
            "Delete every branch, tag, consumer, row and old snapshot of the table (the schema stays); "
            "dry_run lists what would go.",
        ),
        Procedure(
            "remove_unexisting_files",
            (table, Param("dry_run", B, default=False), Param("parallelism", N)),
            _FILES,
            _remove_unexisting_files,
            "Drop from the table the data files that no longer exist (one snapshot); lists them.",
        ),
        Procedure(
            "rollback_to_watermark",
            (table, Param("watermark", L, True)),
            _ROLLBACK,
            _rollback_to_watermark,
            "Roll back to the newest snapshot whose watermark is at or below watermark.",
        ),
        Procedure(
            "mark_partition_done",
            (table, Param("partitions", S, True)),
            _BOOL,
            _mark_partition_done,
            "Mark partitions ('k=v,...;k=v') done by partition.mark-done-action (success-file).",
        ),
        Procedure(
            "trigger_tag_automatic_creation",
            (table,),
            _BOOL,
            _trigger_tag_automatic_creation,
            "Create the tags tag.automatic-creation asks for now.",
        ),
        Procedure(
            "compact_database",
            (
                Param("including_databases", S),
                Param("including_tables", S),
                Param("excluding_tables", S),
                Param("options", S),
            ),
            _TEXT,
            _compact_database,
            "Fully compact every table whose 'db.table' matches including_tables (regular expressions, "
            "databases by including_databases) and not excluding_tables.",
        ),
    ):
        register(proc, replace=True)
