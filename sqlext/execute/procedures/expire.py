"""CALL procedures for snapshot expiration and the retention mark.

One job: bind ``sys.expire_snapshots`` (Paimon's Spark name, parameters — ``table, retain_max,
retain_min, older_than, max_deletes, options`` — and output, plus ``dry_run`` and ``detail``) and
``sys.retention_mark`` / Databend's ``system$retention_mark([db,] table)`` to
``engine.ops.expire_snapshots`` and ``engine.history.retention_mark``.

``expire_snapshots`` output: Paimon's, one row of one column ``deleted_snapshots_count`` (with
``dry_run => true``: that would be deleted). The files and bytes deleted are in the table's
maintenance log, as for every run. ``detail => true`` (dyntable's) answers dyntable's columns
instead: the first row is the summary (``object`` null): snapshots, files and bytes deleted (or
that would be); a dry run adds one row per object: ``action = 'delete'`` for each snapshot and
file that would go, ``'keep'`` with the ``reason`` for each snapshot and each file of the
expiring snapshots that stays (which snapshot range, tag, branch, consumer or retention mark
holds it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.errors import TimeBoundError
from sqlext.errors import ProcedureArgumentError
from sqlext.execute.procedures.plans import EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument

if TYPE_CHECKING:
    from engine import Table
    from sqlext.execute.planning import PlannerContext

EXPIRE_OUTPUT = pa.schema([pa.field("deleted_snapshots_count", pa.int32(), nullable=False)])
EXPIRE_DETAIL_OUTPUT = pa.schema(
    [
        pa.field("deleted_snapshots_count", pa.int32()),
        pa.field("deleted_files_count", pa.int64()),
        pa.field("deleted_bytes", pa.int64()),
        pa.field("dry_run", pa.bool_()),
        pa.field("action", pa.string()),
        pa.field("object_kind", pa.string()),
        pa.field("object", pa.string()),
        pa.field("bytes", pa.int64()),
        pa.field("reason", pa.string()),
    ]
)
MARK_OUTPUT = pa.schema(
    [
        pa.field("snapshot_id", pa.int64()),
        pa.field("commit_time", pa.timestamp("ms")),
        pa.field("mark_version", pa.int64()),
        pa.field("advanced", pa.bool_(), nullable=False),
    ]
)


def with_options(table: Table, text: str | None) -> Table:
    """Paimon's ``options => 'k1=v1,k2=v2'``: table options for this run only (validated)."""
    if not text:
        return table
    pairs = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ProcedureArgumentError(f"argument 'options' = {text!r}: write 'key=value,key2=value2'")
        pairs[key.strip()] = value.strip()
    try:
        return table.with_options(pairs)
    except ValueError as e:
        raise ProcedureArgumentError(f"argument 'options': {e}") from None


def _expire_snapshots(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = with_options(table_argument(ctx, args["table"]), args["options"])
    return EngineWork(table, lambda: _expire(table, args))


def _expire(table: Table, args: dict[str, Any]) -> pa.Table:
    try:
        report = table.maintenance.expire_snapshots(
            retain_max=args["retain_max"],
            retain_min=args["retain_min"],
            older_than=args["older_than"],
            max_deletes=args["max_deletes"],
            dry_run=bool(args["dry_run"]),
        )
    except TimeBoundError:
        raise  # Procedure.argument_errors reports it as the argument's error
    except ValueError as e:  # InvalidArgumentError: a bad bound
        raise ProcedureArgumentError(str(e)) from None
    if not args["detail"]:
        return pa.table({"deleted_snapshots_count": pa.array([len(report.snapshots)], pa.int32())},
                        schema=EXPIRE_OUTPUT)
    rows: list[tuple[Any, ...]] = [
        (len(report.snapshots), report.count, report.bytes, report.dry_run, None, None, None, None, None)
    ]
    if report.dry_run:
        rows += [(None, None, None, True, "delete", "snapshot", str(s), None, None) for s in report.snapshots]
        rows += [
            (None, None, None, True, "delete", kind.value, path, size, None)
            for path, kind, size in report.files.files
        ]
        rows += [(None, None, None, True, "keep", k.kind, k.name, None, k.reason) for k in report.kept]
    columns = list(zip(*rows, strict=True))
    return pa.table(
        {f.name: pa.array(list(col), f.type) for f, col in zip(EXPIRE_DETAIL_OUTPUT, columns, strict=True)},
        schema=EXPIRE_DETAIL_OUTPUT,
    )


def _retention_mark(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    # Databend: system$retention_mark([database,] table) — two arguments are a database and a table.
    name = args["table"] if args["table_name"] is None else f"{args['table']}.{args['table_name']}"
    table = table_argument(ctx, name)

    def advance() -> pa.Table:
        result = table.maintenance.advance_retention_mark(args["retention"])
        mark = result.mark
        return pa.table(
            {
                "snapshot_id": pa.array([None if mark is None else mark.snapshot_id], pa.int64()),
                "commit_time": pa.array([None if mark is None else mark.commit_time_ms], pa.timestamp("ms")),
                "mark_version": pa.array([None if mark is None else mark.version], pa.int64()),
                "advanced": pa.array([result.advanced], pa.bool_()),
            },
            schema=MARK_OUTPUT,
        )

    return EngineWork(table, advance)


def register_expire_procedures() -> None:
    S, N, B, D = ParamType.STRING, ParamType.INT, ParamType.BOOLEAN, ParamType.DURATION  # noqa: N806
    register(
        Procedure(
            "expire_snapshots",
            (
                Param("table", S, True),
                Param("retain_max", N),
                Param("retain_min", N),
                Param("older_than", ParamType.TIME),
                Param("max_deletes", N),
                Param("options", S),
                Param("dry_run", B, default=False),
                Param("detail", B, default=False,
                      description="dyntable's columns: files, bytes and a dry run's plan object by object"),
            ),
            EXPIRE_OUTPUT,
            _expire_snapshots,
            "Expire old snapshots (snapshot.num-retained.*, snapshot.time-retained or older_than, a time "
            "such as 'yyyy-MM-dd HH:mm:ss' or '7 d', at most max_deletes; options 'k=v,...' for this run) "
            "and the files nothing else needs; dry_run reports only; detail => true answers the files, "
            "bytes and a dry run's plan.",
            output_for=lambda args: EXPIRE_DETAIL_OUTPUT if args.get("detail") else None,
        ),
        replace=True,
    )
    register(
        Procedure(
            "retention_mark",
            (Param("table", S, True), Param("table_name", S), Param("retention", D)),
            MARK_OUTPUT,
            _retention_mark,
            "Move the retention mark to the newest snapshot committed at or before now - retention.time "
            "(never backwards); time travel below the mark is refused. "
            "Databend: system$retention_mark([db,] table).",
        ),
        replace=True,
    )


__all__ = [
    "EXPIRE_DETAIL_OUTPUT", "EXPIRE_OUTPUT", "MARK_OUTPUT", "register_expire_procedures", "with_options",
]
