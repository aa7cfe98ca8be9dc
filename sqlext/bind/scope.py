"""Which tables a Spark query reads, and which of their columns it needs (for :mod:`sqlext.bind.rewrite`).

The walker follows Spark's name resolution over a sqlglot tree: CTE names shadow tables inside
the query that defines them (later CTEs and the body; a CTE's own body only when RECURSIVE), FROM
and JOIN items are the sources of their SELECT, and a subquery sees the sources of the queries
around it (correlation). Each table in a FROM/JOIN position is classified by a callback (CTE,
Spark's table, or a managed :class:`Reference`).

Column needs are collected per reference, and are a superset of what Spark will read:

* ``alias.col`` / ``db.t.col`` / ``t.s.field`` resolve their qualifier like Spark (longest
  qualifier first, innermost query first); a qualifier that names no source is a struct column;
* an unqualified column goes to every managed source of the innermost query that has a column
  of that name (case-insensitively); if no source there surely has it, the enclosing queries are
  searched too, because a source with unknown columns (a Spark table) may or may not have it;
* a call of one of Paimon's incremental table-valued functions (``paimon_incremental_query``
  and its two siblings) in a FROM/JOIN position is a reference to the table it names;
* ``*`` (outside ``count(*)`` and an EXISTS select list), ``t.*``, NATURAL JOIN, PIVOT and
  positional column aliases (``t AS x(a, b)``) make the affected references read all columns;
* names that resolve nowhere (select aliases, lambda variables, typos) need nothing: Spark
  resolves or rejects them itself.

Invariants: the walker never mutates the tree; it uses only sqlglot's public expression API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from sqlext.parse.names import TableName

# Stands for an unquoted '$' in a name in the text sqlglot reads (see sqlext.bind.rewrite).
DOLLAR_MARK = "\u00a4"

_QUERY = (exp.Select, exp.SetOperation, exp.Subquery)
# Paimon's incremental table-valued functions: each reads a table (its first argument) and
# becomes a managed reference, with the option its other arguments set (and how many it takes).
INCREMENTAL_FUNCTIONS = {
    "paimon_incremental_query": ("incremental-between", ("start", "end")),
    "paimon_incremental_between_timestamp": (
        "incremental-between-timestamp", ("start timestamp", "end timestamp")),
    "paimon_incremental_to_auto_tag": ("incremental-to-auto-tag", ("end tag name",)),
}
# Select arguments the walker handles itself rather than as plain expressions.
_SELECT_OWN = frozenset({"with_", "from_", "joins", "laterals", "hint", "expressions", "pivots"})


def ident_name(ident: exp.Expression) -> str:
    """An identifier's name as the user meant it (an unquoted ``$`` restored)."""
    if ident.args.get("quoted"):
        return str(ident.name)  # the mark only ever replaces a '$' outside back-quotes
    return str(ident.name).replace(DOLLAR_MARK, "$")


def ident_span(ident: exp.Expression) -> tuple[int, int]:
    """``[start, end)`` of a parsed identifier in the statement text."""
    meta = ident.meta
    return int(meta["start"]), int(meta["end"]) + 1


@dataclass(frozen=True)
class TimeTravel:
    """Which version of a table a reference reads (exactly one field is set)."""

    snapshot_id: int | None = None  # VERSION AS OF 12 / FOR [SYSTEM_]VERSION AS OF 12
    tag: str | None = None  # VERSION AS OF 'tag-1' (a string version names a tag; Paimon: tag wins)
    timestamp: str | None = None  # TIMESTAMP AS OF '2024-05-01 10:00:00' / FOR SYSTEM_TIME AS OF '...'
    timestamp_millis: int | None = None  # TIMESTAMP AS OF 1678883047 (a number: seconds since the epoch)


