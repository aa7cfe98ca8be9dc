"""One MERGE INTO carried out in Spark (``MergeJob``): the joined query its plan names
(``merge_clauses.MergeClauses.joined_sql``) evaluated, the first WHEN clause that applies to each
(target row, source row) pair chosen (SQL standard order), the checks that need data (one source
row per target row, keys unchanged) and the outcome's rows. ``dml.run_merge`` writes them
copy-on-write or as key changes; ``dml_deletion_vectors`` as deletion vectors."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from engine import ROWKIND
from sqlext.execute.assignments import key_change_error
from sqlext.execute.dml_common import HELPER, analysis_error
from sqlext.execute.merge_clauses import ROW_ID, SOURCE_MARK, TARGET_MARK, MergeClauses
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession

CLAUSE_COLUMN = f"{HELPER}clause"  # the number of the clause a joined row takes
_T, _S, _RID = TARGET_MARK, SOURCE_MARK, ROW_ID


class MergeJob:
    """The Spark side of one MERGE: its joined frame, checks, counts and outcome rows."""

    def __init__(self, s: SqlSession, clauses: MergeClauses, stmt: Statement) -> None:
        self.s, self.clauses, self.stmt = s, clauses, stmt
        self.table, self.columns, self.values = clauses.table, clauses.columns, clauses.values
        self.kinds, self.key_checks = clauses.kinds, clauses.key_checks
        self.n = clauses.n

    def ids(self, *actions: str) -> list[int]:
        return self.clauses.ids(*actions)

    def joined_frame(self, view: str, carry: tuple[str, ...] = ()) -> DataFrame:
        """The joined query over ``view`` (the target), with the clause each row takes."""
        df = self.s.frame(self.clauses.joined_sql(view, carry), self.stmt)
        t, src = F.col(_T).isNotNull(), F.col(_S).isNotNull()
        applies = {"matched": t & src, "not_matched": ~t, "not_matched_by_source": ~src}
        chosen: Column = F.lit(-1)
        for j in reversed(range(len(self.n.clauses))):
            cond = applies[self.kinds[j]]
            if self.n.clauses[j].condition is not None:
                cond = cond & F.coalesce(F.col(f"{HELPER}c{j}"), F.lit(False))
            chosen = F.when(cond, F.lit(j)).otherwise(chosen)
        return df.withColumn(CLAUSE_COLUMN, chosen)

    # -- checks and counts ---------------------------------------------------------------------------
    def check_cardinality(self, joined: DataFrame) -> None:
        """A target row that two source rows would update/delete is an error (SQLSTATE 21000)."""
        matched = [j for j, k in enumerate(self.kinds) if k == "matched"]
        if not matched:
            return
        dup = (
            joined.where(F.col(CLAUSE_COLUMN).isin(matched))
            .groupBy(_RID)
            .count()
            .where(F.col("count") > 1)
            .limit(1)
            .collect()
        )
        if dup:
            raise analysis_error(
                self.stmt,
                f"MERGE: a row of '{self.table.name}' is matched by {dup[0]['count']} source rows; "
                "the ON condition must match each target row with at most one source row "
                "(deduplicate the source)",
                "21000",
            )

    def check_keys(self, joined: DataFrame) -> None:
        """An UPDATE clause that would change a row's key (or partition, on a key table) is an error."""
        if not self.key_checks:
            return
        changing = reduce(
            lambda x, y: x | y,
            [
                (F.col(CLAUSE_COLUMN) == j) & F.coalesce(F.col(f"{HELPER}k{j}"), F.lit(False))
                for j in self.key_checks
            ],
        )
        bad = joined.where(changing).select(CLAUSE_COLUMN).limit(1).collect()
        if bad:
            raise key_change_error(self.table, self.key_checks[bad[0][0]][1], self.stmt)

    def counts(self, joined: DataFrame) -> dict[str, int]:
        per_clause = {r[0]: r[1] for r in joined.groupBy(CLAUSE_COLUMN).count().collect()}
        return {
            act: sum(per_clause.get(j, 0) for j in self.ids(act)) for act in ("update", "delete", "insert")
        }

    # -- outcome -------------------------------------------------------------------------------------
    def project(self, df: DataFrame, *extra: Column) -> DataFrame:
        """The target columns of each row's outcome (original values unless its clause sets them)."""
        clause = F.col(CLAUSE_COLUMN)
        exprs = []
        for i, col in enumerate(self.columns):
            value: Column = F.col(f"{HELPER}t{i}")
            for j, vals in enumerate(self.values):
                if col in vals:
                    value = F.when(clause == j, F.col(f"{HELPER}v{j}_{i}")).otherwise(value)
            exprs.append(value.alias(col))
        return df.select(*exprs, *extra)

    def tracked(self, df: DataFrame, tracking: tuple[str, ...]) -> DataFrame:
        """:meth:`project` of target rows, with their carried ``_ROW_ID`` and ``_SEQUENCE_NUMBER``
        (``tracking``: both, for a row-tracking table, else nothing): a row keeps its id, an
        updated row's sequence number becomes NULL (its commit's snapshot id, as in Paimon)."""
        if not tracking:
            return self.project(df)
        row_id, seq = tracking
        updated = F.col(CLAUSE_COLUMN).isin(self.ids("update"))
        return self.project(df, F.col(row_id),
                            F.when(updated, F.lit(None).cast("bigint")).otherwise(F.col(seq)).alias(seq))

    def changes(self, joined: DataFrame) -> DataFrame:
        """Primary-key table: only the changed rows, each with its row kind."""
        clause = F.col(CLAUSE_COLUMN)
        kind = (
            F.when(clause.isin(self.ids("delete")), F.lit("-D"))
            .when(clause.isin(self.ids("update")), F.lit("+U"))
            .otherwise(F.lit("+I"))
        )
        return self.project(joined.where(clause >= 0), kind.alias(ROWKIND))

    def touched(self, joined: DataFrame) -> DataFrame:
        return joined.where(F.col(CLAUSE_COLUMN).isin(self.ids("update", "delete")))

    def inserted_rows(self, joined: DataFrame) -> DataFrame:
        return self.project(joined.where(F.col(CLAUSE_COLUMN).isin(self.ids("insert"))))

    def target_rows(self, joined: DataFrame) -> DataFrame:
        """Each target row once (the copy its clause applies to, if any), minus the deleted ones."""
        clause = F.col(CLAUSE_COLUMN)
        first = F.row_number().over(Window.partitionBy(_RID).orderBy(clause.desc()))
        rank = f"{HELPER}rn"
        once = joined.where(F.col(_T).isNotNull()).withColumn(rank, first).where(F.col(rank) == 1)
        return once.where(~clause.isin(self.ids("delete")))
