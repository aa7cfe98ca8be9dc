"""Bind the managed tables named in a plain Spark SQL statement to fresh per-statement views.

dyntable's tables are not in Spark's catalog, so every reference to a managed table, system table
(``t$snapshots``), branch (``t$branch_dev``) or time-travelled table in a Spark statement is
replaced by a fresh temporary view name; the session registers those views (Python data source
with the binding's columns, time travel and options) and runs the rewritten SQL.

How: sqlglot (Spark dialect, public API only) parses a *normalised copy* of the statement to find
the references; the output is made by splicing the ORIGINAL text at the token positions, so all
other text stays byte-identical. The normalised copy has exactly the same length and line breaks
as the original, so every sqlglot position is a position in the original. It differs only where
sqlglot cannot read Spark/Paimon syntax:

* an ``EXPLAIN [mode]`` / ``DESCRIBE [QUERY]`` prefix is blanked (the query after it is bound);
* a leading ``TABLE name`` becomes ``FROM  name`` (sqlglot reads that as ``SELECT *``);
* an unquoted ``$`` joining two words (``t$snapshots``) becomes :data:`_MARK`, so the name stays
  one identifier;
* ``FOR SYSTEM_VERSION AS OF`` becomes ``FOR VERSION        AS OF``.

A reference to a dyntable view (``Catalog.view``: a temporary view first for an unqualified
name, as in Spark, then a table, then a view stored in the database) is replaced by
``(SELECT <its columns> FROM (<its query, bound the same way>) AS __dyntable_view) AS <name>``;
the bindings of that query join the statement's, so a view reads its tables afresh each time.

Invariants:
* a name is managed only if it is not a visible CTE name, its catalog part is absent or
  ``dyntable``, and ``catalog.is_managed(database, table)`` says so; anything else is Spark's;
* every reference that :func:`bind` reports is replaced in the output; text outside the replaced
  spans (the name, an ``OPTIONS`` hint after it, its time-travel clause, qualifiers such as
  ``db.t.`` in ``db.t.id``) is unchanged;
* a reference without an alias gets its table name as alias (``FROM db.t`` -> ``FROM __dyntable_1_t
  AS t``) and ``db.t.id`` becomes ``t.id``; when another item of the same FROM has that name
  (``db.t JOIN sales.t``) no alias is added and such qualifiers name the view instead;
* ``Binding.columns`` is a superset of the columns the statement reads from the reference (or
  ``None`` = all): when the analysis is unsure it adds columns or falls back to ``None``, never
  drops one (:mod:`sqlext.bind.scope` does the column analysis);
* Paimon's metadata columns (``_ROW_ID``, ...; ``Catalog.metadata_columns``) join a binding only
  when named, after the table's columns; a star never shows them (:mod:`sqlext.bind.stars`).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.errors import ParseError, TokenError

from engine.errors import DyntableError, InvalidArgumentError
from sqlext.bind.clauses import OPTIONS_HINT, NameClauses, token_index
from sqlext.bind.functions import incremental_source
from sqlext.bind.scope import (
    DOLLAR_MARK,
    Reference,
    ScopeWalker,
    Source,
    StarUse,
    TimeTravel,
    ident_name,
    ident_span,
    is_incremental_function,
)
from sqlext.bind.stars import spelled_star
from sqlext.bind.tokens import WORD, directory_query_start, is_name, word_token
from sqlext.errors import (
    SYNTAX_ERROR,
    UNDEFINED_TABLE,
    SqlAnalysisError,
    SqlError,
    SqlParseError,
    sqlstate_for,
)
from sqlext.parse.names import TableName
from sqlext.parse.splitter import comment_end, skip_trivia
from sqlext.parse.views import ViewDefinition

# sqlglot logs a warning for each statement it keeps as a raw Command (CREATE TABEL ...): the
# binder passes such statements to Spark, which reports the real error, so the line is noise.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

MANAGED_CATALOG = "dyntable"
VIEW_PREFIX = "__dyntable_"
MAX_VIEW_DEPTH = 32  # views over views nest at most this deep (a cycle would never end)

# Stands for an unquoted '$' inside a name while sqlglot reads the text: sqlglot's tokenizer keeps
# it inside a word (a '$' would split the word), and it is not a character Spark SQL uses.
_MARK = DOLLAR_MARK
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPLAIN_MODES = frozenset({"EXTENDED", "CODEGEN", "COST", "FORMATTED", "LOGICAL"})
_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE", "("})


@dataclass(frozen=True)
class Binding:
    """One view the session must register before running :attr:`BoundQuery.sql`."""

    view: str  # fresh unique name, a valid unquoted Spark identifier: __dyntable_<n>_<table>
    table: TableName  # database filled in; catalog None (always the managed catalog)
    columns: tuple[str, ...] | None  # the table's spelling, in table order; None = all columns
    time_travel: TimeTravel | None
    options: dict[str, str]  # from a /*+ OPTIONS('k'='v') */ hint right after the name


@dataclass(frozen=True)
class BoundQuery:
    """A rewritten statement and the views it needs."""

    sql: str
    bindings: tuple[Binding, ...]
    views: tuple[ViewDefinition, ...] = ()  # dyntable views expanded into ``sql`` (nested ones too)
    other_tables: tuple[tuple[str, ...], ...] = ()  # names left to Spark (its tables and views)


class Catalog(Protocol):
    """What the binder needs to know about managed tables (the session implements it)."""

    def is_managed(self, database: str, table: str) -> bool:
        """Whether ``database.table`` (no ``$`` suffix) is a dyntable table."""
        ...

    def columns(self, name: TableName, time_travel: TimeTravel | None = None) -> list[str]:
        """The columns of the table, system table or branch ``name``.

        With ``time_travel``, those of the schema the chosen snapshot was written with (Paimon
        reads an old snapshot in its own schema).
        """
        ...

    def metadata_columns(self, name: TableName) -> list[str]:
        """Paimon's metadata columns of ``name`` (``_ROW_ID``, ...); optional (without: none)."""
        ...

    def has_tag(self, name: TableName, tag: str) -> bool:
        """Whether the table ``name`` has a tag called ``tag`` (``VERSION AS OF 1`` reads tag ``1`` first)."""
        ...

    def view(self, database: str, name: str, *, temporary: bool) -> ViewDefinition | None:
        """The dyntable view ``name``: a temporary one (``temporary``) or one stored in ``database``."""
        ...

    def shadows(self, name: str) -> bool:
        """Whether the unqualified ``name`` is a temporary view of Spark's that hides any table."""
        ...


