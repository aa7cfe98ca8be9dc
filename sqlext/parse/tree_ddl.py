"""The DDL half of the parse-tree builder: databases, CREATE/DROP TABLE, ALTER TABLE, tags, branches.

Invariants: as :mod:`sqlext.parse.tree_base`; in addition each table clause and column option may be
given at most once, and the column-level and table-level primary keys are declared once in all.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from lark import Token, v_args

from sqlext.parse import ast
from sqlext.parse.tree_base import BuilderBase


@v_args(inline=True)
class DdlBuilder(BuilderBase):
    """Rules of the database and table DDL statements."""

    # ------------------------------------------------------------ databases and session
    def comment_clause(self, text: Token) -> tuple[str, str, Token]:
        return "comment", str(text), text

    def location_clause(self, text: Token) -> tuple[str, str, Token]:
        return "location", str(text), text

    def properties_clause(self, pairs: list[tuple[Token, str]]) -> tuple[str, Any, Token]:
        return "options", pairs, pairs[0][0]

    options_clause = properties_clause

    def create_database(self, if_not_exists: bool | None, parts: list[Token], *clauses: Any) -> ast.Node:
        name, catalog = self._database(parts)
        c = self._once(list(clauses), frozenset({"comment", "location"}))
        return ast.CreateDatabase(
            name, catalog, bool(if_not_exists), c.get("comment"), c.get("location"), c["options"]
        )

    def cascade(self) -> bool:
        return True

    def restrict(self) -> bool:
        return False

    def drop_database(self, if_exists: bool | None, parts: list[Token], cascade: bool | None) -> ast.Node:
        name, catalog = self._database(parts)
        return ast.DropDatabase(name, catalog, bool(if_exists), bool(cascade))

    def use_database(self, parts: list[Token]) -> ast.Node:
        return ast.UseDatabase(*self._database(parts))

    def show_databases(self, like: str | None) -> ast.Node:
        return ast.ShowDatabases(like)

    def tables_in(self, parts: list[Token]) -> list[Token]:
        return parts

    def show_tables(self, parts: list[Token] | None, like: str | None) -> ast.Node:
        if parts is None:
            return ast.ShowTables(None, None, like)
        return ast.ShowTables(*self._database(parts), like=like)

    def show_table_extended(
        self, parts: list[Token] | None, like: str, partition: ast.PartitionSpec | None
    ) -> ast.Node:
        database, catalog = self._database(parts) if parts is not None else (None, None)
        return ast.ShowTableExtended(like, database, catalog, partition)

    def extended(self) -> str:
        return "extended"

    def formatted(self) -> str:
        return "formatted"

    def describe_detail(self, detail: str) -> str:
        return detail

    def describe_database(self, extended: str | None, parts: list[Token]) -> ast.Node:
        name, catalog = self._database(parts)
        return ast.DescribeDatabase(name, catalog, extended is not None)

    # ------------------------------------------------------------ CREATE / DROP TABLE
    @v_args(meta=True, inline=True)
    def not_null(self, meta: Any) -> tuple[str, Any, Any]:
        return "nullable", False, meta

    @v_args(meta=True, inline=True)
    def nullable(self, meta: Any) -> tuple[str, Any, Any]:
        return "nullable", True, meta

    def column_comment(self, text: Token) -> tuple[str, Any, Any]:
        return "comment", str(text), text

    def column_default(self, expr: Token) -> tuple[str, Any, Any]:
        return "default", self._fragment(expr), expr

    @v_args(meta=True, inline=True)
    def column_primary_key(self, meta: Any) -> tuple[str, Any, Any]:
        return "primary_key", True, meta

    @v_args(meta=True, inline=True)
    def not_enforced(self, meta: Any) -> tuple[str, Any, Any]:
        return "not_enforced", True, meta

    def column_constraint(self, name: Token) -> tuple[str, Any, Any]:
        return "constraint", str(name), name

    def _column(
        self, name: Token, type_tok: Token, options: tuple[Any, ...], allowed: dict[str, str]
    ) -> tuple[ast.ColumnDef, bool]:
        seen: dict[str, Any] = {}
        for kind, value, at in options:
            if kind not in allowed:
                raise self._fail(f"{allowed.get(kind, kind)} is not allowed in this column definition", at)
            if kind in seen and kind != "nullable":
                raise self._fail(f"{allowed[kind]} is given twice for column {str(name)!r}", at)
            if kind == "nullable" and "nullable" in seen and seen["nullable"] != value:
                raise self._fail(f"column {str(name)!r} cannot be both NULL and NOT NULL", at)
            if kind == "not_enforced" and "primary_key" not in seen:
                raise self._fail("NOT ENFORCED must follow PRIMARY KEY", at)
            seen[kind] = value
        column = ast.ColumnDef(
            str(name),
            self._fragment(type_tok),
            seen.get("nullable", True),
            seen.get("comment"),
            seen.get("default"),
            name.line,
            name.column,
        )
        return column, "primary_key" in seen

    _CREATE_OPTIONS = {
        "nullable": "NOT NULL",
        "comment": "COMMENT",
        "default": "DEFAULT",
        "primary_key": "PRIMARY KEY",
        "not_enforced": "NOT ENFORCED",
        "constraint": "CONSTRAINT",
    }
    _ADD_OPTIONS = {"nullable": "NOT NULL", "comment": "COMMENT", "default": "DEFAULT"}

    def column_def(self, name: Token, type_tok: Token, *options: Any) -> tuple[str, Any, Token]:
        column, pk = self._column(name, type_tok, options, self._CREATE_OPTIONS)
        return "column", (column, pk), name

    def computed_column(self, name: Token, expr: Token, comment: Token | None) -> tuple[str, Any, Token]:
        comment_text = None if comment is None else str(comment)
        return "column", (ast.ComputedColumn(str(name), self._fragment(expr), comment_text), False), name

    def watermark(self, column: Token, expr: Token) -> tuple[str, Any, Token]:
        return "watermark", ast.Watermark(str(column), self._fragment(expr)), column

    def constraint_name(self, name: Token) -> Token:
        return name

    @v_args(meta=True, inline=True)
    def table_primary_key(
        self, meta: Any, constraint: Token | None, columns: tuple[str, ...], enforced: Any
    ) -> tuple[str, Any, Any]:
        return "primary_key", columns, meta

    def table_elements(self, *elements: tuple[str, Any, Any]) -> list[tuple[str, Any, Any]]:
        return list(elements)

    def partition_column(self, name: Token, type_tok: Token | None, *options: Any) -> tuple[Token, Any]:
        if type_tok is None:
            return name, None
        return name, self._column(name, type_tok, options, self._ADD_OPTIONS)[0]

    @v_args(meta=True, inline=True)
    def partitioned_by(self, meta: Any, *columns: tuple[Token, Any]) -> tuple[str, Any, Any]:
        seen: set[str] = set()
        for name, _ in columns:
            if str(name).lower() in seen:
                raise self._fail(f"column {str(name)!r} is listed twice", name)
            seen.add(str(name).lower())
        typed = [(name, column) for name, column in columns if column is not None]
        if typed and len(typed) != len(columns):
            untyped = next(name for name, column in columns if column is None)
            raise self._fail(
                "PARTITIONED BY either declares every column with its type or names existing columns: "
                f"give {str(untyped)!r} a type, or drop the types", untyped)
        return "partitioned_by", (tuple(str(n) for n, _ in columns), tuple(typed)), meta

    @v_args(meta=True, inline=True)
    def clustered_by(self, meta: Any, columns: tuple[str, ...], buckets: int) -> tuple[str, Any, Any]:
        return "clustered_by", (columns, buckets), meta

    def using_clause(self, name: Token) -> tuple[str, Any, Any]:
        return "using", str(name), name

    _TABLE_CLAUSES = frozenset({"comment", "partitioned_by", "clustered_by", "using", "location"})

    def create_table(
        self, if_not_exists: bool | None, name: ast.TableName, elements: list[Any] | None, *rest: Any
    ) -> ast.Node:
        query = rest[-1]
        c = self._once([r for r in rest[:-1] if r is not None], self._TABLE_CLAUSES)
        columns: list[ast.ColumnDef | ast.ComputedColumn] = []
        keys: list[tuple[tuple[str, ...], Any]] = []
        watermark = None
        for kind, value, at in elements or []:
            if kind == "column":
                column, pk = value
                columns.append(column)
                if pk:
                    keys.append(((column.name,), at))
            elif kind == "watermark":
                if watermark is not None:
                    raise self._fail("only one WATERMARK is allowed", at)
                watermark = value
            else:
                keys.append((value, at))
        if len(keys) > 1:
            raise self._fail("the primary key is declared twice: declare it once", keys[1][1])
        primary_key = keys[0][0] if keys else ()
        bucket_key, buckets = c.get("clustered_by", ((), None))
        partition_keys, partition_columns = c.get("partitioned_by", ((), ()))
        for at, column in partition_columns:  # Spark: typed partition columns follow the others
            if any(other.name.lower() == column.name.lower() for other in columns):
                raise self._fail(f"column {column.name!r} is declared twice: in the column list and in "
                                 "PARTITIONED BY; name it without a type in PARTITIONED BY", at)
            columns.append(column)
        return ast.CreateTable(
            name,
            tuple(columns),
            watermark,
            primary_key,
            partition_keys,
            bucket_key,
            buckets,
            c.get("comment"),
            c["options"],
            c.get("using"),
            c.get("location"),
            bool(if_not_exists),
            None if query is None else self._fragment(query),
        )

    def create_table_like(
        self, if_not_exists: bool | None, name: ast.TableName, source: ast.TableName, *clauses: Any
    ) -> ast.Node:
        c = self._once(list(clauses), frozenset())
        return ast.CreateTableLike(name, source, bool(if_not_exists), c["options"])

    def purge(self) -> bool:
        return True

    def drop_table(self, if_exists: bool | None, name: ast.TableName, purge: bool | None) -> ast.Node:
        return ast.DropTable(name, bool(if_exists), bool(purge))

    # ------------------------------------------------------------ views and cached tables
    def or_replace(self) -> bool:
        return True

    def temporary(self) -> str:
        return "temporary"

    def global_temporary(self) -> str:
        return "global"

    def view_column(self, name: Token, comment: Token | None) -> tuple[ast.ViewColumn, Token]:
        return ast.ViewColumn(str(name), None if comment is None else str(comment)), name

    def view_columns(self, *columns: tuple[ast.ViewColumn, Token]) -> tuple[ast.ViewColumn, ...]:
        seen: set[str] = set()
        for column, at in columns:
            if column.name.lower() in seen:
                raise self._fail(f"column {column.name!r} is listed twice", at)
            seen.add(column.name.lower())
        return tuple(column for column, _ in columns)

    def create_view(
        self,
        replace: bool | None,
        scope: str | None,
        if_not_exists: bool | None,
        name: ast.TableName,
        columns: tuple[ast.ViewColumn, ...] | None,
        *rest: Any,
    ) -> ast.Node:
        query = rest[-1]
        c = self._once([r for r in rest[:-1] if r is not None], frozenset({"comment"}))
        if replace and if_not_exists:
            raise self._fail("CREATE OR REPLACE VIEW cannot have IF NOT EXISTS: keep one of them", query)
        return ast.CreateView(
            name,
            self._fragment(query),
            temporary=scope is not None,
            global_temporary=scope == "global",
            replace=bool(replace),
            if_not_exists=bool(if_not_exists),
            columns=tuple(columns or ()),
            comment=c.get("comment"),
            properties=c["options"],
        )

    def drop_view(self, if_exists: bool | None, name: ast.TableName) -> ast.Node:
        return ast.DropView(name, bool(if_exists))

    def show_views(self, parts: list[Token] | None, like: str | None) -> ast.Node:
        if parts is None:
            return ast.ShowViews(None, None, like)
        return ast.ShowViews(*self._database(parts), like=like)

    def lazy(self) -> bool:
        return True

    def cache_options(self, pairs: list[tuple[Token, str]]) -> dict[str, str]:
        return {str(k): v for k, v in pairs}

    def cache_query(self, query: Token) -> ast.SqlFragment:
        return self._fragment(query)

    def cache_table(
        self,
        lazy: bool | None,
        name: ast.TableName,
        options: dict[str, str] | None,
        query: ast.SqlFragment | None,
    ) -> ast.Node:
        return ast.CacheTable(name, query, bool(lazy), options or {})

    def uncache_table(self, if_exists: bool | None, name: ast.TableName) -> ast.Node:
        return ast.UncacheTable(name, bool(if_exists))

    # ------------------------------------------------------------ ALTER TABLE
    def alter_compact(self, table: ast.TableName, partition: ast.PartitionSpec | None) -> ast.Node:
        return ast.CompactTable(table, partition)

    def alter_rescale(
        self, table: ast.TableName, partition: ast.PartitionSpec | None, buckets: int
    ) -> ast.Node:
        return ast.RescaleBuckets(table, buckets, partition)

    def alter_set_options(self, table: ast.TableName, pairs: list[tuple[Token, str]]) -> ast.Node:
        return ast.SetTableOptions(table, {str(k): v for k, v in pairs})

    def alter_reset_options(
        self, table: ast.TableName, if_exists: bool | None, keys: tuple[str, ...]
    ) -> ast.Node:
        return ast.ResetTableOptions(table, keys, bool(if_exists))

    def first(self) -> tuple[str, Any, Any]:
        return "first", True, None

    def after(self, column: Token) -> tuple[str, Any, Any]:
        return "after", str(column), column

    @staticmethod
    def _path(parts: list[Token]) -> ast.ColumnPath:
        """A column's name, or a nested field's path (``v.f1`` → ``('v', 'f1')``)."""
        return str(parts[0]) if len(parts) == 1 else tuple(str(p) for p in parts)

    def added_column(self, parts: list[Token], type_tok: Token, *rest: Any) -> ast.AddedColumn:
        position = rest[-1]
        column, _ = self._column(parts[-1], type_tok, rest[:-1], self._ADD_OPTIONS)
        parents = tuple(str(p) for p in parts[:-1])
        if position is None:
            return ast.AddedColumn(column, parents=parents)
        return ast.AddedColumn(
            column, first=position[0] == "first", after=position[1] if position[0] == "after" else None,
            parents=parents,
        )

    def alter_add_columns(self, table: ast.TableName, *columns: ast.AddedColumn) -> ast.Node:
        return ast.AddColumns(table, columns)

    def alter_drop_columns(
        self, table: ast.TableName, if_exists: bool | None, *names: list[Token]
    ) -> ast.Node:
        columns = tuple(self._path(n) for n in names)
        if len(set(columns)) != len(columns):
            raise self._fail("DROP COLUMNS names a column twice", names[0][0])
        return ast.DropColumns(table, columns, bool(if_exists))

    def alter_rename_column(self, table: ast.TableName, old: list[Token], new: Token) -> ast.Node:
        return ast.RenameColumn(table, self._path(old), str(new))

    def change_type(self, type_tok: Token) -> tuple[str, Any, Any]:
        return "type", self._fragment(type_tok), type_tok

    def change_comment(self, text: Token) -> tuple[str, Any, Any]:
        return "comment", str(text), text

    @v_args(meta=True, inline=True)
    def set_not_null(self, meta: Any) -> tuple[str, Any, Any]:
        return "nullable", False, meta

    @v_args(meta=True, inline=True)
    def drop_not_null(self, meta: Any) -> tuple[str, Any, Any]:
        return "nullable", True, meta

    def set_default(self, expr: Token) -> tuple[str, Any, Any]:
        return "default", self._fragment(expr), expr

    @v_args(meta=True, inline=True)
    def drop_default(self, meta: Any) -> tuple[str, Any, Any]:
        return "default", None, meta

    def column_change(self, change: tuple[str, Any, Any]) -> tuple[str, Any, Any]:
        return change

    def alter_column(
        self, table: ast.TableName, parts: list[Token], *changes: tuple[str, Any, Any]
    ) -> ast.Node:
        seen: dict[str, Any] = {}
        column = self._path(parts)
        for kind, value, at in changes:
            if kind in seen or (kind in ("first", "after") and ("first" in seen or "after" in seen)):
                raise self._fail(
                    f"column {'.'.join(p for p in (column if isinstance(column, tuple) else (column,)))!r} "
                    "is changed twice in one statement: keep one", at or parts[0]
                )
            seen[kind] = value
        return ast.AlterColumn(
            table,
            column,
            seen.get("type"),
            seen.get("comment"),
            seen.get("nullable"),
            bool(seen.get("first")),
            seen.get("after"),
            seen.get("default"),
            "default" in seen and seen["default"] is None,
        )

    def alter_change_column(
        self, table: ast.TableName, parts: list[Token], new: Token, type_tok: Token, *rest: Any
    ) -> ast.Node:
        if str(new).lower() != str(parts[-1]).lower():
            raise self._fail(
                f"CHANGE COLUMN cannot rename '{parts[-1]}' to '{new}' (as in Spark): use ALTER TABLE ... "
                "RENAME COLUMN", new
            )
        added = self.added_column(parts, type_tok, *rest)
        c = added.column
        nullable = None if c.nullable else False
        path = self._path(parts)
        return ast.AlterColumn(table, path, c.type, c.comment, nullable, added.first, added.after)

    def alter_modify_column(self, table: ast.TableName, added: ast.AddedColumn) -> ast.Node:
        c = added.column
        column = c.name if not added.parents else (*added.parents, c.name)
        return ast.AlterColumn(
            table, column, c.type, c.comment, None if c.nullable else False, added.first, added.after
        )

    def alter_rename_table(self, table: ast.TableName, new_name: ast.TableName) -> ast.Node:
        return ast.RenameTable(table, new_name)

    def alter_add_primary_key(
        self, table: ast.TableName, constraint: Token | None, columns: tuple[str, ...], enforced: Any
    ) -> ast.Node:
        return ast.AddPrimaryKey(table, columns)

    def alter_drop_partitions(self, table: ast.TableName, if_exists: bool | None, *rest: Any) -> ast.Node:
        *specs, purge = rest
        return ast.DropPartitions(table, tuple(specs), bool(if_exists), bool(purge))

    # ------------------------------------------------------------ tags and branches
    def create(self) -> ast.TagMode:
        return "create"

    def replace(self) -> ast.TagMode:
        return "replace"

    def create_or_replace(self) -> ast.TagMode:
        return "create_or_replace"

    def as_of_version(self, version: int) -> tuple[str, int]:
        return "version", version

    def days(self) -> str:
        return "days"

    def hours(self) -> str:
        return "hours"

    def minutes(self) -> str:
        return "minutes"

    def retain(self, amount: int, unit: str) -> timedelta:
        return timedelta(**{unit: amount})

    def alter_create_tag(
        self,
        table: ast.TableName,
        mode: ast.TagMode,
        if_not_exists: bool | None,
        tag: Token,
        version: tuple[str, int] | None,
        retain: timedelta | None,
    ) -> ast.Node:
        if if_not_exists and mode != "create":
            raise self._fail("IF NOT EXISTS only goes with CREATE TAG", tag)
        return ast.CreateTag(
            table,
            str(tag),
            mode,
            bool(if_not_exists),
            None if version is None else version[1],
            retain,
        )

    def alter_drop_tag(self, table: ast.TableName, if_exists: bool | None, tag: Token) -> ast.Node:
        tags = tuple(t.strip() for t in str(tag).split(","))
        if not all(tags):
            raise self._fail(f"tag list {str(tag)!r} has an empty name", tag)
        return ast.DropTag(table, tags, bool(if_exists))

    def alter_rename_tag(self, table: ast.TableName, old: Token, new: Token) -> ast.Node:
        return ast.RenameTag(table, str(old), str(new))

    def from_tag(self, tag: Token) -> tuple[str, str]:
        return "tag", str(tag)

    def branch_source(self, source: tuple[str, Any]) -> tuple[str, Any]:
        return source

    def alter_create_branch(
        self, table: ast.TableName, if_not_exists: bool | None, branch: Token, source: tuple[str, Any] | None
    ) -> ast.Node:
        kind, value = source or ("", None)
        return ast.CreateBranch(
            table,
            str(branch),
            bool(if_not_exists),
            value if kind == "tag" else None,
            value if kind == "version" else None,
        )

    def alter_drop_branch(self, table: ast.TableName, if_exists: bool | None, branch: Token) -> ast.Node:
        return ast.DropBranch(table, str(branch), bool(if_exists))

    def show_tags(self, table: ast.TableName) -> ast.Node:
        return ast.ShowTags(table)

    def show_branches(self, table: ast.TableName) -> ast.Node:
        return ast.ShowBranches(table)
