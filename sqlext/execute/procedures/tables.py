"""CALL procedures that rewrite or move whole tables, and Paimon's procedures dyntable refuses.

One job: plan ``rescale`` (rewrite into another bucket count), ``copy`` (a table's rows, read at
one snapshot, into another table, created like the source when missing) and ``migrate_table``
(a Spark Parquet table into a dyntable table) as the rewrite plans of ``plans.py``, which the
runner's side (``sqlext.execute.procedure_jobs``) carries out through the one write path, and register
Paimon's procedures for features dyntable does not have so that a call names the feature in a
typed ``UnsupportedStatementError`` (0A000) instead of "procedure not found".

* ``rescale(table, bucket_num, partitions, where)``: one overwrite commit of every row in the new
  layout (``ALTER TABLE ... CLUSTERED INTO n BUCKETS``); on failure the old layout and files stay.
  dyntable keeps one bucket count per table, so ``partitions`` / ``where`` are refused.
* ``copy(source_table, target_table, where)``: consistent at the source's latest snapshot; the
  target is overwritten (only the partitions ``where`` selects, when given), so copying twice
  leaves the target equal to the source, as in Paimon's test.
* ``migrate_table(source_type, table, options, delete_origin, target_table, options_map,
  parallelism)``: the rows are written into a new dyntable table first; only after that commit
  is the origin dropped (``delete_origin``, default true) and, for an in-place migration, the new
  table renamed to the origin's name. A failure before leaves the origin untouched and drops the
  half-made table: nothing is lost.
* ``rewrite_file_index(table, where, dry_run)``: Paimon's result ``(written_partitions,
  written_indexes)``; the work is ``Table.rewrite_file_index`` (engine.ops.rewrite_file_index).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sqlext.errors import ProcedureArgumentError, UnsupportedStatementError
from sqlext.execute.planning import CreateTable, Rescale
from sqlext.execute.procedures.plans import (
    CopyTable,
    EngineWork,
    MigrateDatabase,
    MigrateTable,
    PartitionsWhere,
    ProcedurePlan,
    RescaleTable,
)
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument
from sqlext.parse.names import TableName

if TYPE_CHECKING:
    from sqlext.execute.planning import PlannerContext

log = logging.getLogger(__name__)

_BOOL = pa.schema([pa.field("result", pa.bool_())])


def _true() -> pa.Table:
    return pa.table({"result": [True]}, schema=_BOOL)


def _name(ctx: PlannerContext, text: str, param: str) -> TableName:
    """A table argument's name (any table: managed, the SQL engine's, or none yet)."""
    try:
        return TableName.parse(text)
    except ValueError as e:  # InvalidArgumentError
        raise ProcedureArgumentError(f"argument '{param}': {e}") from None


def _rescale(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    if args["partitions"] or args["where"]:
        raise UnsupportedStatementError(
            "rescale of some partitions is not supported: dyntable keeps one bucket count per table; "
            "omit 'partitions' and 'where' to rescale the whole table"
        )
    buckets = args["bucket_num"]
    if buckets is None:
        buckets = table.core_options.bucket
        if buckets < 1:
            raise ProcedureArgumentError(
                f"rescale: table '{table.name}' has bucket = {buckets}; give bucket_num (at least 1)"
            )
    if buckets < 1:
        raise ProcedureArgumentError(f"argument 'bucket_num' = {buckets}: must be at least 1")
    if table.core_options.bucket < 1:
        raise UnsupportedStatementError(
            f"rescale: table '{table.name}' has bucket = {table.core_options.bucket} (dynamic or unaware "
            "buckets); dyntable rescales fixed-bucket tables only"
        )
    name = _name(ctx, args["table"], "table")
    return RescaleTable(table, Rescale(name, buckets, f"Table {table.name} rescaled to {buckets} buckets"))


def _copy(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    source = table_argument(ctx, args["source_table"], "source_table")
    target_name = _name(ctx, args["target_table"], "target_table")
    target = create = None
    if ctx.is_managed(target_name):
        target = ctx.table(target_name)
        theirs = [(f.name, str(f.type)) for f in target.schema.fields]
        ours = [(f.name, str(f.type)) for f in source.schema.fields]
        if theirs != ours or target.partition_keys != source.partition_keys:
            raise ProcedureArgumentError(
                f"copy: target table '{target.name}' exists with other columns or partitioning than "
                f"'{source.name}'; drop it or name a new table"
            )
    else:
        create = CreateTable(
            ctx.identifier(target_name), tuple(source.schema.fields), tuple(source.partition_keys),
            tuple(source.primary_keys), {k: v for k, v in source.options.items() if k != "path"},
            source.schema.comment, f"Table {args['target_table']} created",
        )
    if args["where"] and not source.partition_keys:
        raise ProcedureArgumentError("copy: argument 'where' needs a partitioned source table")
    latest = source.latest_snapshot()
    return CopyTable(source, None if latest is None else latest.id, target, create, args["where"] or None)


_MIGRATE_SOURCES = ("hive", "parquet", "spark")


def _migrate_table(ctx: PlannerContext, args: dict[str, Any]) -> MigrateTable:
    kind = args["source_type"].strip().lower()
    if kind not in _MIGRATE_SOURCES:
        raise UnsupportedStatementError(
            f"migrate_table: source_type '{args['source_type']}' is not supported; dyntable migrates Spark "
            "catalog tables stored as Parquet (source_type 'hive' or 'parquet')"
        )
    origin = _name(ctx, args["table"], "table")
    if ctx.is_managed(origin):
        raise ProcedureArgumentError(f"migrate_table: '{args['table']}' is already a dyntable table")
    options = _options(args["options"])
    options.update(_options(args["options_map"]))  # Paimon's map(...) argument, written 'k=v,...' here
    in_place = not args["target_table"]
    delete_origin = True if args["delete_origin"] is None else bool(args["delete_origin"])
    if in_place and not delete_origin:
        raise ProcedureArgumentError(
            "migrate_table: an in-place migration replaces the origin; give target_table to keep it"
        )
    target = _name(ctx, args["target_table"], "target_table") if not in_place else None
    if target is not None and ctx.is_managed(target):
        raise ProcedureArgumentError(f"migrate_table: target table '{args['target_table']}' already exists")
    final = ctx.identifier(target if target is not None else origin)
    staging = type(final)(final.database, f"{final.table}__migrating") if in_place else final
    spark_name = ".".join(p for p in (origin.database, origin.table) if p)
    return MigrateTable(spark_name, staging, final if in_place else None, options, delete_origin)


def _migrate_database(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    """Every table of a database of the SQL engine's, migrated in place one by one (the runner lists
    them); a failing table is counted and left as it was (each migration is all or nothing), as
    Paimon counts them."""
    database = args["database"]

    def migrate(name: str) -> MigrateTable:
        return _migrate_table(ctx, {
            "source_type": args["source_type"], "table": name, "options": args["options"],
            "delete_origin": True, "target_table": None, "options_map": args["options_map"],
            "parallelism": args["parallelism"],
        })

    def answer(ok: int, failed: int) -> pa.Table:
        text = f"migrate database is finished, success cnt: {ok} , failed cnt: {failed}"
        return pa.table({"result": [text]}, schema=pa.schema([pa.field("result", pa.string())]))

    return MigrateDatabase(database, migrate, answer)


def _options(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ProcedureArgumentError(f"argument 'options' = {text!r}: write 'key=value,key2=value2'")
        out[key.strip()] = value.strip()
    return out


def _repair_earliest_snapshot(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def repair() -> pa.Table:
        previous = table.maintenance.repair_earliest_snapshot(args["snapshot_id"])
        return pa.table(
            {"previous_earliest_snapshot_id": [previous],
             "current_earliest_snapshot_id": [args["snapshot_id"]]},
            schema=_EARLIEST,
        )

    return EngineWork(table, repair)


_EARLIEST = pa.schema(
    [
        pa.field("previous_earliest_snapshot_id", pa.int64(), nullable=False),
        pa.field("current_earliest_snapshot_id", pa.int64(), nullable=False),
    ]
)


_REWRITE = pa.schema([
    pa.field("written_partitions", pa.int32(), nullable=False),
    pa.field("written_indexes", pa.int32(), nullable=False),
])


def _rewrite_file_index(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    dry_run = bool(args["dry_run"])

    def rewrite(specs: list[dict[str, Any]] | None) -> ProcedurePlan:
        def run() -> pa.Table:
            written = (0, 0)
            if specs is None or specs:  # a where that selects no partition rewrites nothing
                result = table.maintenance.rewrite_file_index(specs, dry_run=dry_run)
                written = (result.written_partitions, result.written_indexes)
            return pa.table({"written_partitions": [written[0]], "written_indexes": [written[1]]},
                            schema=_REWRITE)

        return EngineWork(table, run)

    if not args["where"]:
        return rewrite(None)
    if not table.partition_keys:
        raise ProcedureArgumentError("argument 'where': the table is not partitioned")
    return PartitionsWhere(table, args["where"], rewrite)


def _repair(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    raise UnsupportedStatementError(
        "repair synchronizes a metastore (Hive) with the tables on the file system; dyntable's catalog is "
        "the file system itself, so there is nothing to repair (Paimon's file-system catalog refuses it too)"
    )


#: Paimon procedures for features dyntable does not have: name → the feature, for the message.
UNSUPPORTED = {
    "create_function": "catalog functions (Paimon's REST catalog functions)",
    "alter_function": "catalog functions (Paimon's REST catalog functions)",
    "drop_function": "catalog functions (Paimon's REST catalog functions)",
    "alter_view_dialect": "Paimon views with per-engine SQL dialects",
    "create_global_index": "global indexes",
    "drop_global_index": "global indexes",
    "compact_chain_table": "chain tables",
    "reassign_row_id": "row ids (row tracking)",
    # Paimon applies it only to unaware-bucket data-evolution tables; primary-key DV tables
    # apply their deletion vectors by compaction (CALL sys.compact).
    "materialize_deletion_vectors": "data-evolution tables (row tracking; Paimon runs it on no other "
    "table, and primary-key tables apply their deletion vectors with CALL sys.compact)",
}


def unsupported_message(name: str) -> str:
    return (
        f"CALL sys.{name} is not supported by dyntable: it needs {UNSUPPORTED[name]}, "
        "which dyntable does not have"
    )


def _unsupported(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:  # pragma: no cover - see bind
    raise AssertionError("an unsupported procedure is refused when its arguments are bound")


def register_table_procedures() -> None:
    S, N, B = ParamType.STRING, ParamType.INT, ParamType.BOOLEAN  # noqa: N806
    for proc in (
        Procedure(
            "rescale",
            (Param("table", S, True), Param("bucket_num", N), Param("partitions", S), Param("where", S)),
            _BOOL,
            _rescale,
            "Rewrite the table into bucket_num buckets in one overwrite commit.",
        ),
        Procedure(
            "copy",
            (Param("source_table", S, True), Param("target_table", S, True), Param("where", S)),
            _BOOL,
            _copy,
            "Copy a table's rows at its latest snapshot into target_table (created like the source "
            "when missing; its copied partitions are overwritten).",
        ),
        Procedure(
            "migrate_table",
            (
                Param("source_type", S, True),
                Param("table", S, True),
                Param("options", S),
                Param("delete_origin", B),
                Param("target_table", S),
                Param("options_map", S),
                Param("parallelism", N),
            ),
            _BOOL,
            _migrate_table,
            "Migrate a Spark Parquet table into a dyntable table (in place, or into target_table); the "
            "origin is dropped only after the new table is committed.",
        ),
        Procedure(
            "migrate_database",
            (
                Param("source_type", S, True),
                Param("database", S, True),
                Param("options", S),
                Param("options_map", S),
                Param("parallelism", N),
            ),
            pa.schema([pa.field("result", pa.string())]),
            _migrate_database,
            "Migrate every Spark Parquet table of a database in place (each all or nothing).",
        ),
        Procedure(
            "repair_earliest_snapshot",
            (Param("table", S, True), Param("snapshot_id", ParamType.LONG, True)),
            _EARLIEST,
            _repair_earliest_snapshot,
            "Make snapshot_id, the first snapshot after a gap in the history, the earliest one readers see.",
        ),
        Procedure(
            "rewrite_file_index",
            (Param("table", S, True), Param("where", S), Param("dry_run", B, default=False)),
            _REWRITE,
            _rewrite_file_index,
            "Build the data-file indexes the table's file-index.* options configure for its existing files "
            "(only the partitions 'where' selects, when given), in one COMPACT snapshot.",
        ),
        Procedure(
            "repair",
            (Param("database_or_table", S),),
            _BOOL,
            _repair,
            "Paimon's metastore repair: not needed by dyntable's file-system catalog (refused).",
        ),
    ):
        register(proc, replace=True)
    for name, feature in UNSUPPORTED.items():
        register(
            Procedure(
                name,
                (),
                _BOOL,
                _unsupported,
                f"Not supported by dyntable: needs {feature}.",
                unsupported=unsupported_message(name),
            ),
            replace=True,
        )
