"""`dyntable-sql`: the spark-sql style command line (``-e``, ``-f``, ``-i``, interactive prompt).

Runs SQL through a ``SqlSession`` (sqlext.session) over a SparkSession built by
``sqlext.spark.build_spark`` and prints each statement's result (formats: sqlext.output).

Invariants:
* exit codes: 0 success, 1 a statement failed (a script stops at its first failing statement,
  later statements never run), 2 usage error (bad options, unreadable script file), 130 Ctrl-C;
* results go to stdout; errors, status lines ("Table created (0.05 s)", "3 rows (0.12 s)") and
  the progress line go to stderr, so that stdout holds only data;
* an error prints as ``Error [SQLSTATE] message`` (plus the SQL caret snippet), never as a
  Python traceback unless ``--verbose``;
* each statement runs (and its rows are fetched) in a worker thread, so the main thread can draw
  the progress line and turn Ctrl-C into a Spark job cancellation.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, TextIO

import pyarrow as pa

from sqlext.cli.repl import HISTORY_FILE, run_repl, stream_reader
from sqlext.output import OUTPUT_FORMATS, format_error, render_table, row_count_text, write_stream

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEFAULT_TABLE_ROWS = 1000
PROGRESS_DELAY = 1.0  # seconds a statement runs before the progress line appears
PROGRESS_INTERVAL = 0.25
_BAR_WIDTH = 24


@dataclass(frozen=True)
class CliConfig:
    """The parsed command line."""

    warehouse: str
    database: str = "default"
    master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    session_conf: dict[str, str] = field(default_factory=dict)
    output: str = "table"
    max_rows: int | None = None  # None: 1000 for table output, everything otherwise; 0: no limit
    max_width: int = 0  # table output: 0 shows values whole, N cuts them to N characters
    silent: bool = False
    verbose: bool = False
    fast_start: bool | None = None  # None: $DYNTABLE_FAST_START decides (sqlext.spark)

    @property
    def row_limit(self) -> int | None:
        """The most rows printed per result, or None for all."""
        if self.max_rows is None:
            return DEFAULT_TABLE_ROWS if self.output == "table" else None
        return self.max_rows or None


SessionFactory = Callable[[CliConfig], tuple[Any, Any]]
"""Builds ``(SqlSession, SparkSession)`` from the command line; tests pass a fake."""


def default_session_factory(config: CliConfig) -> tuple[Any, Any]:
    """Start Spark and open a ``SqlSession`` on the warehouse."""
    from sqlext.session import SqlSession
    from sqlext.spark import build_spark

    conf = dict(config.spark_conf)
    # Every failure reaches the user as a typed error the CLI prints; Spark's own ERROR logs of a
    # failed task (a NULL primary key, say) would only repeat it with 100 lines of stack traces.
    conf.setdefault("dyntable.log-level", "ERROR" if config.verbose else "OFF")
    spark = build_spark(config.master, conf, fast_start=config.fast_start)
    return SqlSession(spark, config.warehouse, config.database, config.session_conf), spark


def _version() -> str:
    def of(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return f"dyntable-sql {of('dyntable')} (pyspark {of('pyspark')})"


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or more, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dyntable-sql``."""
    p = argparse.ArgumentParser(
        prog="dyntable-sql",
        description="Run Spark SQL over dyntable managed tables (Apache Paimon format).",
        epilog="Without -e or -f: an interactive prompt on a terminal, else the script read from stdin.",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("-e", "--execute", metavar="SQL", help="run these statements and exit")
    src.add_argument("-f", "--file", metavar="FILE", help="run the statements of this file and exit")
    p.add_argument(
        "-i", "--init", metavar="FILE", help="run this file first, printing nothing unless it fails"
    )
    p.add_argument("--database", default="default", help="current database at start (default: %(default)s)")
    p.add_argument("--warehouse", default="./warehouse", help="warehouse path or URL (default: %(default)s)")
    p.add_argument("--master", default="local[*]", help="Spark master (default: %(default)s)")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="spark.* keys configure Spark; other keys are SET in the session (repeatable)",
    )
    p.add_argument("--output", choices=OUTPUT_FORMATS, default="table", help="result format (default: table)")
    p.add_argument("-S", "--silent", action="store_true", help="print only results and errors")
    p.add_argument(
        "--max-rows",
        type=_non_negative,
        metavar="N",
        help=f"print at most N rows per result (default: {DEFAULT_TABLE_ROWS} for table output, "
        "all otherwise; 0: no limit)",
    )
    p.add_argument(
        "--max-width",
        type=_non_negative,
        default=0,
        metavar="N",
        help="table output: cut values to N characters on one line (default: 0, values whole; "
        "a multi-line value spans several lines)",
    )
    p.add_argument(
        "--fast-start",
        action="store_true",
        default=None,
        help="local Spark only: cap the JVM's JIT at C1, cheaper for short scripts but ~10x slower "
        "for long queries (default: off, or $DYNTABLE_FAST_START)",
    )
    p.add_argument("--verbose", action="store_true", help="print Python tracebacks of errors")
    p.add_argument("--version", action="version", version=_version())
    return p


