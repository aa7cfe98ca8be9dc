"""The MERGE INTO planner, and what it decides without data (``MergeClauses``): each WHEN clause's
values, the key checks of its assignments, and the text of the one joined query. The runner
evaluates that query once and runs the checks that need data (``merge_plan.MergeJob``: one source
row per target row, keys unchanged) before its one write. Nothing here runs Spark.

``UPDATE SET *`` / ``INSERT *`` take each target column from the source column of its name
(ignoring case unless ``spark.sql.caseSensitive``). With ``write.merge-schema`` (Paimon's
"column alignment" for ``MERGE INTO *``): the source's extra columns and struct fields are added
to the target (``merge_evolution``; the write's commit publishes that version), a target column or
struct field the source lacks keeps its value under ``UPDATE SET *`` and gets its default (or
NULL) under ``INSERT *``, and struct fields are matched by name. Without it a target column the
source lacks is an error and the source's extra columns are ignored. Explicit clauses evolve the
target too (Paimon 2.0): with ``write.merge-schema``, a column an ``UPDATE SET c = …`` or ``INSERT
(…, c) VALUES …`` names that the target lacks is added with the type of the source's column ``c``.

MERGE scoping (Spark's): NOT MATCHED clauses see only the source (unqualified names resolve
there), NOT MATCHED BY SOURCE clauses only the target, MATCHED clauses both.
"""

from __future__ import annotations

from collections.abc import Callable

from engine import Snapshot, Table, metadata_names
from engine.types import DataType, TypeRoot
from sqlext.errors import UnsupportedStatementError
from sqlext.execute.assignments import (
    Assigned,
    is_default,
    key_change_check,
    resolve_assignments,
)
from sqlext.execute.dml_common import HELPER, analysis_error, column_names
from sqlext.execute.planning import Column, MergeInto, Plan, Planner, PlannerContext
from sqlext.execute.row_level import (
    TO_ENGINE,
    changed_columns,
    check_rewritable,
    data_evolution,
    deletes_remove_rows,
    target,
)
from sqlext.execute.table_options import column_defaults, computed_columns
from sqlext.execute.write_schema import case_sensitive, evolved_for, with_options, write_options
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement

_ACTIONS = {ast.MergeUpdate: "update", ast.MergeDelete: "delete", ast.MergeInsert: "insert"}
TARGET_MARK, SOURCE_MARK, ROW_ID = f"{HELPER}t", f"{HELPER}s", f"{HELPER}rid"


def source_sql(n: ast.Merge) -> str:
    """The MERGE's source as a FROM item (a table name, or its query as a subquery)."""
    return str(n.source) if isinstance(n.source, ast.TableName) else f"({n.source.text}) AS {HELPER}src"


def merge_evolution(ctx: PlannerContext, table: Table, n: ast.Merge, stmt: Statement) -> tuple[Table, bool]:
    """The table a MERGE writes, and whether ``write.merge-schema`` is on for it: with it, the table
    at the schema that takes the source's columns (not yet published: the write's commit publishes
    it) — all of them when a clause is ``UPDATE SET *`` / ``INSERT *``, else the source columns an
    explicit clause assigns by a name the target lacks (``UPDATE SET score = s.score``, ``INSERT
    (id, score) VALUES …``: Paimon 2.0's "source-bound" assignment keys, which add that column with
    the source column's type); else ``table`` itself."""
    evolving = with_options(table, write_options(ctx, table, {}))
    if not evolving.core_options.write_merge_schema:
        return table, False
    stars = any(isinstance(c.action, (ast.MergeUpdate, ast.MergeInsert)) and c.action.all_columns
                for c in n.clauses)
    new = _new_column_names(table, n)
    if not stars and not new:
        return table, True
    source = ctx.frame(f"SELECT * FROM {source_sql(n)}", stmt).columns
    if not stars:
        sensitive = case_sensitive(ctx)
        wanted = {c if sensitive else c.lower() for c in new}
        source = tuple(c for c in source if (c.name if sensitive else c.name.lower()) in wanted)
        if not source:
            return table, True  # no source column of those names: resolving the clause names the error
    return evolved_for(ctx, evolving, source, stmt), True


