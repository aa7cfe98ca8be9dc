"""IPython magics ``%sql``, ``%%sql``, ``%sql_connect``: dyntable SQL in notebooks, on one shared SqlSession.

```
%load_ext sqlext                      # registers the magics (sqlext.load_ipython_extension)
%config SqlMagic.warehouse = "./wh"   # or: %sql_connect --warehouse ./wh --conf k=v
%%sql                                 # a whole script; the last result renders as a table
df = %sql SELECT * FROM t             # the last result as a Spark DataFrame
```

Conventions follow ipython-sql/jupysql (``SqlMagic`` traitlets set with ``%config``,
``displaylimit``, ``autopandas``, ``short_errors``, ``VAR <<`` capture) and Spark: the value
is a Spark DataFrame (lazy, the whole result), and only the rows shown are fetched, up to
``displaylimit`` of them, while the cell runs (so a failing query fails its cell). The shown
rows are remembered with the DataFrame, and IPython's formatters show them whenever that
DataFrame is displayed; any other DataFrame displays as Spark makes it.

The SqlSession is opened on first use: on the notebook's active SparkSession if there is one,
else on a local one built as ``dyntable-sql`` builds it. IPython's ``{var}``/``$var`` expansion
is off for these magics: ``$`` names system tables (``t$snapshots``) and a Python variable of
the same name must never change a statement.
"""

from __future__ import annotations

import os
import re
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Bool, Float, Int, Unicode, observe

from sqlext.errors import sqlstate_for
from sqlext.notebook.progress import Progress, run_with_progress
from sqlext.notebook.render import Shown, error_text, fetch, progress_bundle

# ``df << SELECT …`` (line) or ``df <<`` (cell): no SQL statement starts with a name and ``<<``.
_TARGET = re.compile(r"^\s*([A-Za-z_]\w*)\s*<<\s*(.*)$", re.S)

SessionFactory = Callable[..., Any]
"""``(warehouse, database, master, spark_conf, session_conf) -> SqlSession``; tests pass a fake."""


class SqlMagicError(Exception):
    """A statement of a ``%sql`` cell failed; the notebook shows dyntable-sql's error text, not a traceback.

    IPython asks an exception for ``_render_traceback_`` before formatting a Python traceback;
    raising (rather than printing) keeps the cell failed, so "Run all" and nbclient stop there.
    """

    def __init__(self, text: str, error: BaseException) -> None:
        super().__init__(text)
        self.text = text
        self.error = error  # the typed error the statement raised
        self.sqlstate = sqlstate_for(error)

    def _render_traceback_(self) -> list[str]:
        return self.text.splitlines()


