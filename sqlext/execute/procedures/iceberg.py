"""CALL procedure for Iceberg-compatible metadata: ``rebuild_iceberg_metadata``.

One job: bind ``CALL sys.rebuild_iceberg_metadata(table => 'db.t')`` to the engine's rebuild
(``Table.maintenance.rebuild_iceberg_metadata``), which publishes the table's Iceberg metadata
(``metadata.iceberg.storage``) afresh from its latest snapshot. Paimon has no such procedure (its
metadata appears with the next commit); dyntable's next commit would do the same, and this makes it
happen without one, or repairs metadata that was lost. Answers the version published, or NULL when
the table publishes none (the option unset, or no snapshot yet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sqlext.execute.procedures.plans import EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument

if TYPE_CHECKING:
    from sqlext.execute.planning import PlannerContext

_VERSION = pa.schema([pa.field("metadata_version", pa.int64())])


def _rebuild(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])

    def rebuild() -> pa.Table:
        version = table.maintenance.rebuild_iceberg_metadata()
        return pa.table({"metadata_version": [version]}, schema=_VERSION)

    return EngineWork(table, rebuild)


def register_iceberg_procedures() -> None:
    register(
        Procedure(
            "rebuild_iceberg_metadata",
            (Param("table", ParamType.STRING, True),),
            _VERSION,
            _rebuild,
            "Publish the table's Iceberg metadata (metadata.iceberg.storage) afresh from its latest "
            "snapshot.",
        ),
        replace=True,
    )