def _new_column_names(table: Table, n: ast.Merge) -> list[str]:
    """The top-level columns the MATCHED / NOT MATCHED clauses assign explicitly (``c`` or
    ``<target>.c``) that the target lacks (names compared ignoring case: dyntable's are unique so)."""
    aliases = {a.lower() for a in (n.target_alias, n.target.table) if a}
    have = {c.lower() for c in table.schema.field_names}
    named: list[str] = []
    for clause in n.clauses:
        if clause.match == "not_matched_by_source":
            continue
        act = clause.action
        if isinstance(act, ast.MergeUpdate) and not act.all_columns:
            named += [a.column for a in act.assignments]
        elif isinstance(act, ast.MergeInsert) and not act.all_columns:
            named += list(act.columns)
    out = []
    for text in named:
        parts = [p.strip().strip("`") for p in text.split(".")]
        if len(parts) == 2 and parts[0].lower() in aliases and parts[0].lower() not in have:
            parts = parts[1:]
        if len(parts) == 1 and parts[0].lower() not in have and parts[0] not in out:
            out.append(parts[0])
    return out


class MergeClauses:
    """One MERGE's clauses resolved against its target and source, checked (unknown, computed or
    twice-named columns, ``*`` columns the source lacks), as SQL text. Built while planning; a
    value afterwards (it keeps nothing of the context)."""

    def __init__(self, ctx: PlannerContext, table: Table, n: ast.Merge, stmt: Statement, *,
                 merge_schema: bool = False) -> None:
        self.table, self.n, self.stmt = table, n, stmt
        self.merge_schema = merge_schema
        self.columns = column_names(table)
        # The target as its read sees it: before a merge-schema evolution the write will publish.
        stored = table.schemas.latest() if table.store.pending_schema is not None else None
        self.stored = {f.name: f.type for f in (stored or table.schema).fields}
        self.target_alias = n.target_alias or n.target.table
        self.source_metadata: tuple[str, ...] = ()
        if isinstance(n.source, ast.TableName):
            self.source_alias = n.source_alias or n.source.table
            self.source_from = f"{source_sql(n)} AS {quoted(self.source_alias)}"
            # Metadata columns of a managed source the statement names (``ON t._ROW_ID =
            # s._ROW_ID``, Paimon's self-merge): selected by name, as a star never shows them.
            if ctx.is_managed(n.source) and n.source.system_table is None:
                text = stmt.text.lower()
                self.source_metadata = tuple(
                    m for m in metadata_names(ctx.table(n.source).schema) if m.lower() in text)
        else:
            self.source_alias = n.source_alias or f"{HELPER}source"
            self.source_from = f"({n.source.text}) AS {quoted(self.source_alias)}"
        self.kinds = [c.match for c in n.clauses]
        self.actions = [_ACTIONS[type(c.action)] for c in n.clauses]
        self.key_checks: dict[int, tuple[str, Assigned]] = {}
        # What resolving needs from the context, only while this is built.
        self._ctx: PlannerContext | None = ctx
        self._cast: Callable[[DataType], str] = ctx.cast_type
        self._sensitive = case_sensitive(ctx)
        self._src_cols: tuple[Column, ...] | None = None
        self._defaults = column_defaults(table, ctx.cast_type)
        self.values = [self._clause_values(j, c) for j, c in enumerate(n.clauses)]
        types = {f.name: f.type for f in table.schema.fields}  # a column the read lacks is new: NULL
        ta = quoted(self.target_alias)
        # The target's original columns; a struct the write evolves in the new shape (new fields NULL).
        self.target_values = [
            self._by_name(f"{ta}.{quoted(c)}", self.stored[c], types[c], None, None, c)
            if c in self.stored else f"CAST(NULL AS {self._cast(types[c])})"
            for c in self.columns
        ]
        self._ctx = None

    def ids(self, *actions: str) -> list[int]:
        return [j for j, act in enumerate(self.actions) if act in actions]

    def target_column(self, name: str) -> str:
        return f"{HELPER}t{self.columns.index(name)}"

    # -- clause values (checked before anything runs) ------------------------------------------------
    def _source_columns(self) -> tuple[Column, ...]:
        if self._src_cols is None:
            assert self._ctx is not None, "the source is read only while the clauses are resolved"
            self._src_cols = self._ctx.frame(f"SELECT * FROM {source_sql(self.n)}", self.stmt).columns
        return self._src_cols

    def _from_source(self, skip: tuple[str, ...], update: bool) -> dict[str, str]:
        """``UPDATE SET *`` / ``INSERT *``: each written target column from the source column of its
        name (see the module docstring for ``write.merge-schema``)."""
        sensitive = self._sensitive
        src = {(c.name if sensitive else c.name.lower()): c for c in self._source_columns()}
        computed = computed_columns(dict(self.table.schema.options))
        types = {f.name: f.type for f in self.table.schema.fields}
        out = {}
        for col in self.columns:
            if col in computed or col in skip:
                continue
            found = src.get(col if sensitive else col.lower())
            if found is None:
                if self.merge_schema:  # UPDATE keeps the current value; INSERT writes the default
                    if not update:
                        out[col] = self._defaults.get(col, "NULL")
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
        sensitive = self._sensitive

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
                field_value = cur or f"CAST(NULL AS {self._cast(f.type)})"
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
            resolved = resolve_assignments(self.table, act.assignments, aliases, self.stmt, ta,
                                           self._defaults)
            check = key_change_check(resolved, ta)
            if check is not None:
                self.key_checks[j] = (check, resolved)
            return resolved.values
        if act.all_columns:
            return self._from_source((), update=False)
        computed = computed_columns(dict(self.table.schema.options))
        defaults = self._defaults
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

    def joined_sql(self, view: str, carry: tuple[str, ...] = ()) -> str:
        """The joined query over ``view`` (the target): per (target row, source row) pair, the
        target's original columns (``__dyn_t<i>``), presence markers of both sides, a target row
        id, the ``carry`` columns of the target, and each clause's condition, values and key check
        (``__dyn_c<j>``, ``__dyn_v<j>_<i>``, ``__dyn_k<j>``), so the user's fragments are
        evaluated once."""
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
        select = [f"{v} AS {HELPER}t{i}" for i, v in enumerate(self.target_values)]
        select += [f"{ta}.{TARGET_MARK} AS {TARGET_MARK}", f"{ta}.{ROW_ID} AS {ROW_ID}",
                   f"{sa}.{SOURCE_MARK} AS {SOURCE_MARK}", *t_outer, *s_outer]
        select += [f"{ta}.{quoted(c)} AS {quoted(c)}" for c in carry]
        for j, clause in enumerate(self.n.clauses):
            if clause.match != "matched":
                continue
            if clause.condition is not None:
                select.append(f"({clause.condition.text}) AS {HELPER}c{j}")
            for col, expr in self.values[j].items():
                select.append(f"({expr}) AS {HELPER}v{j}_{self.columns.index(col)}")
            if j in self.key_checks:
                select.append(f"({self.key_checks[j][0]}) AS {HELPER}k{j}")
        return (
            f"SELECT {', '.join(select)} "
            f"FROM (SELECT {ta}.*, true AS {TARGET_MARK}, monotonically_increasing_id() AS {ROW_ID}"
            f"{''.join(', ' + e for e in t_inner)} FROM {view} AS {ta}) AS {ta} "
            f"{join} JOIN (SELECT {sa}.*, {''.join(f'{sa}.{quoted(m)}, ' for m in self.source_metadata)}"
            f"true AS {SOURCE_MARK}{''.join(', ' + e for e in s_inner)} "
            f"FROM {self.source_from}) AS {sa} ON {self.n.on.text}"
        )