def default_session_factory(
    warehouse: str, database: str, master: str, spark_conf: dict[str, str], session_conf: dict[str, str]
) -> Any:
    """A SqlSession on the notebook's active SparkSession, or on a new local one."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from sqlext.session import SqlSession

    spark = SparkSession.getActiveSession()
    if spark is None and SparkContext._active_spark_context is not None:
        # Spark runs, but this thread has no active session (it was built on another thread):
        # getOrCreate returns the running default session and starts nothing.
        spark = SparkSession.builder.getOrCreate()
    if spark is None:
        from sqlext.spark import build_spark

        spark = build_spark(master, {"spark.ui.showConsoleProgress": "false", **spark_conf})
    else:
        session_conf = {**spark_conf, **session_conf}  # runtime spark.* settings still apply
    if "://" not in warehouse:
        warehouse = os.path.abspath(os.path.expanduser(warehouse))
    return SqlSession(spark, warehouse, database, session_conf)


@magics_class
class SqlMagic(Magics):
    """Runs dyntable SQL from notebook cells; configured with ``%config SqlMagic.<name> = value``."""

    warehouse = Unicode("./warehouse", help="warehouse path or URL of the session opened on first use").tag(
        config=True
    )
    database = Unicode("default", help="current database of a new session").tag(config=True)
    master = Unicode("local[*]", help="Spark master, when the notebook has no SparkSession yet").tag(
        config=True
    )
    displaylimit = Int(20, min=0, help="most rows shown of a result (0: all of them)").tag(config=True)
    max_width = Int(
        0, min=0, help="cut shown values to this many characters on one line (0: values whole)"
    ).tag(config=True)
    autopandas = Bool(False, help="return pandas DataFrames (the whole result) instead of Spark's").tag(
        config=True
    )
    feedback = Bool(True, help="print the status of statements without rows ('Table created (0.05 s)')").tag(
        config=True
    )
    short_errors = Bool(True, help="show a failed statement's message and caret instead of a traceback").tag(
        config=True
    )
    progress = Bool(True, help="show a Spark job progress bar for statements that run long").tag(config=True)
    progress_delay = Float(1.0, help="seconds a statement runs before its progress bar appears").tag(
        config=True
    )

    def __init__(
        self, shell: Any = None, session_factory: SessionFactory | None = None, **kwargs: Any
    ) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session_factory: SessionFactory = session_factory or default_session_factory
        self.session: Any = None
        self._shown: weakref.WeakKeyDictionary[Any, Shown] = weakref.WeakKeyDictionary()
        self._formatted: set[type] = set()
        self._previous: dict[type, tuple[Any, Any]] = {}  # the printers ours replaced, per class

    # -- the session -------------------------------------------------------------------------------
    @observe("warehouse", "database", "master")
    def _settings_changed(self, change: Any) -> None:
        self.close_session()  # the next statement opens a session with the new settings

    def get_session(
        self, spark_conf: dict[str, str] | None = None, session_conf: dict[str, str] | None = None
    ) -> Any:
        """The shared SqlSession, opened on first use."""
        if self.session is None:
            try:
                self.session = self.session_factory(
                    self.warehouse,
                    self.database,
                    self.master,
                    dict(spark_conf or {}),
                    dict(session_conf or {}),
                )
            except Exception as e:
                if not self.short_errors:
                    raise
                raise self._short(e, "") from None
        return self.session

    def close_session(self) -> None:
        """Forget the session (its continuous INSERT jobs stop with it)."""
        if self.session is not None:
            stop = getattr(self.session, "stop_jobs", None)
            if callable(stop):
                stop()
            self.session = None

    @line_magic
    @magic_arguments()
    @argument("--warehouse", help="warehouse path or URL (default: SqlMagic.warehouse)")
    @argument("--database", help="current database (default: SqlMagic.database)")
    @argument("--master", help="Spark master, if no SparkSession runs yet (default: SqlMagic.master)")
    @argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="spark.* keys configure Spark, others are SET in the session (repeatable)",
    )
    def sql_connect(self, line: str) -> None:
        """Open the shared session now: ``%sql_connect --warehouse ./wh --conf table-storage.bucket=2``."""
        args = parse_argstring(self.sql_connect, line)
        spark_conf: dict[str, str] = {}
        session_conf: dict[str, str] = {}
        for pair in args.conf:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"--conf expects KEY=VALUE, got {pair!r}")
            (spark_conf if key.strip().startswith("spark.") else session_conf)[key.strip()] = value.strip()
        self.close_session()
        for name in ("warehouse", "database", "master"):
            if getattr(args, name) is not None:
                setattr(self, name, getattr(args, name))
        session = self.get_session(spark_conf, session_conf)
        print(f"Connected: warehouse {session.warehouse}, database {session.current_database}")

    # -- running SQL -------------------------------------------------------------------------------
    @no_var_expand
    @line_cell_magic
    def sql(self, line: str, cell: str | None = None) -> Any:
        """Run a script; return its last result (a Spark DataFrame) and show its first rows.

        ``%sql STATEMENT`` runs one line, ``%%sql`` the whole cell; ``VAR <<`` in front of the
        SQL (line) or alone on the ``%%sql`` line also stores the result in ``VAR``.
        """
        target, script = _parse(line, cell)
        if target is not None and self.shell is None:
            raise UsageError(f"'{target} <<' stores into IPython's namespace, but this magic has no shell")
        if not script.strip():
            return None
        session = self.get_session()
        spark = getattr(session, "spark", None)
        tracker, group, cancel, join_group = _spark_hooks(spark)
        bar = _DisplayBar() if self.progress and getattr(self.shell, "kernel", None) is not None else None

        def run(work: Callable[[], Any]) -> Any:
            def in_group() -> Any:
                join_group()
                return work()

            return run_with_progress(
                in_group, bar=bar, tracker=tracker, group=group, cancel=cancel, delay=self.progress_delay
            )

        statements = iter(session.execute(script))
        start = time.monotonic()
        last = None
        try:
            while True:
                began = time.monotonic()
                result = run(lambda: next(statements, None))
                if result is None:
                    break
                last = result
                if self.feedback and (result.dataframe is None or result.message):
                    print(f"{result.message or 'OK'} ({time.monotonic() - began:.2f} s)")
            if last is None or last.dataframe is None:
                return None
            frame = last.dataframe
            if self.autopandas:
                value = run(frame.toPandas)
            else:
                table, truncated = run(lambda: fetch(frame, self.displaylimit or None))
                self._remember(frame, Shown(table, truncated, time.monotonic() - start, self.max_width))
                value = frame
        except Exception as e:
            if not self.short_errors:
                raise
            raise self._short(e, script) from None
        if target is not None and self.shell is not None:  # no shell with a target was refused above
            self.shell.user_ns[target] = value
        return value

    @staticmethod
    def _short(error: Exception, script: str) -> SqlMagicError:
        return SqlMagicError(error_text(error, script), error)

    # -- showing results -------------------------------------------------------------------------
    def _remember(self, frame: Any, shown: Shown) -> None:
        """Keep the fetched rows with ``frame`` and teach IPython's formatters to show them."""
        self._shown[frame] = shown
        cls = type(frame)
        if cls in self._formatted or self.shell is None or self.shell.display_formatter is None:
            return
        self._formatted.add(cls)
        formatters = self.shell.display_formatter.formatters
        previous_html = formatters["text/html"].for_type(cls, self._html)
        previous_text = formatters["text/plain"].for_type(cls, self._text)
        self._previous[cls] = (previous_html, previous_text)

    def _html(self, frame: Any) -> str | None:
        shown = self._shown.get(frame)
        if shown is not None:
            return shown.html()
        previous = self._previous.get(type(frame), (None, None))[0]
        if previous is not None:
            return previous(frame)
        method = getattr(frame, "_repr_html_", None)  # e.g. Spark's eager evaluation
        return method() if callable(method) else None

    def _text(self, frame: Any, printer: Any, cycle: bool) -> None:
        shown = self._shown.get(frame)
        if shown is not None:
            printer.text(shown.text())
            return
        previous = self._previous.get(type(frame), (None, None))[1]
        if previous is not None:
            previous(frame, printer, cycle)
        else:
            printer.text(repr(frame))