def bind(
    sql: str,
    catalog: Catalog,
    current_database: str,
    *,
    counter: Iterator[int] | None = None,
    line: int = 1,
    column: int = 1,
) -> BoundQuery:
    """Replace every managed-table reference of a Spark statement by a fresh view name.

    Args:
        sql: one Spark statement (SELECT, WITH, VALUES, EXPLAIN, DESCRIBE QUERY, CREATE VIEW ... AS,
            CACHE TABLE ... AS, or a query extracted from INSERT/CTAS).
        catalog: tells managed tables from Spark's and lists their columns.
        current_database: the database of names written without one.
        counter: numbers for the view names, shared by the statements of a session
            (default: a new count from 1).
        line: script line where ``sql`` starts (for error positions).
        column: script column where ``sql`` starts.

    Returns:
        The rewritten SQL and one binding per distinct (table, time travel, options) reference.
        A statement sqlglot cannot parse and that names no managed table comes back unchanged.

    Raises:
        SqlParseError: the statement cannot be parsed but names a managed table (42601), or a
            name or OPTIONS hint is malformed.
        SqlAnalysisError: a ``$`` suffix on a table that is not managed, or an unknown system
            table (42P01).
        UnsupportedStatementError: a time-travel target that is not a literal.
    """
    binder = _Binder(sql, catalog, current_database, line, column)
    return binder.run(counter if counter is not None else itertools.count(1))


@dataclass
class _ViewReference:
    """A reference to a dyntable view: the name's span, replaced by the view's bound query."""

    view: ViewDefinition
    start: int
    end: int
    alias_text: str | None  # `` AS <name>`` to add (None: the reference has its own alias)