def merge(ctx: PlannerContext, n: ast.Merge, stmt: Statement) -> Plan:
    """MERGE INTO t USING s ON c WHEN ...: the clauses checked and the joined query (``MergeInto``)."""
    table = target(ctx, n.target, stmt)
    if table is None:
        return TO_ENGINE
    check_rewritable(table, "MERGE INTO", stmt)
    table, merge_schema = merge_evolution(ctx, table, n, stmt)
    deletion_vectors = table.new_write_builder().writes_deletion_vectors()
    snapshot: Snapshot | None = table.latest_snapshot()
    clauses = MergeClauses(ctx, table, n, stmt, merge_schema=merge_schema)
    keyed_deletes = table.primary_keys and clauses.ids("delete")
    if not deletion_vectors and keyed_deletes and not deletes_remove_rows(table):
        # The written -D would be dropped (ignore-delete) or refused by the merge engine at read time.
        raise UnsupportedStatementError(
            f"MERGE ... THEN DELETE is not supported on '{table.name}': its options do not let a delete "
            "row remove a key (partial-update needs 'partial-update.remove-record-on-delete' = 'true'; "
            "'ignore-delete' drops deletes); run DELETE FROM instead",
            line=stmt.line,
            column=stmt.column,
        )
    if data_evolution(table):
        return _evolution_merge(table, snapshot, clauses, merge_schema, deletion_vectors, stmt)
    return MergeInto(table, snapshot, clauses, deletion_vectors)