# --------------------------------------------------------------------------- progress


def progress_text(tracker: Any, elapsed: float) -> str:
    """The progress line for a statement that has run ``elapsed`` seconds.

    Args:
        tracker: a pyspark ``StatusTracker`` (``getActiveStageIds()``, ``getStageInfo(id)`` with
            ``numTasks``/``numCompletedTasks``), or None when Spark offers none.
        elapsed: seconds since the statement started.

    Returns:
        E.g. ``[=========>          ] 40/100 tasks, 2 stages, 3.2 s``, or ``running... 3.2 s``
        when no Spark stage is active or the tracker fails.
    """
    infos = []
    if tracker is not None:
        try:
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    infos.append(info)
        except Exception:  # the tracker talks to the JVM: a dying context must not break the CLI
            infos = []
    total = sum(int(i.numTasks) for i in infos)
    if not total:
        return f"running... {elapsed:.1f} s"
    done = min(sum(int(i.numCompletedTasks) for i in infos), total)
    filled = _BAR_WIDTH * done // total
    bar = "=" * filled + (">" if filled < _BAR_WIDTH else "") + " " * max(0, _BAR_WIDTH - filled - 1)
    stages = "1 stage" if len(infos) == 1 else f"{len(infos)} stages"
    return f"[{bar}] {done}/{total} tasks, {stages}, {elapsed:.1f} s"


class ProgressLine:
    """One status line on a terminal, redrawn in place with a carriage return."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = 0

    def show(self, text: str) -> None:
        """Replace the line by ``text`` (cut to the terminal width)."""
        width = max(10, _terminal_width() - 1)
        text = text[:width]
        self.stream.write("\r" + text + " " * max(0, self.shown - len(text)))
        self.stream.flush()
        self.shown = len(text)

    def clear(self) -> None:
        """Erase the line, if one is shown."""
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0


def _terminal_width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


def run_with_progress(
    work: Callable[[], Any],
    *,
    line: ProgressLine | None,
    tracker: Any = None,
    cancel: Callable[[], None] | None = None,
    delay: float = PROGRESS_DELAY,
    interval: float = PROGRESS_INTERVAL,
) -> Any:
    """Run ``work`` in a worker thread; draw progress on ``line`` once it has run ``delay`` seconds.

    Args:
        work: the statement (and fetching its rows).
        line: where to draw progress, or None for no progress display.
        tracker: Spark's status tracker for :func:`progress_text`.
        cancel: called on Ctrl-C to stop the running Spark jobs.
        delay: seconds before the first progress line.
        interval: seconds between redraws.

    Returns:
        What ``work`` returned.

    Raises:
        BaseException: whatever ``work`` raised, and KeyboardInterrupt on Ctrl-C.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as e:  # handed to the main thread, which re-raises it
            box["error"] = e

    thread = threading.Thread(target=target, name="dyntable-sql-statement", daemon=True)
    start = time.monotonic()
    thread.start()
    try:
        while thread.is_alive():
            thread.join(interval)
            elapsed = time.monotonic() - start
            if line is not None and thread.is_alive() and elapsed >= delay:
                line.show(progress_text(tracker, elapsed))
    except KeyboardInterrupt:
        if cancel is not None:
            try:
                cancel()
            except Exception:
                pass  # best effort: the statement may have just finished
        raise
    finally:
        if line is not None:
            line.clear()
    if "error" in box:
        raise box["error"]
    return box.get("value")


