"""CALL procedures for cleanup: ``sys.remove_orphan_files`` and ``sys.expire_partitions``.

One job: bind Paimon's Spark procedure names, parameters and output columns to the engine's
cleanup operations (``engine.ops.orphan_files``, ``engine.ops.expire_partitions``). Engine errors
pass through typed (an unreadable anchor is ``UnsafeToDeleteError`` naming the file; a cutoff
less than an hour ago is ``OrphanCutoffTooRecentError``); argument problems are 22023.

* ``remove_orphan_files(table, older_than, dry_run, parallelism, mode, force)``: ``table`` may be
  ``db.*`` (every table of the database, each cleaned on its own; a failing table does not stop
  the others, its error is raised at the end). Output: Paimon's ``deletedFileCount`` and
  ``deletedFileTotalLenInBytes`` (for a dry run: what would be deleted). ``mode`` is accepted for
  Paimon scripts (``local`` / ``distributed``); both run in this process with ``parallelism``
  threads, because listing and deleting are I/O bound.
* ``expire_partitions(table, expiration_time, timestamp_formatter, timestamp_pattern,
  expire_strategy, max_expires, options, dry_run)`` (``options``: ``'k1=v1,k2=v2'`` table options
  for this run only, e.g. ``partition.expiration-max-num``): one ``expired_partitions`` row per partition
  (``k1=v1, k2=v2``), or the single row ``No expired partitions.``, as Paimon prints.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sqlext.errors import ProcedureArgumentError
from sqlext.execute.procedures.expire import with_options
from sqlext.execute.procedures.plans import EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument

if TYPE_CHECKING:
    from engine import Table
    from sqlext.execute.planning import PlannerContext

log = logging.getLogger(__name__)

_ORPHANS = pa.schema(
    [pa.field("deletedFileCount", pa.int64()), pa.field("deletedFileTotalLenInBytes", pa.int64())]
)
_EXPIRED = pa.schema([pa.field("expired_partitions", pa.string())])
NO_EXPIRED = "No expired partitions."


def _tables(ctx: PlannerContext, text: str) -> list[Table]:
    """The table named by ``text``, or every table of a database for ``db.*``."""
    stripped = text.strip()
    if not stripped.endswith("*"):
        return [table_argument(ctx, stripped)]
    database = stripped[:-1].rstrip(".") or ctx.current_database
    if stripped[:-1] and not stripped[:-1].endswith("."):
        raise ProcedureArgumentError(
            f"argument 'table' = {text!r}: write 'database.*' for every table of a database"
        )
    if not ctx.catalog.database_exists(database):
        raise ProcedureArgumentError(f"argument 'table' = {text!r}: database '{database}' does not exist")
    return [ctx.catalog.get_table(f"{database}.{name}") for name in ctx.catalog.list_tables(database)]


def _remove_orphan_files(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    mode = args["mode"]
    if mode is not None and mode.strip().lower() not in ("local", "distributed"):
        raise ProcedureArgumentError(f"argument 'mode' = {mode!r}: use 'local' or 'distributed'")
    parallelism = args["parallelism"]
    if parallelism is not None and parallelism < 1:
        raise ProcedureArgumentError(f"argument 'parallelism' = {parallelism}: must be at least 1")
    tables = _tables(ctx, args["table"])
    every = args["table"].strip().endswith("*")

    def remove() -> pa.Table:
        count = size = 0
        failures: list[tuple[str, Exception]] = []
        for table in tables:
            try:
                result = table.maintenance.remove_orphan_files(
                    args["older_than"], dry_run=bool(args["dry_run"]), force=bool(args["force"]),
                    parallelism=parallelism,
                )
            except Exception as e:  # noqa: BLE001 - every table gets its turn; the first failure is raised below
                if not every:
                    raise
                log.warning("orphan cleanup of %s failed: %s", table.name, e)
                failures.append((table.name, e))
                continue
            count += result.count
            size += result.bytes
        if failures:
            raise failures[0][1]
        return pa.table({"deletedFileCount": [count], "deletedFileTotalLenInBytes": [size]}, schema=_ORPHANS)

    return EngineWork(tables[0] if len(tables) == 1 and not every else None, remove)


def _expire_partitions(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = with_options(table_argument(ctx, args["table"]), args["options"])

    def expire() -> pa.Table:
        result = table.maintenance.expire_partitions(
            args["expiration_time"],
            timestamp_formatter=args["timestamp_formatter"],
            timestamp_pattern=args["timestamp_pattern"],
            max_expires=args["max_expires"],
            dry_run=bool(args["dry_run"]),
            expire_strategy=args["expire_strategy"],
        )
        rows = result.texts() or [NO_EXPIRED]
        return pa.table({"expired_partitions": rows}, schema=_EXPIRED)

    return EngineWork(table, expire)


def register_cleanup_procedures() -> None:
    S, N, B = ParamType.STRING, ParamType.INT, ParamType.BOOLEAN  # noqa: N806
    T = ParamType.TIME  # noqa: N806
    register(
        Procedure(
            "remove_orphan_files",
            (
                Param("table", S, True),
                Param("older_than", T),
                Param("dry_run", B, default=False),
                Param("parallelism", N),
                Param("mode", S),
                Param("force", B, default=False),
            ),
            _ORPHANS,
            _remove_orphan_files,
            "Delete files no snapshot, tag, branch or changelog references, older than older_than "
            "(default one day ago; less than an hour ago only with force => true). table may be 'db.*'.",
        ),
        replace=True,
    )
    register(
        Procedure(
            "expire_partitions",
            (
                Param("table", S, True),
                Param("expiration_time", T),
                Param("timestamp_formatter", S),
                Param("timestamp_pattern", S),
                Param("expire_strategy", S),
                Param("max_expires", N),
                Param("options", S),
                Param("dry_run", B, default=False),
            ),
            _EXPIRED,
            _expire_partitions,
            "Drop partitions older than expiration_time (e.g. '7 d'; default: the table's "
            "partition.expiration-time; "
            "options 'k=v,...' for this run); "
            "their files go when the snapshots referencing them expire.",
        ),
        replace=True,
    )