def _evolution_merge(table: Table, snapshot: Snapshot | None, clauses: MergeClauses, merge_schema: bool,
                     deletion_vectors: bool, stmt: Statement) -> Plan:
    """MERGE into a data-evolution table, as Paimon 2.0's ``MergeIntoPaimonDataEvolutionTable``:
    WHEN MATCHED may UPDATE (only the changed columns are written, by row id) or DELETE, WHEN NOT
    MATCHED INSERT, WHEN NOT MATCHED BY SOURCE only DELETE; deletes need deletion vectors."""
    def refuse(what: str) -> UnsupportedStatementError:
        return UnsupportedStatementError(
            f"MERGE INTO '{table.name}': {what} on a data-evolution table ('data-evolution.enabled' = "
            "'true'), as in Paimon", line=stmt.line, column=stmt.column)

    n = clauses.n
    if any(c.match == "not_matched_by_source" and clauses.actions[j] != "delete"
           for j, c in enumerate(n.clauses)):
        raise refuse("WHEN NOT MATCHED BY SOURCE supports only DELETE")
    if clauses.ids("delete") and not deletion_vectors:
        raise refuse("DELETE clauses need 'deletion-vectors.enabled' = 'true'")
    if merge_schema and table.store.pending_schema is not None:
        raise refuse("'write.merge-schema' cannot add columns in the same statement (add them with ALTER "
                     "TABLE first)")
    aliases = (clauses.target_alias, n.target.table)
    assigned: dict[str, str] = {}
    for j in clauses.ids("update"):
        # A column any UPDATE clause changes is written for every updated row (the others keep theirs).
        for c in changed_columns(table, clauses.values[j], aliases, "MERGE INTO", stmt):
            assigned[c] = clauses.values[j][c]
    columns = tuple(c for c in clauses.columns if c in assigned)
    return MergeInto(table, snapshot, clauses, deletion_vectors, data_evolution=True, update_columns=columns)


PLANNERS: dict[type, Planner] = {ast.Merge: merge}


def _shape(t: DataType) -> tuple[object, ...]:
    """The struct fields' names at every depth, in order (types aside): what a positional cast needs."""
    if t.root is not TypeRoot.ROW:
        return ()
    return tuple((f.name, _shape(f.type)) for f in t.fields)
