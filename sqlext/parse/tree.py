"""Turn the Lark parse tree of one statement into its :mod:`sqlext.parse.ast` node.

The builder is one lark ``Transformer`` (one method per grammar rule) split over three modules:
:mod:`sqlext.parse.tree_base` (helpers and shared rules), :mod:`sqlext.parse.tree_ddl` (DDL) and this one
(session statements, writes, describe/show and CALL).

Invariants:
* every rule of ``grammar/dyntable.lark`` that survives into the tree has a method;
* checks the grammar cannot express (a clause given twice, a duplicate option key, NOT ENFORCED
  without PRIMARY KEY, mixed positional and named CALL arguments, bad names or literals) raise a
  :class:`SqlError` located at the offending token, never a Python error.
"""

from __future__ import annotations

from typing import Any

from lark import Token, v_args

from sqlext.errors import ProcedureArgumentError
from sqlext.parse import ast
from sqlext.parse.splitter import quoted_end
from sqlext.parse.tree_base import unquote_string
from sqlext.parse.tree_ddl import DdlBuilder

_BY_NAME = "BY NAME"  # what ``by_name`` hands to ``insert`` in place of a column list


@v_args(inline=True)
class TreeBuilder(DdlBuilder):
    """Lark transformer producing :mod:`sqlext.parse.ast` nodes."""

    # ------------------------------------------------------------ session
    def set_value(self, value: Token | None) -> str:
        return _bare(value) or ""

    def set_option(self, key: Token | None = None, value: str | None = None) -> ast.Node:
        return ast.SetOption(_bare(key), value)

    def reset_option(self, key: Token | None) -> ast.Node:
        return ast.ResetOption(_bare(key))

    def show_jobs(self) -> ast.Node:
        return ast.ShowJobs()

    def stop_job(self, job_id: Token) -> ast.Node:
        return ast.StopJob(str(job_id))

    # ------------------------------------------------------------ writes
    def into(self) -> bool:
        return False

    def overwrite(self) -> bool:
        return True

    def hint_item(self, name: Token, *args: Any) -> list[tuple[Token, str]]:
        if str(name).upper() != "OPTIONS":
            raise self._fail(
                f"unknown hint {str(name)!r}: only OPTIONS('key' = 'value', ...) is supported here", name
            )
        pairs = [a for a in args if a is not None]
        for a in pairs:
            if not isinstance(a, tuple):
                raise self._fail("OPTIONS takes 'key' = 'value' pairs", a if isinstance(a, Token) else name)
        return pairs

    def hint(self, *items: Any) -> dict[str, str]:
        options: dict[str, str] = {}
        for item in items:
            if isinstance(item, list):
                self._merge_options(options, item)
        return options

    def insert(
        self,
        overwrite: bool,
        table: ast.TableName,
        hint: dict[str, str] | None,
        partition: ast.PartitionSpec | None,
        columns: tuple[str, ...] | str | None,
        query: Token,
    ) -> ast.Node:
        by_name = columns == _BY_NAME
        listed = columns if isinstance(columns, tuple) else ()  # None, or BY NAME
        return ast.Insert(
            table, self._fragment(query), overwrite, partition, listed, hint or {}, by_name=by_name
        )

    def by_name(self) -> str:
        return _BY_NAME

    def alias(self, name: Token) -> str:
        return str(name)

    def where(self, expr: Token) -> ast.SqlFragment:
        return self._fragment(expr)

    def delete(self, table: ast.TableName, alias: str | None, where: ast.SqlFragment | None) -> ast.Node:
        return ast.Delete(table, alias, where)

    def assignment(self, column: list[Token], value: Token) -> ast.Assignment:
        return ast.Assignment(".".join(str(c) for c in column), self._fragment(value))

    def update(self, table: ast.TableName, alias: str | None, *rest: Any) -> ast.Node:
        *assignments, where = rest
        return ast.Update(table, tuple(assignments), alias, where)

    def subquery(self, query: Token) -> ast.SqlFragment:
        return self._fragment(query)

    def condition(self, expr: Token) -> ast.SqlFragment:
        return self._fragment(expr)

    def update_action(self, *assignments: ast.Assignment) -> ast.MergeUpdate:
        return ast.MergeUpdate(tuple(assignments))

    def update_all_action(self) -> ast.MergeUpdate:
        return ast.MergeUpdate(all_columns=True)

    def delete_action(self) -> ast.MergeDelete:
        return ast.MergeDelete()

    def insert_all_action(self) -> ast.MergeInsert:
        return ast.MergeInsert(all_columns=True)

    def insert_action(self, columns: tuple[str, ...] | None, *values: Token) -> ast.MergeInsert:
        fragments = tuple(self._fragment(v) for v in values)
        if columns and len(columns) != len(fragments):
            raise self._fail(f"INSERT lists {len(columns)} columns but {len(fragments)} values", values[0])
        return ast.MergeInsert(columns or (), fragments)

    def when_matched(self, condition: ast.SqlFragment | None, action: Any) -> ast.MergeClause:
        return ast.MergeClause("matched", action, condition)

    def when_not_matched(self, condition: ast.SqlFragment | None, action: Any) -> ast.MergeClause:
        return ast.MergeClause("not_matched", action, condition)

    def when_not_matched_by_source(self, condition: ast.SqlFragment | None, action: Any) -> ast.MergeClause:
        return ast.MergeClause("not_matched_by_source", action, condition)

    def merge(
        self,
        target: ast.TableName,
        target_alias: str | None,
        source: Any,
        source_alias: str | None,
        on: Token,
        *clauses: ast.MergeClause,
    ) -> ast.Node:
        return ast.Merge(target, source, self._fragment(on), clauses, target_alias, source_alias)

    # ------------------------------------------------------------ COPY INTO
    def copy_columns(self, *names: Token) -> tuple[str, ...]:
        listed = tuple(str(self.name(n)) for n in names)
        seen: set[str] = set()
        for tok, name in zip(names, listed, strict=True):
            if name.lower() in seen:  # Paimon's words for it
                raise self._fail(f"Duplicate columns in column list: {name}", tok)
            seen.add(name.lower())
        return listed

    def string_list(self, *items: Token) -> tuple[str, ...]:
        return tuple(str(i) for i in items)

    def format_option(self, key: Token, value: Any) -> tuple[Token, str | tuple[str, ...]]:
        if isinstance(value, bool):
            return key, "TRUE" if value else "FALSE"
        return key, value if isinstance(value, tuple) else str(value)

    def file_format(self, *options: tuple[Token, str | tuple[str, ...]]) -> ast.FileFormat:
        values: dict[str, str | tuple[str, ...]] = {}
        positions: dict[str, tuple[int, int]] = {}
        for key, value in options:
            upper = str(key).upper()
            if upper in values:
                raise self._fail(f"Duplicate FILE_FORMAT option: {upper}", key)
            values[upper] = value
            positions[upper] = (key.line or 1, key.column or 1)
        kind = values.pop("TYPE", None)
        if kind is None:
            raise self._fail("FILE_FORMAT must include TYPE", options[0][0])
        if isinstance(kind, tuple):
            raise self._fail("FILE_FORMAT TYPE takes one value: CSV, JSON or PARQUET", options[0][0])
        return ast.FileFormat(kind.upper(), values, positions)

    def copy_pattern(self, pattern: Token) -> tuple[str, str]:
        return "pattern", str(pattern)

    def copy_force(self, value: bool) -> tuple[str, bool]:
        return "force", value

    def copy_overwrite(self, value: bool) -> bool:
        return value

    def copy_on_error(self, mode: str) -> tuple[str, str]:
        return "on_error", mode

    def abort_statement(self) -> str:
        return "ABORT_STATEMENT"

    def continue_loading(self) -> str:
        return "CONTINUE"

    def skip_file(self) -> str:
        return "SKIP_FILE"

    def copy_into(
        self, table: ast.TableName, columns: tuple[str, ...] | None, source: Token,
        file_format: ast.FileFormat, *settings: tuple[str, Any] | None,
    ) -> ast.Node:
        given = dict(s for s in settings if s is not None)
        return ast.CopyInto(
            table, str(source), file_format, columns, pattern=given.get("pattern"),
            force=bool(given.get("force", False)), on_error=given.get("on_error", "ABORT_STATEMENT"),
        )

    def copy_into_location(
        self, target: Token, source: ast.TableName | ast.SqlFragment, file_format: ast.FileFormat,
        overwrite: bool | None,
    ) -> ast.Node:
        if isinstance(source, ast.SqlFragment) and not source.text.strip():
            raise self._fail("COPY INTO <location> FROM (<query>) requires a non-empty query", target)
        return ast.CopyIntoLocation(str(target), source, file_format, bool(overwrite))

    def truncate(self, table: ast.TableName, partition: ast.PartitionSpec | None) -> ast.Node:
        return ast.Truncate(table, partition)

    # ------------------------------------------------------------ describe / show / call
    def describe_table(
        self,
        detail: str | None,
        table: ast.TableName,
        partition: ast.PartitionSpec | None,
        column: Token | None,
    ) -> ast.Node:
        return ast.DescribeTable(
            table,
            detail == "extended",
            detail == "formatted",
            partition,
            None if column is None else str(column),
        )

    def show_create_table(self, table: ast.TableName) -> ast.Node:
        return ast.ShowCreateTable(table)

    def show_tblproperties(self, table: ast.TableName, key: Token | list[Token] | None) -> ast.Node:
        if isinstance(key, list):
            key = Token.new_borrow_pos("IDENT", ".".join(str(k) for k in key), key[0])
        return ast.ShowTableProperties(table, None if key is None else str(key))

    def show_partitions(self, table: ast.TableName, partition: ast.PartitionSpec | None) -> ast.Node:
        return ast.ShowPartitions(table, partition)

    @v_args(meta=True, inline=True)
    def named_arg(self, meta: Any, name: Token, value: Any) -> tuple[Any, ast.CallArgument]:
        return meta, ast.CallArgument(_call_value(value), str(name))

    @v_args(meta=True, inline=True)
    def positional_arg(self, meta: Any, value: Any) -> tuple[Any, ast.CallArgument]:
        return meta, ast.CallArgument(_call_value(value))

    def call(self, parts: list[Token], *args: Any) -> ast.Node:
        names = [str(p) for p in parts]
        if "$" in names[-1]:
            prefix, _, last = names[-1].partition("$")
            names[-1:] = [prefix, last]
        if not all(names):
            raise self._fail(f"{'.'.join(str(p) for p in parts)!r} is not a procedure name", parts[0])
        arguments = [a for a in args if a is not None]
        seen: set[str] = set()
        for i, (meta, arg) in enumerate(arguments):
            if i and (arg.name is None) != (arguments[0][1].name is None):
                raise self._error(
                    "named and positional arguments cannot be mixed: name every argument",
                    meta.start_pos,
                    ProcedureArgumentError,
                )
            if arg.name is not None:
                if arg.name.lower() in seen:
                    raise self._error(
                        f"argument {arg.name!r} is given twice", meta.start_pos, ProcedureArgumentError
                    )
                seen.add(arg.name.lower())
        return ast.Call(names[-1], tuple(names[:-1]), tuple(a for _, a in arguments))


def _call_value(value: Any) -> ast.LiteralValue:
    if isinstance(value, list):  # an unquoted (possibly dotted) name stands for its text
        return ".".join(str(p) for p in value)
    if isinstance(value, Token):
        return str(value)
    return value


def _bare(tok: Token | None) -> str | None:
    """SET/RESET text: a single quoted literal loses its quotes; anything else is kept as written."""
    if tok is None:
        return None
    text = str(tok).strip()
    if len(text) >= 2 and text[0] in "'\"`" and text[-1] == text[0]:
        if quoted_end(text, 0) == len(text):
            return unquote_string(text) if text[0] != "`" else text[1:-1].replace("``", "`")
    return text