@dataclass(eq=False)
class Reference:
    """One place in the text where a managed table is read."""

    table: TableName
    start: int  # [start, end) of the name in the text
    end: int
    removals: list[tuple[int, int]]  # the OPTIONS hint and time-travel clause, cut from the output
    options: dict[str, str]  # a hint's, or what an incremental table-valued function sets
    time_travel: TimeTravel | None
    table_columns: tuple[str, ...]
    alias_text: str | None  # the alias to add (None: the text has one, or none is allowed)
    alias_columns: frozenset[str] | None = None
    alias_at: int = -1  # where the added alias goes
    # Set when the added alias would clash with another source of the same FROM (db.t JOIN sales.t):
    # no alias is added, and qualifiers that name this table (db.t.id) name the view instead.
    qualify_by_view: bool = False
    needed: set[str] | None = field(default_factory=set)  # lower-case column names; None = all
    # Paimon's metadata columns (_ROW_ID, __paimon_file_path, ...): read only when named, never by `*`.
    metadata_columns: tuple[str, ...] = ()
    metadata_needed: set[str] = field(default_factory=set)  # lower-case

    def __post_init__(self) -> None:
        self._lower = {c.lower() for c in self.table_columns}
        self._meta = {c.lower() for c in self.metadata_columns} - self._lower
        if self.alias_at < 0:
            self.alias_at = self.end

    def has(self, column: str) -> bool:
        """Whether the table has ``column`` (lower-case), a metadata column included."""
        return column in self._lower or column in self._meta

    def need(self, column: str) -> None:
        """Mark ``column`` (lower-case) as read, if the table has it."""
        if column in self._meta:
            self.metadata_needed.add(column)
        elif self.needed is not None and column in self._lower:
            self.needed.add(column)

    def need_all(self) -> None:
        """Mark every column as read."""
        self.needed = None


@dataclass(eq=False)
class Source:
    """An item of a FROM clause, as far as column resolution cares."""

    keys: frozenset[tuple[str, ...]]  # lower-case qualifiers that name it: (alias,) or (t,), (db, t), ...
    ref: Reference | None = None  # set for a managed table
    columns: frozenset[str] | None = None  # known lower-case output columns (None: see ref / unknown)

    def has(self, column: str) -> bool | None:
        """Whether the source has ``column``: True, False, or None when its columns are unknown."""
        if self.columns is not None:
            return column in self.columns
        if self.ref is not None:
            return self.ref.has(column)
        return None


@dataclass(eq=False)
class StarUse:
    """A star in the text: ``*`` over a SELECT's sources (``frame``), or ``t.*`` of ``ref``
    (``qualifier``: the [start, end) of its ``t``)."""

    start: int
    end: int
    frame: _Frame | None
    ref: Reference | None = None
    qualifier: tuple[int, int] | None = None


@dataclass(eq=False)
class _Frame:
    """The sources of one SELECT, linked to the enclosing query's frame."""

    parent: _Frame | None
    sources: list[Source] = field(default_factory=list)
    read_all: bool = False  # NATURAL JOIN / PIVOT: every managed source reads all columns
    using: list[str] = field(default_factory=list)

    def chain(self) -> list[_Frame]:
        frames: list[_Frame] = []
        frame: _Frame | None = self
        while frame is not None:
            frames.append(frame)
            frame = frame.parent
        return frames


def _alias_columns(node: exp.Expression) -> frozenset[str] | None:
    alias = node.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return frozenset(ident_name(c).lower() for c in alias.columns)
    return None


def _alias_keys(node: exp.Expression) -> frozenset[tuple[str, ...]]:
    name = node.alias
    return frozenset({(name.lower(),)}) if name else frozenset()


def is_incremental_function(node: exp.Expression) -> bool:
    """Whether a FROM item is a call of one of Paimon's incremental table-valued functions."""
    return (
        isinstance(node, exp.Table)
        and isinstance(node.this, exp.Anonymous)
        and str(node.this.name).lower() in INCREMENTAL_FUNCTIONS
        and not any(node.args.get(k) for k in ("db", "catalog"))
    )


def output_columns(query: exp.Expression) -> frozenset[str] | None:
    """The lower-case column names a query produces, or None when it selects a star."""
    while isinstance(query, exp.Subquery):
        query = query.this
    if isinstance(query, exp.SetOperation):
        return output_columns(query.this)
    if not isinstance(query, exp.Select):
        return None
    names: set[str] = set()
    for e in query.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            return None
        if e.alias_or_name:
            names.add(e.alias_or_name.lower())
    return frozenset(names)


