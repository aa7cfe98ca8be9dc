"""One MERGE INTO as a single joined Spark query (``MergePlan``): the target view joined with the
source, the first WHEN clause that applies to each pair, each clause's values, and the checks
Paimon's and Spark's rules need (one source row per target row, keys unchanged). ``dml`` writes
its outcome copy-on-write or as key changes; ``dml_deletion_vectors`` as deletion vectors.

``UPDATE SET *`` / ``INSERT *`` take each target column from the source column of its name
(ignoring case unless ``spark.sql.caseSensitive``). With ``write.merge-schema`` (Paimon's
"column alignment" for ``MERGE INTO *``): the source's extra columns and struct fields have been
added to the target (``merge_evolution``; the write's commit publishes that version), a target
column or struct field the source lacks keeps its value under ``UPDATE SET *`` and gets its
default (or NULL) under ``INSERT *``, and struct fields are matched by name. Without it a
target column the source lacks is an error and the source's extra columns are ignored."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from engine import ROWKIND, Table
from engine.types import DataType, TypeRoot
from sqlext.execute.assignments import (
    Assigned,
    is_default,
    key_change_check,
    key_change_error,
    resolve_assignments,
)
from sqlext.execute.common import paimon_to_spark_ddl
from sqlext.execute.dml_common import HELPER, analysis_error, column_names
from sqlext.execute.planning import Column as QueryColumn
from sqlext.execute.table_options import computed_columns
from sqlext.execute.write_schema import case_sensitive, evolved_for, with_options, write_options
from sqlext.execute.writes import spark_defaults as column_defaults
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession

_ACTIONS = {ast.MergeUpdate: "update", ast.MergeDelete: "delete", ast.MergeInsert: "insert"}


def source_sql(n: ast.Merge) -> str:
    """The MERGE's source as a FROM item (a table name, or its query as a subquery)."""
    return str(n.source) if isinstance(n.source, ast.TableName) else f"({n.source.text}) AS {HELPER}src"


def merge_evolution(s: SqlSession, table: Table, n: ast.Merge, stmt: Statement) -> tuple[Table, bool]:
    """The table a MERGE writes, and whether ``write.merge-schema`` is on for it: with it and an
    ``UPDATE SET *`` / ``INSERT *`` clause, the table at the schema that takes the source's columns
    (not yet published: the write's commit publishes it); else ``table`` itself."""
    target = with_options(table, write_options(s.context, table, {}))
    if not target.core_options.write_merge_schema:
        return table, False
    stars = any(isinstance(c.action, (ast.MergeUpdate, ast.MergeInsert)) and c.action.all_columns
                for c in n.clauses)
    if not stars:
        return table, True
    source = s.context.frame(f"SELECT * FROM {source_sql(n)}", stmt)
    return evolved_for(s.context, target, source.columns, stmt), True
_T, _S, _RID = f"{HELPER}t", f"{HELPER}s", f"{HELPER}rid"
CLAUSE_COLUMN = f"{HELPER}clause"  # the number of the clause a joined row takes