# --------------------------------------------------------------------------- running statements


@dataclass
class _Fetched:
    """A statement result with its rows fetched as Arrow."""

    result: Any
    table: pa.Table | None = None
    truncated: bool = False
    total: int | None = None  # all rows of the result, when known


class Runner:
    """Runs scripts on a session and prints their results; one per command line."""

    def __init__(
        self,
        session: Any,
        config: CliConfig,
        *,
        out: TextIO,
        err: TextIO,
        tracker: Any = None,
        cancel: Callable[[], None] | None = None,
    ) -> None:
        """Create the runner.

        Args:
            session: the ``SqlSession`` (``execute(script)`` yields ``StatementResult``s).
            config: the command line.
            out: where results go.
            err: where errors, status lines and progress go.
            tracker: Spark's status tracker, for the progress line.
            cancel: stops running Spark jobs (on Ctrl-C).
        """
        self.session = session
        self.config = config
        self.out = out
        self.err = err
        self.tracker = tracker
        self.cancel = cancel
        interactive_err = bool(getattr(err, "isatty", lambda: False)())
        self.progress = ProgressLine(err) if interactive_err and not config.silent else None

    def run_script(self, script: str, *, quiet: bool = False, source: str | None = None) -> int:
        """Run every statement of ``script`` in order, stopping at the first failure.

        Args:
            script: the SQL text.
            quiet: print nothing but errors (for ``-i``; rows are not even fetched).
            source: the file the script came from, named in error messages.

        Returns:
            ``EXIT_OK``, ``EXIT_FAILED`` (the error is printed) or ``EXIT_INTERRUPTED``.
        """
        state: dict[str, Iterator[Any]] = {}

        def step() -> _Fetched | None:
            if "it" not in state:
                state["it"] = iter(self.session.execute(script))
            result = next(state["it"], None)
            if result is None:
                return None
            fetched = _Fetched(result)
            if result.dataframe is not None and not quiet:
                self._fetch(fetched)
            return fetched

        while True:
            start = time.monotonic()
            try:
                fetched = run_with_progress(
                    step,
                    line=self.progress,
                    tracker=self.tracker,
                    cancel=self.cancel,
                    delay=PROGRESS_DELAY,
                    interval=PROGRESS_INTERVAL,
                )
            except KeyboardInterrupt:
                self._flush_out()
                self.err.write("Cancelled\n")
                self.err.flush()
                return EXIT_INTERRUPTED
            except Exception as e:
                self._report(e, script, source)
                return EXIT_FAILED
            if fetched is None:
                return EXIT_OK
            if not quiet:
                self._print(fetched, time.monotonic() - start)

    def _fetch(self, fetched: _Fetched) -> None:
        df = fetched.result.dataframe
        limit = self.config.row_limit
        if limit is None:
            fetched.table = df.toArrow()
            fetched.total = fetched.table.num_rows
            return
        # One row past the limit tells whether there are more, without fetching them all.
        limited = df.limit(limit + 1) if hasattr(df, "limit") else df
        table = limited.toArrow()
        if table.num_rows > limit:
            fetched.truncated = True
            fetched.total = None if limited is not df else table.num_rows
            table = table.slice(0, limit)
        else:
            fetched.total = table.num_rows
        fetched.table = table

    def _print(self, fetched: _Fetched, elapsed: float) -> None:
        result, table, silent = fetched.result, fetched.table, self.config.silent
        timing = f" ({elapsed:.2f} s)"
        if table is not None:
            if self.config.output == "table":
                self.out.write(render_table(table, self.config.max_width))
            else:
                write_stream(table, self.config.output, self.out)  # type: ignore[arg-type]
            self._flush_out()
            shown = table.num_rows
            if fetched.truncated:
                if fetched.total is not None:
                    note = f"{fetched.total} rows, showing first {shown}"
                else:
                    note = f"more than {shown} rows, showing first {shown}"
                self._status(f"showing first {shown} rows" if silent else note + timing, force=True)
            else:
                if result.message:
                    self._status(result.message)
                self._status(row_count_text(shown) + timing)
        else:
            self._status((result.message or "OK") + timing)

    def _status(self, text: str, *, force: bool = False) -> None:
        if force or not self.config.silent:
            self.err.write(text + "\n")
            self.err.flush()

    def _flush_out(self) -> None:
        try:
            self.out.flush()
        except ValueError:
            pass  # a closed stream: nothing to flush

    def _report(self, error: BaseException, script: str, source: str | None) -> None:
        self._flush_out()
        text = format_error(error, script=script, verbose=self.config.verbose)
        if source is not None:
            first, nl, rest = text.partition("\n")
            text = f"{first}\n  in {source}" + (nl + rest if rest else "")
        self.err.write(text + "\n")
        self.err.flush()