class _DisplayBar:
    """A progress bar in the cell's output, redrawn through one display handle."""

    def __init__(self) -> None:
        self.handle: Any = None

    def show(self, progress: Progress) -> None:
        if self.handle is None:
            self.handle = display(progress_bundle(progress), raw=True, display_id=True)
        else:
            self.handle.update(progress_bundle(progress), raw=True)

    def clear(self) -> None:
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)


def _parse(line: str, cell: str | None) -> tuple[str | None, str]:
    """``(target variable or None, script)`` of a ``%sql`` line or a ``%%sql`` cell."""
    m = _TARGET.match(line)
    if cell is None:
        return (m.group(1), m.group(2)) if m else (None, line)
    if m and not m.group(2).strip():
        return m.group(1), cell
    if line.strip():
        raise UsageError(
            f"%%sql takes only 'VAR <<' on its own line, not {line.strip()!r}: put the SQL in the cell"
        )
    return None, cell


def _spark_hooks(spark: Any) -> tuple[Any, str | None, Callable[[], None] | None, Callable[[], None]]:
    """Status tracker, job group, its cancellation, and joining the group (from the worker thread).

    None where Spark offers none (Spark Connect, a test's fake session): no progress, no cancel.
    """
    try:
        context = spark.sparkContext
        tracker = context.statusTracker()
    except Exception:  # noqa: BLE001
        return None, None, None, lambda: None
    group = f"dyntable-notebook-{uuid.uuid4().hex}"

    def join() -> None:
        context.setJobGroup(group, "dyntable %sql", interruptOnCancel=True)

    return tracker, group, lambda: context.cancelJobGroup(group), join


def load_ipython_extension(ipython: Any) -> SqlMagic:
    """Register the magics on ``ipython`` (idempotent: ``%reload_ext`` keeps the open session)."""
    old = [c for c in ipython.configurables if type(c).__name__ == "SqlMagic"]
    magic = SqlMagic(shell=ipython)
    if old:
        magic.session = old[-1].session
        for c in old:
            ipython.configurables.remove(c)
    ipython.register_magics(magic)
    ipython.configurables.append(magic)  # so that %config SqlMagic.<name> = … reaches it
    return magic


def current_session() -> Any:
    """The SqlSession the magics run on (opened if needed), for Python code in the same notebook."""
    from IPython import get_ipython

    ipython = get_ipython()
    magics = [c for c in getattr(ipython, "configurables", []) if isinstance(c, SqlMagic)]
    if not magics:
        raise RuntimeError("the sqlext magics are not loaded: run %load_ext sqlext first")
    return magics[-1].get_session()