class MergePlan:
    """One MERGE as a single joined Spark query plus the column expressions of its outcome.

    The joined frame has, per (target row, source row) pair: the target's original columns
    (``__dyn_t<i>``), presence markers of both sides, a target row id, and ``__dyn_clause``: the index
    of the first WHEN clause that applies (SQL standard order), or -1. Each clause's values are
    computed in the same query (``__dyn_v<j>_<i>``), so the user's fragments are evaluated once.
    """

    def __init__(self, s: SqlSession, table: Table, n: ast.Merge, stmt: Statement, view: str, *,
                 merge_schema: bool = False) -> None:
        self.s, self.table, self.n, self.stmt, self.view = s, table, n, stmt, view
        self.merge_schema = merge_schema
        self.columns = column_names(table)
        # The target as the view reads it: before a merge-schema evolution the write will publish.
        stored = table.schemas.latest() if table.store.pending_schema is not None else None
        self.stored = {f.name: f.type for f in (stored or table.schema).fields}
        self.target_alias = n.target_alias or n.target.table
        if isinstance(n.source, ast.TableName):
            self.source_alias = n.source_alias or n.source.table
            self.source_sql = source_sql(n)
            self.source_from = f"{self.source_sql} AS {quoted(self.source_alias)}"
        else:
            self.source_alias = n.source_alias or f"{HELPER}source"
            self.source_sql = source_sql(n)
            self.source_from = f"({n.source.text}) AS {quoted(self.source_alias)}"
        self._src_cols: tuple[QueryColumn, ...] | None = None
        self.kinds = [c.match for c in n.clauses]
        self.actions = [_ACTIONS[type(c.action)] for c in n.clauses]
        self.key_checks: dict[int, tuple[str, Assigned]] = {}
        self.carry: tuple[str, ...] = ()  # more target columns the joined frame keeps (DV row positions)
        self.values = [self._clause_values(j, c) for j, c in enumerate(n.clauses)]

    def ids(self, *actions: str) -> list[int]:
        return [j for j, act in enumerate(self.actions) if act in actions]

    def target_column(self, name: str) -> str:
        return f"{HELPER}t{self.columns.index(name)}"

    # -- clause values (checked before anything runs) ------------------------------------------------
    def _source_columns(self) -> tuple[QueryColumn, ...]:
        if self._src_cols is None:
            self._src_cols = self.s.context.frame(f"SELECT * FROM {self.source_sql}", self.stmt).columns
        return self._src_cols

    def _from_source(self, skip: tuple[str, ...], update: bool) -> dict[str, str]:
        """``UPDATE SET *`` / ``INSERT *``: each written target column from the source column of its
        name (see the module docstring for ``write.merge-schema``)."""
        sensitive = case_sensitive(self.s.context)
        src = {(c.name if sensitive else c.name.lower()): c for c in self._source_columns()}
        computed = computed_columns(dict(self.table.schema.options))
        defaults = column_defaults(self.table)
        types = {f.name: f.type for f in self.table.schema.fields}
        out = {}
        for col in self.columns:
            if col in computed or col in skip:
                continue
            found = src.get(col if sensitive else col.lower())
            if found is None:
                if self.merge_schema:  # UPDATE keeps the current value; INSERT writes the default
                    if not update:
                        out[col] = defaults.get(col, "NULL")
                    continue
                raise analysis_error(
                    self.stmt,
                    f"MERGE ... * needs a source column '{col}' (the source has "
                    f"{[c.name for c in self._source_columns()]}; 'write.merge-schema' = 'true' lets it "
                    "lack target columns)",
                    "42703",
                )
            value = f"{quoted(self.source_alias)}.{quoted(found.name)}"
            if found.dtype is not None:
                keep = update and col in self.stored  # UPDATE: a field the source lacks keeps its value
                current = f"{quoted(self.target_alias)}.{quoted(col)}" if keep else None
                value = self._by_name(value, found.dtype, types[col], current, self.stored.get(col), col)
            out[col] = value
        return out

    def _by_name(self, value: str, source: DataType, target: DataType, current: str | None,
                 stored: DataType | None, path: str) -> str:
        """``value`` (of type ``source``) as a struct of ``target``'s fields in ``target``'s order,
        fields matched by name at every depth (Paimon's rule; a cast would match them by position).
        With merge-schema a field the source lacks keeps ``current``'s (the target row's value, where
        ``stored``, its type before the write, has the field) or is NULL; without, it is an error,
        as is a source field the target lacks. Other types are left to the write's cast."""
        if source.root is not TypeRoot.ROW or target.root is not TypeRoot.ROW:
            return value
        if _shape(source) == _shape(target):
            return value  # the same fields in the same order: the write's cast is right
        sensitive = case_sensitive(self.s.context)

        def same(a: str, b: str) -> bool:
            return a == b or (not sensitive and a.lower() == b.lower())

        extra = [g.name for g in source.fields if not any(same(g.name, f.name) for f in target.fields)]
        if extra:  # merge-schema added them to the target; without it they would be lost
            raise analysis_error(self.stmt, f"MERGE ... *: field(s) {[f'{path}.{e}' for e in extra]} of the "
                                 "source are not in the target ('write.merge-schema' = 'true' adds them)",
                                 "42703")
        args = []
        for f in target.fields:
            match = next((g for g in source.fields if same(g.name, f.name)), None)
            old = next((g for g in stored.fields if g.name == f.name), None) \
                if stored is not None and stored.root is TypeRoot.ROW else None
            cur = f"{current}.{quoted(f.name)}" if current is not None and old is not None else None
            if match is not None:
                field_value = self._by_name(f"{value}.{quoted(match.name)}", match.type, f.type, cur,
                                            old.type if old else None, f"{path}.{f.name}")
            elif not self.merge_schema:
                raise analysis_error(
                    self.stmt, f"MERGE ... *: field '{path}.{f.name}' of the target is not in the source "
                    "('write.merge-schema' = 'true' keeps or nulls it)", "42703")
            else:
                field_value = cur or f"CAST(NULL AS {paimon_to_spark_ddl(f.type)})"
            args.append(f"'{f.name}', {field_value}")
        return f"CASE WHEN {value} IS NULL THEN NULL ELSE named_struct({', '.join(args)}) END"

    def _clause_values(self, j: int, clause: ast.MergeClause) -> dict[str, str]:
        act, aliases = clause.action, (self.target_alias, self.n.target.table)
        if isinstance(act, ast.MergeDelete):
            return {}
        if isinstance(act, ast.MergeUpdate):
            if act.all_columns:
                return self._from_source(self.table.primary_keys, update=True)
            ta = quoted(self.target_alias)
            resolved = resolve_assignments(self.table, act.assignments, aliases, self.stmt, ta)
            check = key_change_check(resolved, ta)
            if check is not None:
                self.key_checks[j] = (check, resolved)
            return resolved.values
        if act.all_columns:
            return self._from_source((), update=False)
        computed = computed_columns(dict(self.table.schema.options))
        defaults = column_defaults(self.table)
        if act.columns:
            cols = [self._insert_column(c) for c in act.columns]
        else:
            cols = [c for c in self.columns if c not in computed]
        if len(cols) != len(act.values):
            raise analysis_error(
                self.stmt, f"MERGE INSERT lists {len(cols)} column(s) but {len(act.values)} value(s)", "21S01"
            )
        if len(set(cols)) != len(cols):
            raise analysis_error(self.stmt, "MERGE INSERT names a column twice", "42701")
        bad = [c for c in cols if c in computed]
        if bad:
            raise analysis_error(self.stmt, f"column '{bad[0]}' is computed and cannot be inserted", "42000")
        # Columns left out get their declared default; a bare DEFAULT value stands for it too.
        out = {c: v for c, v in defaults.items() if c not in cols}
        for c, v in zip(cols, act.values, strict=True):
            out[c] = defaults.get(c, "NULL") if is_default(v) else v.text
        return out

    def _insert_column(self, name: str) -> str:
        """A column of MERGE's INSERT list (``c``, or qualified by the target: ``t.c``)."""
        parts = [p.strip().strip("`") for p in name.split(".")]
        aliases = {self.target_alias.lower(), self.n.target.table.lower()}
        if len(parts) == 2 and parts[0].lower() in aliases:
            parts = parts[1:]
        match = [f for f in self.columns if len(parts) == 1 and f.lower() == parts[0].lower()]
        if not match:
            raise analysis_error(
                self.stmt, f"MERGE INSERT: '{self.table.name}' has no column '{name}'", "42703"
            )
        return match[0]

    # -- the joined query ----------------------------------------------------------------------------
    def _scoped(self, kind: str) -> tuple[list[str], list[str]]:
        """``(expressions computed inside that side's subquery, outer select items)`` for the
        clauses of ``kind`` evaluated on one side only (NOT MATCHED: source, BY SOURCE: target)."""
        side = quoted(self.source_alias if kind == "not_matched" else self.target_alias)
        inner, outer = [], []
        for j, clause in enumerate(self.n.clauses):
            if clause.match != kind:
                continue
            names = []
            if clause.condition is not None:
                inner.append(f"({clause.condition.text}) AS {HELPER}c{j}")
                names.append(f"{HELPER}c{j}")
            for col, expr in self.values[j].items():
                inner.append(f"({expr}) AS {HELPER}v{j}_{self.columns.index(col)}")
                names.append(f"{HELPER}v{j}_{self.columns.index(col)}")
            if j in self.key_checks:
                inner.append(f"({self.key_checks[j][0]}) AS {HELPER}k{j}")
                names.append(f"{HELPER}k{j}")
            outer += [f"{side}.{n} AS {n}" for n in names]
        return inner, outer

    def joined_frame(self) -> DataFrame:
        ta, sa = quoted(self.target_alias), quoted(self.source_alias)
        need_source_only = "not_matched" in self.kinds
        need_target_only = "not_matched_by_source" in self.kinds or not self.table.primary_keys
        join = {
            (True, True): "FULL OUTER",
            (True, False): "RIGHT OUTER",
            (False, True): "LEFT OUTER",
            (False, False): "INNER",
        }[(need_source_only, need_target_only)]
        t_inner, t_outer = self._scoped("not_matched_by_source")
        s_inner, s_outer = self._scoped("not_matched")
        types = {f.name: f.type for f in self.table.schema.fields}  # a column the view lacks is new: NULL
        select = [
            # a struct the write evolves: the target's value in the new shape (new fields NULL)
            f"{self._by_name(f'{ta}.{quoted(c)}', self.stored[c], types[c], None, None, c)} AS {HELPER}t{i}"
            if c in self.stored
            else f"CAST(NULL AS {paimon_to_spark_ddl(types[c])}) AS {HELPER}t{i}"
            for i, c in enumerate(self.columns)
        ]
        select += [f"{ta}.{_T} AS {_T}", f"{ta}.{_RID} AS {_RID}", f"{sa}.{_S} AS {_S}", *t_outer, *s_outer]
        select += [f"{ta}.{quoted(c)} AS {quoted(c)}" for c in self.carry]
        for j, clause in enumerate(self.n.clauses):
            if clause.match != "matched":
                continue
            if clause.condition is not None:
                select.append(f"({clause.condition.text}) AS {HELPER}c{j}")
            for col, expr in self.values[j].items():
                select.append(f"({expr}) AS {HELPER}v{j}_{self.columns.index(col)}")
            if j in self.key_checks:
                select.append(f"({self.key_checks[j][0]}) AS {HELPER}k{j}")
        sql = (
            f"SELECT {', '.join(select)} "
            f"FROM (SELECT {ta}.*, true AS {_T}, monotonically_increasing_id() AS {_RID}"
            f"{''.join(', ' + e for e in t_inner)} FROM {self.view} AS {ta}) AS {ta} "
            f"{join} JOIN (SELECT {sa}.*, true AS {_S}{''.join(', ' + e for e in s_inner)} "
            f"FROM {self.source_from}) AS {sa} ON {self.n.on.text}"
        )
        df = self.s.frame(sql, self.stmt)
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


def _shape(t: DataType) -> tuple[object, ...]:
    """The struct fields' names at every depth, in order (types aside): what a positional cast needs."""
    if t.root is not TypeRoot.ROW:
        return ()
    return tuple((f.name, _shape(f.type)) for f in t.fields)