# --------------------------------------------------------------------------- main


def _read_file(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ValueError(f"cannot read {what} {path!r}: {reason}") from None


def _spark_hooks(spark: Any) -> tuple[Any, Callable[[], None] | None]:
    """Spark's status tracker and job-cancelling function, or None where Spark has none (Connect)."""
    try:
        context = spark.sparkContext
        return context.statusTracker(), context.cancelAllJobs
    except Exception:
        return None, None


def main(
    argv: list[str] | None = None,
    *,
    session_factory: SessionFactory | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``dyntable-sql``.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        session_factory: builds ``(SqlSession, SparkSession)`` (default: start Spark).
        stdin: input (default ``sys.stdin``).
        stdout: results (default ``sys.stdout``).
        stderr: errors, status and progress (default ``sys.stderr``).

    Returns:
        The exit code: 0 success, 1 a statement failed, 2 usage error, 130 interrupted.
    """
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error argparse already printed
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    try:
        from sqlext.spark import parse_conf

        spark_conf, session_conf = parse_conf(args.conf)
        init = _read_file(args.init, "init file") if args.init else None
        script = _read_file(args.file, "script file") if args.file else args.execute
    except ValueError as e:
        stderr.write(f"dyntable-sql: error: {e}\n")
        return EXIT_USAGE
    interactive = script is None and bool(getattr(stdin, "isatty", lambda: False)())
    if script is None and not interactive:
        script = stdin.read()  # not a terminal: stdin is the script
    warehouse = args.warehouse if "://" in args.warehouse else os.path.abspath(args.warehouse)
    config = CliConfig(
        warehouse=warehouse,
        database=args.database,
        master=args.master,
        spark_conf=spark_conf,
        session_conf=session_conf,
        output=args.output,
        max_rows=args.max_rows,
        max_width=args.max_width,
        silent=args.silent,
        verbose=args.verbose,
        fast_start=args.fast_start,
    )
    owns_spark = session_factory is None
    spark = None
    try:
        try:
            session, spark = (session_factory or default_session_factory)(config)
        except Exception as e:
            stderr.write(format_error(e, verbose=config.verbose) + "\n")
            return EXIT_FAILED
        tracker, cancel = _spark_hooks(spark)
        runner = Runner(session, config, out=stdout, err=stderr, tracker=tracker, cancel=cancel)
        if init is not None:
            code = runner.run_script(init, quiet=True, source=args.init)
            if code != EXIT_OK:
                return code
        if script is not None:
            return runner.run_script(script, source=args.file)
        uses_terminal = stdin is sys.stdin
        return run_repl(
            runner.run_script,
            database=lambda: str(getattr(session, "current_database", None) or config.database),
            read_line=input if uses_terminal else stream_reader(stdin, stdout),
            out=stdout,
            history_file=HISTORY_FILE if uses_terminal else None,
        )
    except KeyboardInterrupt:  # Ctrl-C outside a statement (e.g. while Spark starts)
        stderr.write("Cancelled\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`dyntable-sql ... | head`): stop quietly, as other CLIs do.
        _silence_stdout()
        return EXIT_OK
    finally:
        if owns_spark and spark is not None:
            try:
                spark.stop()
            except Exception:
                pass  # exiting anyway; the JVM goes with the process


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
