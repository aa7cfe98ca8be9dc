"""CALL sys.merge_branch: Paimon's name, arguments and result, over ``engine.ops.merge_branch``.

One job: bind ``merge_branch(table, source_branch, target_branch)`` (Paimon's Spark procedure,
result ``result`` = true) plus dyntable's ``conflict`` policy and ``dry_run`` to the engine's
merge. Append tables merge files as Paimon does; primary-key tables merge by key, and the keys
changed on both branches since the branch base are conflicts: with ``conflict => 'fail'`` (the
default) the call fails listing them and merges nothing; ``'source'`` lets the branch's rows win,
``'target'`` skips them. A dry run merges nothing and answers whether the merge would go through
(false: it would fail on conflicts); its plan, conflicting keys included, is recorded in the
table's maintenance log (``SELECT * FROM t$maintenance_log``), as is every merge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.identifier import MAIN_BRANCH
from sqlext.execute.procedures.plans import EngineWork, ProcedurePlan
from sqlext.execute.procedures.registry import Param, ParamType, Procedure, register, table_argument

if TYPE_CHECKING:
    from sqlext.execute.planning import PlannerContext

_RESULT = pa.schema([("result", pa.bool_())])


def _merge_branch(ctx: PlannerContext, args: dict[str, Any]) -> ProcedurePlan:
    table = table_argument(ctx, args["table"])
    policy = (args["conflict"] or "fail").strip().lower()
    dry_run = bool(args["dry_run"])

    def merge() -> pa.Table:
        done = table.refs.branches.merge(args["source_branch"], args["target_branch"] or MAIN_BRANCH,
                                         conflict=policy, dry_run=dry_run)
        ok = not (dry_run and done.conflict_count and policy == "fail")
        return pa.table({"result": [ok]}, schema=_RESULT)

    return EngineWork(table, merge)


def register_merge_procedures() -> None:
    S, B = ParamType.STRING, ParamType.BOOLEAN  # noqa: N806
    register(Procedure(
        "merge_branch",
        (Param("table", S, True), Param("source_branch", S, True), Param("target_branch", S),
         Param("conflict", S, description="primary-key tables: fail (default), source or target"),
         Param("dry_run", B)),
        _RESULT, _merge_branch,
        "Merge what a branch changed since its base into main (or target_branch): append tables by files, "
        "primary-key tables by key with conflicts reported (conflict => fail | source | target)."),
        replace=True)