class ScopeWalker:
    """Walk one statement; collect managed references and the columns each one needs."""

    def __init__(self, table_source: Callable[[exp.Table], Source]) -> None:
        """Create the walker.

        Args:
            table_source: classifies a table in a FROM/JOIN position that is not a CTE name.
        """
        self._table_source = table_source
        self.refs: list[Reference] = []
        # [start, end) of a qualifier to replace by the reference's added alias (db.t.id -> t.id).
        self.qualifier_edits: list[tuple[int, int, Reference]] = []
        self._columns: list[tuple[exp.Column, _Frame]] = []
        self._stars: list[_Frame] = []
        self._frames: list[_Frame] = []
        # Every `*` / `t.*` with its [start, end): spelled out when a source it expands also
        # reads metadata columns, which a star must not show (sqlext.bind.rewrite).
        self.star_uses: list[StarUse] = []

    # ------------------------------------------------------------------------- traversal

    def statement(self, tree: exp.Expression) -> None:
        """Walk a statement: a query, or a statement around one (CREATE VIEW/CACHE TABLE/INSERT ... AS)."""
        if isinstance(tree, _QUERY):
            self.query(tree, {}, None)
            return
        env = self._ctes(tree.args.get("with_"), {}, None)
        inner = tree.args.get("expression")
        if isinstance(inner, _QUERY):
            self.query(inner, env, None)

    def query(
        self,
        node: exp.Expression,
        env: dict[str, frozenset[str] | None],
        parent: _Frame | None,
        in_exists: bool = False,
    ) -> None:
        """Walk a SELECT, set operation or parenthesised query."""
        if isinstance(node, exp.Subquery):
            self.query(node.this, env, parent, in_exists)
            rest = _Frame(parent)
            for key, value in node.args.items():
                if key not in ("this", "alias"):
                    self._walk_arg(value, rest, env)
            return
        env = self._ctes(node.args.get("with_"), env, parent)
        if isinstance(node, exp.SetOperation):
            self.query(node.this, env, parent, in_exists)
            self.query(node.expression, env, parent, in_exists)
            rest = _Frame(parent)  # ORDER BY of a union names its output columns
            for key, value in node.args.items():
                if key not in ("this", "expression", "with_"):
                    self._walk_arg(value, rest, env)
            return
        frame = _Frame(parent)
        self._frames.append(frame)
        if not isinstance(node, exp.Select):
            self._walk(node, frame, env)
            return
        from_ = node.args.get("from_")
        if from_ is not None:
            self._source(from_.this, frame, env)
        for join in node.args.get("joins") or []:
            self._join(join, frame, env)
        for lateral in node.args.get("laterals") or []:
            self._source(lateral, frame, env)
        if node.args.get("pivots"):
            frame.read_all = True
        for e in node.expressions:
            if not (in_exists and isinstance(e, exp.Star)):  # EXISTS (SELECT * ...) reads no column
                self._walk(e, frame, env)
        for key, value in node.args.items():
            if key not in _SELECT_OWN:
                self._walk_arg(value, frame, env)

    def _ctes(
        self, with_: exp.Expression | None, env: dict[str, frozenset[str] | None], parent: _Frame | None
    ) -> dict[str, frozenset[str] | None]:
        if not isinstance(with_, exp.With):
            return env
        env = dict(env)
        recursive = bool(with_.args.get("recursive"))
        for cte in with_.expressions:
            name = ident_name(cte.args["alias"].this).lower() if cte.args.get("alias") else cte.alias.lower()
            columns = _alias_columns(cte)
            if recursive:
                env[name] = columns
            self.query(cte.this, env, parent)
            env[name] = columns if columns is not None else output_columns(cte.this)
        return env

    def _join(self, join: exp.Join, frame: _Frame, env: dict[str, frozenset[str] | None]) -> None:
        self._source(join.this, frame, env)
        if str(join.args.get("method") or "").upper() == "NATURAL":
            frame.read_all = True
        for ident in join.args.get("using") or []:
            frame.using.append(ident_name(ident).lower())
        for key, value in join.args.items():
            if key not in ("this", "using", "method", "kind", "side"):
                self._walk_arg(value, frame, env)

    def _source(self, node: exp.Expression, frame: _Frame, env: dict[str, frozenset[str] | None]) -> None:
        """Add a FROM/JOIN item (and the joins nested in its parentheses) to ``frame``."""
        if isinstance(node, exp.Table) and is_incremental_function(node):
            source = self._table_source(node)  # (its arguments are literals: they read no column)
            frame.sources.append(source)
            if source.ref is not None:
                self.refs.append(source.ref)
        elif isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            parts = [node.args[k] for k in ("catalog", "db") if node.args.get(k) is not None]
            name = ident_name(node.this).lower()
            if not parts and name in env:
                keys = _alias_keys(node) or frozenset({(name,)})
                frame.sources.append(Source(keys, None, _alias_columns(node) or env[name]))
            else:
                source = self._table_source(node)
                frame.sources.append(source)
                if source.ref is not None:
                    self.refs.append(source.ref)
            self._walk_arg(node.args.get("sample"), frame, env)
        elif isinstance(node, exp.Subquery) and isinstance(node.this, (exp.Select, exp.SetOperation)):
            # A derived table cannot see its siblings (only LATERAL can), but it may be nested in
            # a correlated subquery and see the queries around that.
            self.query(node.this, env, frame.parent)
            columns = _alias_columns(node) or output_columns(node.this)
            frame.sources.append(Source(_alias_keys(node), None, columns))
        elif isinstance(node, exp.Subquery):
            self._source(node.this, frame, env)  # parentheses around tables and joins
        elif isinstance(node, exp.Lateral) and isinstance(node.this, exp.Subquery):
            self.query(node.this, env, frame)
            columns = _alias_columns(node) or output_columns(node.this)
            frame.sources.append(Source(_alias_keys(node), None, columns))
        else:
            # LATERAL VIEW, VALUES, table-valued functions: their arguments read this frame's columns.
            target = node.this if isinstance(node, exp.Table) else node
            self._walk(target, frame, env)
            frame.sources.append(Source(_alias_keys(node), None, _alias_columns(node)))
        for join in node.args.get("joins") or []:
            self._join(join, frame, env)

    def _walk_arg(self, value: object, frame: _Frame, env: dict[str, frozenset[str] | None]) -> None:
        if isinstance(value, list):
            for item in value:
                self._walk_arg(item, frame, env)
        elif isinstance(value, exp.Expression):
            self._walk(value, frame, env)

    def _walk(self, root: exp.Expression, frame: _Frame, env: dict[str, frozenset[str] | None]) -> None:
        """Collect the columns and stars of an expression; nested queries get their own frame."""
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, _QUERY):
                self.query(node, env, frame, in_exists=isinstance(node.parent, exp.Exists))
            elif isinstance(node, exp.Column):
                self._columns.append((node, frame))
            elif isinstance(node, exp.Star):
                if not isinstance(node.parent, exp.Count):
                    self._stars.append(frame)
                    if "start" in node.meta:
                        span = int(node.meta["start"]), int(node.meta["end"]) + 1
                        self.star_uses.append(StarUse(*span, frame))
            elif not isinstance(node, (exp.Hint, exp.JoinHint)):
                stack.extend(node.iter_expressions())

    # ------------------------------------------------------------------------ resolution

    def finish(self) -> list[Reference]:
        """Resolve every collected column; return the references with their needs filled in."""
        for column, frame in self._columns:
            self._resolve(column, frame)
        for frame in self._stars:
            for source in frame.sources:
                if source.ref is not None:
                    source.ref.need_all()
        for frame in self._frames:
            names = [k for s in frame.sources for k in s.keys if len(k) == 1]
            for source in frame.sources:
                if source.ref is None:
                    continue
                ref = source.ref
                if ref.alias_text is not None and names.count((ref.alias_text.strip("`").lower(),)) > 1:
                    ref.alias_text = None
                    ref.qualify_by_view = True
                if frame.read_all:
                    source.ref.need_all()
                for name in frame.using:
                    source.ref.need(name)
        return self.refs

    def _resolve(self, column: exp.Column, frame: _Frame) -> None:
        qualifier = [column.args[k] for k in ("catalog", "db", "table") if column.args.get(k) is not None]
        star = isinstance(column.this, exp.Star)
        names = [ident_name(i).lower() for i in qualifier]
        if not star:
            names.append(ident_name(column.this).lower())
        longest = len(names) if star else len(names) - 1
        for scope in frame.chain():
            for k in (3, 2, 1):
                if k > longest:
                    continue
                hits = [s for s in scope.sources if tuple(names[:k]) in s.keys]
                for source in hits:
                    ref = source.ref
                    if ref is None:
                        continue
                    if k == len(names):
                        ref.need_all()  # t.*
                        if "start" in column.this.meta:
                            self.star_uses.append(StarUse(
                                ident_span(qualifier[0])[0], int(column.this.meta["end"]) + 1, None, ref,
                                (ident_span(qualifier[0])[0], ident_span(qualifier[k - 1])[1])))
                    else:
                        ref.need(names[k])
                    if k > 1 or DOLLAR_MARK in str(qualifier[0].name):
                        self.qualifier_edits.append(
                            (ident_span(qualifier[0])[0], ident_span(qualifier[k - 1])[1], ref)
                        )
                if hits:
                    return
        # No source has this qualifier: `s.f` reads field f of a struct column s.
        if star and not names:
            return
        self._unqualified(names[0], frame)

    @staticmethod
    def _unqualified(name: str, frame: _Frame) -> None:
        for scope in frame.chain():
            surely_here = False
            for source in scope.sources:
                if source.has(name):
                    surely_here = True
                    if source.ref is not None:
                        source.ref.need(name)
            if surely_here:
                return
