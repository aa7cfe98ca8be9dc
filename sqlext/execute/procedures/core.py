"""The built-in CALL procedures that are not about tags, branches or maintenance: ``compact``,
``reset_consumer`` and ``list_procedures``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sqlext.errors import ProcedureArgumentError
from sqlext.execute.partitions import live_partitions
from sqlext.execute.procedures.plans import (
    Answer,
    Compaction,
    Compactions,
    EngineWork,
    PartitionsWhere,
    ProcedurePlan,
)
from sqlext.execute.procedures.registry import (
    REGISTRY,
    Param,
    ParamType,
    Procedure,
    parse_partitions,
    register,
    table_argument,
)

if TYPE_CHECKING:
    from engine import CommitResult
    from sqlext.execute.planning import PlannerContext

_COMPACT = pa.schema([("result", pa.bool_()), ("snapshot_id", pa.int64()), ("partitions", pa.int32())])


def _compact(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    # Paimon's default: full, but minor on a table with incremental clustering (cluster what is new).
    clustering = table.options.get("clustering.incremental", "").strip().lower() == "true"
    strategy = (args["compact_strategy"] or ("minor" if clustering else "full")).strip().lower()
    if strategy not in ("full", "minor"):
        raise ProcedureArgumentError(
            f"argument 'compact_strategy' must be 'full' or 'minor', not {strategy!r}"
        )
    order = (args["order_strategy"] or "none").strip().lower() or "none"
    order_by = tuple(c for c in (args["order_by"] or "").split(",") if c.strip())
    if order == "none" and order_by:
        raise ProcedureArgumentError('order_strategy "none" cannot work with order_by columns')
    if args["partitions"] and args["where"]:
        raise ProcedureArgumentError("arguments 'partitions' and 'where' cannot be used together; give one")

    def compact(specs: Sequence[dict[str, Any]] | None) -> ProcedurePlan:
        if specs is not None and not specs:  # a where that selects no partition: nothing to do
            return Answer(pa.table({"result": [True], "snapshot_id": pa.array([None], pa.int64()),
                                    "partitions": pa.array([0], pa.int32())}, schema=_COMPACT))

        def answer(results: Sequence[CommitResult | None]) -> pa.Table:
            done = results[0]
            count = len(specs) if specs is not None else len(live_partitions(table))
            return pa.table({"result": [True],
                             "snapshot_id": pa.array([None if done is None else done.last_snapshot_id],
                                                     pa.int64()),
                             "partitions": pa.array([count], pa.int32())}, schema=_COMPACT)

        job = Compaction(table, full=strategy == "full",
                         partitions=tuple(specs) if specs is not None else None,
                         order_strategy=None if order == "none" else order, order_by=order_by)
        return Compactions((job,), answer)

    if args["partitions"]:
        return compact(parse_partitions(table.schema, args["partitions"]))
    if args["where"]:
        if not table.partition_keys:
            raise ProcedureArgumentError("argument 'where': the table is not partitioned")
        return PartitionsWhere(table, args["where"], compact)
    return compact(None)


def _reset_consumer(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    consumer_id: str = args["consumer_id"]
    next_id: int | None = args["next_snapshot_id"]
    consumers = table.refs.consumers
    if next_id is None:
        def delete() -> pa.Table:
            existed = consumers.get(consumer_id) is not None
            consumers.delete(consumer_id)
            return pa.table({"result": [existed], "next_snapshot_id": pa.array([None], pa.int64())})

        return EngineWork(table, delete)
    earliest, latest = table.snapshot_id_range()
    if earliest is None or latest is None or not earliest <= next_id <= latest + 1:
        window = "the table has no snapshots" if latest is None else f"valid: {earliest}..{latest + 1}"
        raise ProcedureArgumentError(
            f"argument 'next_snapshot_id' = {next_id} is not a snapshot a consumer can resume from ({window})"
        )

    def reset() -> pa.Table:
        consumers.reset(consumer_id, next_id)
        return pa.table({"result": [True], "next_snapshot_id": pa.array([next_id], pa.int64())})

    return EngineWork(table, reset)


def _list_procedures(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    """Read-only: every registered procedure and its signature."""
    procs = [p for p in (REGISTRY.get(n) for n in REGISTRY.names()) if p is not None]
    return Answer(pa.table(
        {"name": [p.name for p in procs], "signature": [p.signature() for p in procs]},
        schema=pa.schema([("name", pa.string()), ("signature", pa.string())]),
    ))


def register_core_procedures() -> None:
    S, L = ParamType.STRING, ParamType.LONG  # noqa: N806
    register(
        Procedure(
            "compact",
            (
                Param("table", S, True),
                Param("partitions", S),
                Param("compact_strategy", S),
                Param("order_strategy", S),
                Param("order_by", S),
                Param("where", S),
            ),
            _COMPACT,
            _compact,
            "Compact the table (full or minor, or sorted by order_strategy / order_by), optionally only "
            "some partitions (partitions or where).",
        ),
        replace=True,
    )
    register(
        Procedure(
            "reset_consumer",
            (
                Param("table", S, True),
                Param("consumer_id", S, True, aliases=("consumerId",)),
                Param("next_snapshot_id", L, aliases=("nextSnapshotId",)),
            ),
            pa.schema([("result", pa.bool_()), ("next_snapshot_id", pa.int64())]),
            _reset_consumer,
            "Move a streaming consumer to a snapshot, or delete it when next_snapshot_id is omitted.",
        ),
        replace=True,
    )
    register(
        Procedure(
            "list_procedures",
            (),
            pa.schema([("name", pa.string()), ("signature", pa.string())]),
            _list_procedures,
            "The registered procedures (read-only).",
        ),
        replace=True,
    )
