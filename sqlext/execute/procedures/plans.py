"""What a CALL procedure plans: the typed work the runner carries out for it.

A procedure is a planner over the narrow context (``planning.PlannerContext``):
``function(ctx, values) -> ProcedurePlan``. It names its tables, checks its arguments and says
what is to happen; it changes nothing and starts no Spark job. The runner's side
(``sqlext.execute.procedure_jobs``) carries the plan out and answers with its result table, cast
to the procedure's output schema.

* ``Answer``: the result is known once planned (read-only procedures);
* ``EngineWork``: metadata work through the engine alone (tags, branches, snapshots, consumers,
  cleanup): no Spark, so the runner only calls it;
* ``PartitionsWhere``: a ``where`` argument's partitions, found by the SQL engine over the table's
  small partition list, then the rest of the plan from them;
* ``Compactions``: compactions run as Spark jobs (one task per bucket);
* ``RescaleTable``, ``CopyTable``, ``MigrateTable``, ``MigrateDatabase``: rewrites and copies of
  whole tables, read and written by Spark through the one write path (``writes.write_frame``).

The callables a plan carries (``run``, ``then``, ``answer``, ``migrate``) are the planner's: they
use the engine and the context, never the session or Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa

from engine import CommitResult, Identifier, Table
from sqlext.execute.planning import CreateTable, Rescale


@dataclass(frozen=True)
class Answer:
    """The procedure's result, known once planned (it changes nothing)."""

    table: pa.Table


@dataclass(frozen=True)
class EngineWork:
    """Metadata work on ``table`` through the engine alone; ``run`` does it and returns the result
    table (it may read a time argument: a bad one is the argument's error, 22023)."""

    table: Table | None
    run: Callable[[], pa.Table]


@dataclass(frozen=True)
class PartitionsWhere:
    """First the live partitions of ``table`` for which ``where`` (SQL over its partition columns)
    is true, evaluated by the SQL engine (its whole expression language; a reference to another
    column is the argument's error); then the plan ``then`` makes from their specs."""

    table: Table
    where: str
    then: Callable[[list[dict[str, Any]]], ProcedurePlan]


@dataclass(frozen=True)
class Compaction:
    """One table's compaction: full or minor, of ``partitions`` (typed specs; None: all), sorted by
    ``order_strategy`` over ``order_by`` when given."""

    table: Table
    full: bool = True
    partitions: tuple[Mapping[str, Any], ...] | None = None
    order_strategy: str | None = None
    order_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Compactions:
    """Run ``jobs`` one after the other, each one Spark job and one commit. ``answer`` makes the
    result table from their commits; with ``keep_going`` a failing job is logged and its result is
    None (Paimon's ``compact_database`` counts it and goes on), else its error is the call's."""

    jobs: tuple[Compaction, ...]
    answer: Callable[[Sequence[CommitResult | None]], pa.Table]
    keep_going: bool = False


@dataclass(frozen=True)
class RescaleTable:
    """``job`` (the rewrite ALTER TABLE … CLUSTERED INTO n BUCKETS plans) recorded in ``table``'s
    maintenance log as ``rescale``, with the bucket counts before and after."""

    table: Table
    job: Rescale


@dataclass(frozen=True)
class CopyTable:
    """``source``'s rows at ``snapshot`` (None: it has none, nothing to copy) into ``target``, or
    into the table ``create`` makes like the source (created even when there is nothing to copy).
    With ``where`` (SQL over the rows) only the rows it selects, overwriting the partitions they
    fill; without, the whole target is overwritten."""

    source: Table
    snapshot: int | None
    target: Table | None
    create: CreateTable | None
    where: str | None


@dataclass(frozen=True)
class MigrateTable:
    """The SQL engine's table ``origin`` (it must be stored as Parquet, which only the engine can
    tell) copied into a new managed table ``staging`` with ``options`` and the origin's partition
    columns; only then is the origin dropped (``delete_origin``) and, for an in-place migration,
    ``staging`` renamed to ``rename_to``. A failed copy drops ``staging`` and leaves the origin."""

    origin: str
    staging: Identifier
    rename_to: Identifier | None
    options: Mapping[str, str]
    delete_origin: bool


@dataclass(frozen=True)
class MigrateDatabase:
    """Every table of the SQL engine's ``database`` (not temporary, not already managed), migrated
    in place one by one: ``migrate`` plans one by its name (``db.t``); a failing table is counted and
    left as it was. ``answer(ok, failed)`` is the result table."""

    database: str
    migrate: Callable[[str], MigrateTable]
    answer: Callable[[int, int], pa.Table]


ProcedurePlan: TypeAlias = (
    Answer | EngineWork | PartitionsWhere | Compactions | RescaleTable | CopyTable | MigrateTable
    | MigrateDatabase
)