def spark_identifier(name: str) -> str:
    """``name`` as a Spark identifier: bare when plain (and not a keyword), else back-quoted."""
    if _PLAIN_IDENTIFIER.fullmatch(name):
        try:
            tokens = sqlglot.tokenize(name, read="spark")
        except TokenError:  # pragma: no cover - a plain word always tokenizes
            tokens = []
        if len(tokens) == 1 and tokens[0].token_type == TokenType.VAR:
            return name
    return "`" + name.replace("`", "``") + "`"


class _Binder:
    """One run of :func:`bind` over one statement."""

    def __init__(
        self,
        sql: str,
        catalog: Catalog,
        current_database: str,
        line: int,
        column: int,
        expanding: tuple[str, ...] = (),
    ) -> None:
        self.sql = sql
        self.expanding = expanding  # labels of the views whose queries enclose this one
        self.view_refs: list[_ViewReference] = []
        self.other_tables: list[tuple[str, ...]] = []
        self.catalog = catalog
        self.current = current_database
        self.line = line
        self.column = column
        self.tokens: list[Token] = []
        self.table_statement = False  # a bare `TABLE name` query: no alias may follow the name
        self._columns_cache: dict[tuple[object, ...], list[str]] = {}
        self.star_uses: list[StarUse] = []  # the statement's stars (spelled out over metadata columns)

    # ----------------------------------------------------------------------------- errors

    def error(self, cls: type[SqlError], message: str, offset: int, sqlstate: str | None = None) -> SqlError:
        return cls.at(message, self.sql, offset, line=self.line, column=self.column, sqlstate=sqlstate)

    # ----------------------------------------------------------------------------- driver

    def run(self, counter: Iterator[int]) -> BoundQuery:
        try:
            text = self.normalise()
            tree = sqlglot.parse_one(text, read="spark")
        except (ParseError, TokenError) as e:
            return self.unparsed(e)
        if isinstance(tree, exp.Command) or not isinstance(tree, exp.Expression):
            # sqlglot keeps statements it does not know as raw text; Spark reports its own errors.
            return BoundQuery(self.sql, ())
        walker = ScopeWalker(self.table_source)
        self.star_uses = walker.star_uses
        walker.statement(tree)
        refs = walker.finish()
        return self.assemble(refs, walker.qualifier_edits, counter)

    def normalise(self) -> str:
        """The same-length copy of the statement that sqlglot reads (see the module docstring)."""
        text = list(self.sql)

        def blank(start: int, end: int) -> None:
            for i in range(start, end):
                if text[i] not in "\r\n":
                    text[i] = " "

        # sqlglot tokenizes EXPLAIN's whole statement as one string: cut such prefixes first.
        pos, words = 0, list[tuple[str, int, int]]()
        for _ in range(2):
            pos = skip_trivia(self.sql, pos)
            m = WORD.match(self.sql, pos)
            if not m:
                break
            words.append((m.group().upper(), m.start(), m.end()))
            pos = m.end()
        cut = 0
        if words and words[0][0] == "EXPLAIN":
            cut = words[1][2] if len(words) > 1 and words[1][0] in _EXPLAIN_MODES else words[0][2]
        elif words and words[0][0] in ("DESCRIBE", "DESC"):
            after = skip_trivia(self.sql, words[0][2])
            if len(words) > 1 and words[1][0] == "QUERY":
                cut = words[1][2]
            elif self.sql.startswith("(", after) or (len(words) > 1 and words[1][0] in _QUERY_STARTS):
                cut = words[0][2]
        elif len(words) > 1 and (words[0][0], words[1][0]) == ("INSERT", "OVERWRITE"):
            cut = directory_query_start(self.sql)
        blank(0, cut)
        tokens = sqlglot.tokenize("".join(text), read="spark")
        # Spark's `TABLE name` query: sqlglot reads `FROM name` as SELECT * FROM name.
        if (
            len(tokens) >= 2
            and tokens[0].text.upper() == "TABLE"
            and all(t.token_type in (TokenType.DOT, TokenType.PARAMETER) or is_name(t) for t in tokens[1:])
        ):
            text[tokens[0].start : tokens[0].end + 1] = "FROM "
            self.table_statement = True
        for i in range(1, len(tokens) - 1):
            prev, tok, nxt = tokens[i - 1], tokens[i], tokens[i + 1]
            if (
                tok.text == "$"
                and prev.end + 1 == tok.start
                and tok.end + 1 == nxt.start
                and prev.token_type not in (TokenType.STRING, TokenType.IDENTIFIER)
                and WORD.fullmatch(prev.text)
                and WORD.fullmatch(nxt.text)
            ):
                text[tok.start] = _MARK
            elif (
                tok.text.upper() == "SYSTEM_VERSION"
                and prev.text.upper() == "FOR"
                and nxt.text.upper() == "AS"
            ):
                text[tok.start : tok.end + 1] = "VERSION".ljust(tok.end + 1 - tok.start)
        normalised = "".join(text)
        self.tokens = sqlglot.tokenize(normalised, read="spark")
        return normalised

    def unparsed(self, error: ParseError | TokenError) -> BoundQuery:
        """sqlglot cannot read the statement: pass it to Spark unless it names a managed table."""
        managed = self.managed_name_offset()
        if managed is None:
            return BoundQuery(self.sql, ())
        offset, name = managed
        detail = "cannot tokenize it"
        if isinstance(error, ParseError) and error.errors:
            info = error.errors[0]
            row, col, hl = info.get("line"), info.get("col"), info.get("highlight") or ""
            if isinstance(row, int) and isinstance(col, int) and row >= 1:
                starts = [0] + [m.end() for m in re.finditer("\n", self.sql)]
                if row <= len(starts):
                    offset = max(0, min(len(self.sql), starts[row - 1] + col - max(len(hl), 1)))
            detail = str(info.get("description") or "syntax error")
            # sqlglot names its own classes when a clause is incomplete: say it in SQL terms.
            detail = "incomplete clause" if "<class" in detail else detail.lower()
            if hl:
                detail += f" near {hl!r}"
        raise self.error(
            SqlParseError,
            f"cannot parse this statement, which reads managed table {name}, as Spark SQL ({detail}):"
            " fix the syntax",
            offset,
        )

    def managed_name_offset(self) -> tuple[int, str] | None:
        """The offset and text of the first name in the statement that is a managed table."""
        tokens = self.tokens
        if not tokens:
            try:
                tokens = sqlglot.tokenize(self.sql, read="spark")
            except TokenError:
                tokens = [word_token(m) for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_$]*", self.sql)]
        runs: list[list[Token]] = []
        run: list[Token] = []
        after_dot = False
        for tok in tokens:
            if is_name(tok) and (not run or after_dot):
                run.append(tok)
                after_dot = False
            elif tok.token_type == TokenType.DOT and run and not after_dot:
                after_dot = True
            else:
                runs.append(run)
                run = [tok] if is_name(tok) else []
                after_dot = False
        runs.append(run)
        for run in runs:
            hit = self.managed_in_run(run)
            if hit:
                return hit
        return None

    def managed_in_run(self, run: list[Token]) -> tuple[int, str] | None:
        parts = [t.text.replace(_MARK, "$") for t in run]
        for j, tok in enumerate(run):
            base = parts[j].split("$")[0]
            if not base:
                continue
            if self.catalog.is_managed(self.current, base):
                return tok.start, f"{self.current}.{base}"
            if j > 0 and self.catalog.is_managed(parts[j - 1], base):
                return run[j - 1].start, f"{parts[j - 1]}.{base}"
        return None

    # ------------------------------------------------------------------ one table reference

    def table_source(self, node: exp.Table) -> Source:
        """Classify a table in a FROM/JOIN position: a CTE, a Spark table, or a managed reference."""
        if is_incremental_function(node):
            return incremental_source(self, node)
        idents = [node.args[k] for k in ("catalog", "db", "this") if node.args.get(k) is not None]
        alias_node = node.args.get("alias")
        alias = alias_node.name if alias_node is not None and alias_node.name else None
        alias_columns = None
        if alias_node is not None and alias_node.columns:
            alias_columns = frozenset(c.name.lower() for c in alias_node.columns)
        names = [ident_name(i) for i in idents]
        lowered = [n.lower() for n in names]
        keys: frozenset[tuple[str, ...]]
        if alias is not None:
            keys = frozenset({(alias.lower(),)})
        else:
            keys = frozenset(tuple(lowered[i:]) for i in range(len(lowered)))
        if len(names) == 3 and lowered[0] != MANAGED_CATALOG:
            self.other_tables.append(tuple(names))
            return Source(keys, None, alias_columns)  # another Spark catalog
        start, end = ident_span(idents[0])[0], ident_span(idents[-1])[1]
        database = names[-2] if len(names) >= 2 else self.current
        obj = names[-1]
        base = obj.split("$")[0]
        # Spark's order: an unqualified name is a temporary view first, then a table, then a view.
        view = None
        if len(names) == 1 and "$" not in obj:
            if self.catalog.shadows(obj):  # a cached table: Spark's temporary view, Spark resolves it
                self.other_tables.append(tuple(names))
                return Source(keys, None, alias_columns)
            view = self.catalog.view(database, obj, temporary=True)
        managed = view is None and self.catalog.is_managed(database, base)
        if view is None and not managed and "$" not in obj:
            view = self.catalog.view(database, obj, temporary=False)
        if view is not None:
            return self.view_source(node, view, idents, keys, alias, alias_columns)
        if not managed:
            self.other_tables.append(tuple(names))
            if "$" in obj:
                raise self.error(
                    SqlAnalysisError,
                    f"{database}.{base} is not a dyntable table, so {obj!r} names no system table or"
                    " branch: check the name, or create the table first",
                    start,
                    UNDEFINED_TABLE,
                )
            return Source(keys, None, alias_columns)
        if alias is None:
            qualified: set[tuple[str, ...]] = {(database.lower(), obj.lower())}
            qualified.add((MANAGED_CATALOG, database.lower(), obj.lower()))
            keys = keys | qualified
        try:
            name = TableName.from_parts([database, obj], line=None, column=None, offset=start)
        except InvalidArgumentError as e:
            raise self.error(SqlParseError, str(e), start, SYNTAX_ERROR) from None
        name = self.located(name, start)
        clauses = NameClauses(self.sql, self.tokens, self.error, self.catalog.has_tag)
        end_of_reference, options, travel = clauses.read(node, end, name)
        columns = self.table_columns(name, start, travel)  # a snapshot's own schema (Paimon)
        hidden = getattr(self.catalog, "metadata_columns", None)
        ref = Reference(
            metadata_columns=tuple(hidden(name)) if hidden is not None and not name.system_table else (),
            table=name,
            start=start,
            end=end,
            removals=end_of_reference,
            options=options,
            time_travel=travel,
            table_columns=tuple(columns),
            alias_text=None if alias is not None or self.table_statement else self.alias_text(idents[-1]),
            alias_columns=alias_columns,
        )
        ref.alias_at = self.alias_position(ref)
        if alias_columns is not None or node.args.get("pivots"):
            ref.need_all()  # positional column renames and PIVOT read columns not named in the text
        return Source(keys, ref, alias_columns)

    def view_source(
        self,
        node: exp.Table,
        view: ViewDefinition,
        idents: list[exp.Identifier],
        keys: frozenset[tuple[str, ...]],
        alias: str | None,
        alias_columns: frozenset[str] | None,
    ) -> Source:
        """A reference to a dyntable view: to be replaced by the view's query (see :meth:`expand`)."""
        start, end = ident_span(idents[0])[0], ident_span(idents[-1])[1]
        if node.args.get("version") is not None:
            raise self.error(
                SqlAnalysisError,
                f"{view.label} is a view, which cannot be read AS OF a version: time-travel the tables"
                " in its query (or query them directly)",
                start,
                "42809",
            )
        hint_start = skip_trivia(self.sql, end, keep_hints=True)
        if self.sql.startswith("/*+", hint_start) and OPTIONS_HINT.fullmatch(
            self.sql[hint_start + 3 : max(hint_start + 3, comment_end(self.sql, hint_start) - 2)]
        ):
            raise self.error(
                SqlAnalysisError,
                f"{view.label} is a view: an OPTIONS hint applies to a table, put it on the tables in"
                " the view's query",
                hint_start,
                "42809",
            )
        if view.database is not None:
            keys = keys | {(view.database.lower(), view.name.lower())}
        alias_text = None if alias is not None or self.table_statement else self.alias_text(idents[-1])
        self.view_refs.append(_ViewReference(view, start, end, alias_text))
        return Source(keys, None, alias_columns)

    def expand(self, ref: _ViewReference, counter: Iterator[int]) -> tuple[str, BoundQuery]:
        """The text replacing a view reference: its query bound afresh, its columns pinned."""
        view = ref.view
        if view.label.lower() in self.expanding or len(self.expanding) >= MAX_VIEW_DEPTH:
            chain = " -> ".join([*self.expanding, view.label.lower()])
            raise self.error(
                SqlAnalysisError, f"view {view.label} refers to itself ({chain}): redefine one of them",
                ref.start, "42P17",
            )
        inner = _Binder(
            view.sql, self.catalog, view.current_database, self.line, self.column,
            (*self.expanding, view.label.lower()),
        )
        try:
            bound = inner.run(counter)
        except SqlError as e:
            raise self.error(
                type(e), f"view {view.label} cannot be read: {e.message}", ref.start, e.sqlstate
            ) from None
        except DyntableError as e:
            raise self.error(
                SqlAnalysisError, f"view {view.label} cannot be read: {e}", ref.start, sqlstate_for(e)
            ) from None
        select = ", ".join(
            spark_identifier(q) if q == c else f"{spark_identifier(q)} AS {spark_identifier(c)}"
            for q, c in zip(view.query_columns, view.columns, strict=True)
        )
        text = f"(SELECT {select} FROM (\n{bound.sql}\n) AS {VIEW_PREFIX}view)"
        return text, bound

    def located(self, name: TableName, start: int) -> TableName:
        """``name`` without its catalog, located at ``start`` (script line and column)."""
        before = self.sql[:start]
        row = before.count("\n")
        column = (self.column if row == 0 else 1) + start - (before.rfind("\n") + 1)
        return TableName(
            None, name.database, name.table, name.branch, name.system_table, self.line + row, column, start
        )

    def table_columns(self, name: TableName, start: int, travel: TimeTravel | None = None) -> list[str]:
        key = (
            name.database.lower() if name.database else None,
            name.table.lower(),
            name.branch,
            name.system_table.lower() if name.system_table else None,
            travel,
        )
        if key not in self._columns_cache:
            try:
                self._columns_cache[key] = list(self.catalog.columns(name, travel))
            except SqlError:
                raise
            except DyntableError as e:
                raise self.error(SqlAnalysisError, str(e), start, sqlstate_for(e)) from None
        return self._columns_cache[key]

    def alias_text(self, ident: exp.Identifier) -> str:
        """The alias to add so that qualifiers written with the table's own name keep working."""
        start, end = ident_span(ident)
        written = self.sql[start:end]
        if written.startswith("`"):
            return written
        return spark_identifier(ident_name(ident))

    def alias_position(self, ref: Reference) -> int:
        """Where `` AS alias`` goes: after the name, or after a TABLESAMPLE (...) that follows it."""
        pos = max([ref.end, *(end for _, end in ref.removals)])
        i = token_index(self.tokens, pos)
        toks = self.tokens
        if i + 1 < len(toks) and toks[i].text.upper() == "TABLESAMPLE" and toks[i + 1].text == "(":
            depth = 0
            for tok in toks[i + 1 :]:
                depth += {"(": 1, ")": -1}.get(tok.text, 0) if tok.token_type != TokenType.STRING else 0
                if depth == 0:
                    return tok.end + 1
        return ref.end

    # ---------------------------------------------------------------------------- output

    def assemble(
        self, refs: list[Reference], qualifier_edits: list[tuple[int, int, Reference]], counter: Iterator[int]
    ) -> BoundQuery:
        refs = sorted(refs, key=lambda r: r.start)
        views: dict[tuple[object, ...], int] = {}
        groups: list[list[Reference]] = []
        for ref in refs:
            key = (
                ref.table.database.lower() if ref.table.database else None,
                ref.table.table.lower(),
                ref.table.branch,
                ref.table.system_table.lower() if ref.table.system_table else None,
                ref.time_travel,
                tuple(sorted(ref.options.items())),
            )
            if key not in views:
                views[key] = len(groups)
                groups.append([])
            groups[views[key]].append(ref)
        bindings: list[Binding] = []
        view_of: dict[int, str] = {}
        hides: dict[int, bool] = {}  # references whose view carries metadata columns
        for group in groups:
            first = group[0]
            safe = re.sub(r"[^A-Za-z0-9_]", "_", first.table.object_name)[:48]
            view = f"{VIEW_PREFIX}{next(counter)}_{safe}"
            needed: set[str] | None = set()
            for ref in group:
                view_of[id(ref)] = view
                if ref.needed is None or needed is None:
                    needed = None
                else:
                    needed |= ref.needed
            columns = None
            if needed is not None:
                columns = tuple(c for c in first.table_columns if c.lower() in needed)
            meta: set[str] = set().union(*(r.metadata_needed for r in group))
            if meta:  # named metadata columns come last, in the table's order of them
                hidden = tuple(c for c in first.metadata_columns if c.lower() in meta)
                columns = (columns if columns is not None else first.table_columns) + hidden
                for ref in group:
                    hides[id(ref)] = True
            bindings.append(Binding(view, first.table, columns, first.time_travel, dict(first.options)))
        edits: list[tuple[int, int, str]] = []
        for ref in refs:
            view = view_of[id(ref)]
            alias = f" AS {ref.alias_text}" if ref.alias_text is not None else ""
            if alias and ref.alias_at != ref.end:
                edits.append((ref.alias_at, ref.alias_at, alias))
                alias = ""
            edits.append((ref.start, ref.end, view + alias))
            edits.extend((s, e, "") for s, e in ref.removals)
        inner: list[BoundQuery] = []
        for vref in self.view_refs:
            text, bound = self.expand(vref, counter)
            inner.append(bound)
            if self.table_statement:  # `TABLE v` -> `SELECT * FROM (...) AS v`
                keyword = self.tokens[0].start
                edits.append((keyword, keyword + len("TABLE"), "SELECT * FROM"))
            alias = f" AS {vref.alias_text}" if vref.alias_text is not None else ""
            if self.table_statement:
                alias = f" AS {spark_identifier(vref.view.name)}"
            edits.append((vref.start, vref.end, text + alias))
        seen: set[tuple[int, int]] = set()
        for star in self.star_uses:
            spelled_out = spelled_star(self.sql, star, view_of, hides, qualifier_edits, spark_identifier)
            if spelled_out is not None:
                edits.append((star.start, star.end, spelled_out))
                if star.qualifier is not None:
                    seen.add(star.qualifier)
        for start, end, ref in qualifier_edits:
            qualifier = view_of[id(ref)] if ref.qualify_by_view else ref.alias_text
            # Two sources may match one qualifier (Spark then reports the ambiguity): edit once.
            if qualifier is not None and (start, end) not in seen:
                seen.add((start, end))
                edits.append((start, end, qualifier))
        out = self.sql
        last = len(out) + 1
        for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
            if end > last:  # pragma: no cover - spans come from disjoint parts of the tree
                raise AssertionError(f"overlapping rewrite spans at {start}")
            out = out[:start] + text + out[end:]
            last = start
        expanded = [r.view for r in self.view_refs]
        others = list(self.other_tables)
        for bound in inner:
            bindings.extend(bound.bindings)
            expanded.extend(bound.views)
            others.extend(bound.other_tables)
        return BoundQuery(out, tuple(bindings), tuple(expanded), tuple(others))
