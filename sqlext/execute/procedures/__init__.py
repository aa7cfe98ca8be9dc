"""CALL procedures: the registry (``registry``) and the procedures it serves, registered on import.

Every procedure is a planner over the narrow context that returns a typed plan (``plans``); the
runner's side (``sqlext.execute.procedure_jobs``) carries it out. Nothing here imports Spark or the
session.

``core`` (compact, reset_consumer, list_procedures), ``tags`` (tags and rollback), ``branches``
``expire`` (snapshot expiration, the retention mark), ``cleanup`` (orphan files, partition
expiration), ``iceberg`` (rebuild_iceberg_metadata), ``maintenance`` (Paimon's further
maintenance procedures) and ``tables`` (rescale, copy, migrate_table, and Paimon's procedures
dyntable refuses) each register their procedures here, so importing this package is enough to
resolve every ``CALL``.
"""

from sqlext.execute.partitions import live_partitions
from sqlext.execute.procedures import (
    branches,
    cleanup,
    core,
    expire,
    iceberg,
    maintenance,
    merge,
    tables,
    tags,
)
from sqlext.execute.procedures.registry import (
    REGISTRY,
    Param,
    ParamType,
    Procedure,
    ProcedureRegistry,
    bind_arguments,
    coerce_argument,
    parse_partitions,
    register,
    resolve,
    table_argument,
)

core.register_core_procedures()
tags.register_tag_procedures()
branches.register_branch_procedures()
expire.register_expire_procedures()
cleanup.register_cleanup_procedures()
maintenance.register_maintenance_procedures()
tables.register_table_procedures()
merge.register_merge_procedures()
iceberg.register_iceberg_procedures()

__all__ = [
    "REGISTRY",
    "Param",
    "ParamType",
    "Procedure",
    "ProcedureRegistry",
    "bind_arguments",
    "coerce_argument",
    "live_partitions",
    "parse_partitions",
    "register",
    "resolve",
    "table_argument",
]
