"""dyntable-sql command line: options, formats, truncation, errors, exit codes, progress, prompt.

A fake session stands in for SqlSession (no JVM). It understands a tiny language, one statement
each: ``rows N`` (a result of N rows), ``create`` (a status message), ``use DB``, ``fail``
(a SqlError at the statement), ``missing`` (an engine NoSuchTableError), ``spark`` (a pyspark
AnalysisException), ``boom`` (a Python bug), ``sleep S`` (a slow statement), ``interrupt``
(Ctrl-C while running) and ``echo TEXT`` (one row holding TEXT).
"""

from __future__ import annotations

import io
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

from engine.errors import NoSuchDatabaseError, NoSuchTableError
from sqlext.cli import main as cli
from sqlext.cli.main import (
    CliConfig,
    ProgressLine,
    Runner,
    main,
    progress_text,
    run_with_progress,
)
from sqlext.cli.repl import complete_end, is_blank, prompts, run_repl, stream_reader
from sqlext.errors import SqlAnalysisError
from sqlext.parse.splitter import Statement, split_statements
from sqlext.spark import parse_conf


class FakeDataFrame:
    def __init__(self, table: pa.Table, log: list[Any]) -> None:
        self.table = table
        self.log = log

    def toArrow(self) -> pa.Table:  # noqa: N802 (pyspark's name)
        self.log.append(("toArrow", self.table.num_rows))
        return self.table

    def limit(self, n: int) -> FakeDataFrame:
        self.log.append(("limit", n))
        return FakeDataFrame(self.table.slice(0, n), self.log)


class PlainDataFrame:
    """A result without ``limit``: the CLI must still truncate it."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def toArrow(self) -> pa.Table:  # noqa: N802
        return self.table


@dataclass
class FakeResult:
    statement: Statement
    dataframe: Any
    message: str | None


class _SparkAnalysisError(AnalysisException):
    def getSqlState(self) -> str:  # noqa: N802
        return "42P01"


class FakeSession:
    def __init__(
        self, spark: Any, warehouse: str, database: str = "default", conf: dict | None = None
    ) -> None:
        self.spark = spark
        self.warehouse = warehouse
        self.current_database = database
        self.conf = dict(conf or {})
        self.ran: list[str] = []
        self.log: list[Any] = []
        self.plain = False

    def execute(self, script: str):
        for statement in split_statements(script):
            self.ran.append(statement.text)
            yield self._run(statement, script)

    def _run(self, statement: Statement, script: str) -> FakeResult:
        word, _, arg = statement.text.partition(" ")
        word = word.lower()
        if word == "rows":
            n = int(arg)
            table = pa.table({"id": list(range(n)), "name": [f"n{i}" if i % 2 else None for i in range(n)]})
            df = PlainDataFrame(table) if self.plain else FakeDataFrame(table, self.log)
            return FakeResult(statement, df, None)
        if word == "echo":
            return FakeResult(statement, FakeDataFrame(pa.table({"text": [arg]}), self.log), None)
        if word == "create":
            return FakeResult(statement, None, "Table created")
        if word == "use":
            self.current_database = arg
            return FakeResult(statement, None, None)
        if word == "fail":
            raise SqlAnalysisError.at(
                "unknown table t: create it first", script, statement.offset, sqlstate="42P01"
            )
        if word == "missing":
            raise NoSuchTableError("table default.t does not exist")
        if word == "spark":
            raise _SparkAnalysisError(
                "[TABLE_OR_VIEW_NOT_FOUND] no such view. SQLSTATE: 42P01;\n'Project [*]\n"
            )
        if word == "boom":
            raise RuntimeError("bug in the session")
        if word == "sleep":
            time.sleep(float(arg))
            return FakeResult(statement, None, "slept")
        if word == "interrupt":
            raise KeyboardInterrupt
        raise AssertionError(f"fake session cannot run {statement.text!r}")


class FakeContext:
    def __init__(self) -> None:
        self.cancelled = 0

    def statusTracker(self) -> Any:  # noqa: N802
        return None

    def cancelAllJobs(self) -> None:  # noqa: N802
        self.cancelled += 1


class FakeSpark:
    def __init__(self, master: str, conf: dict[str, str]) -> None:
        self.master = master
        self.conf = conf
        self.sparkContext = FakeContext()
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class Factory:
    """Records the config and the session it built."""

    def __init__(self, fail: Exception | None = None, plain: bool = False) -> None:
        self.fail = fail
        self.plain = plain
        self.config: CliConfig | None = None
        self.session: FakeSession | None = None

    def __call__(self, config: CliConfig) -> tuple[FakeSession, FakeSpark]:
        self.config = config
        if self.fail is not None:
            raise self.fail
        spark = FakeSpark(config.master, config.spark_conf)
        self.session = FakeSession(spark, config.warehouse, config.database, config.session_conf)
        self.session.plain = self.plain
        return self.session, spark


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(argv: list[str], *, stdin: io.StringIO | None = None, factory: Factory | None = None, err=None):
    factory = factory or Factory()
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    code = main(argv, session_factory=factory, stdin=stdin or io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue(), factory


# --------------------------------------------------------------------------- options


def test_execute_prints_table_and_status() -> None:
    code, out, err, factory = run(["-e", "rows 2"])
    assert code == 0
    assert out.splitlines() == [
        "+----+------+",
        "| id | name |",
        "+----+------+",
        "|  0 | NULL |",
        "|  1 | n1   |",
        "+----+------+",
    ]
    assert out.endswith("+\n")
    assert err.startswith("2 rows (") and err.endswith(" s)\n")
    assert factory.session.ran == ["rows 2"]


def test_defaults_reach_the_session() -> None:
    _, _, _, factory = run(["-e", "create"])
    config = factory.config
    assert config.warehouse == os.path.abspath("./warehouse")
    assert config.database == "default"
    assert config.master == "local[*]"
    assert config.session_conf == {}
    assert config.spark_conf == {"spark.ui.showConsoleProgress": "false"}
    assert factory.session.current_database == "default"


def test_database_warehouse_master_and_conf(tmp_path) -> None:
    code, _, _, factory = run(
        [
            "-e", "create",
            "--database", "sales",
            "--warehouse", "s3://bucket/wh",
            "--master", "local[2]",
            "--conf", "spark.sql.shuffle.partitions=3",
            "--conf", "table-storage.bucket=4",
            "--conf", "spark.ui.showConsoleProgress=true",
        ]
    )  # fmt: skip
    assert code == 0
    assert factory.config.warehouse == "s3://bucket/wh"
    assert factory.session.current_database == "sales"
    assert factory.session.spark.master == "local[2]"
    assert factory.session.spark.conf == {
        "spark.sql.shuffle.partitions": "3",
        "spark.ui.showConsoleProgress": "true",
    }
    assert factory.session.conf == {"table-storage.bucket": "4"}
    _, _, _, factory = run(["-e", "create", "--warehouse", str(tmp_path / "wh")])
    assert factory.config.warehouse == str(tmp_path / "wh")
    code, _, _, factory = run(["-e", "create", "--warehouse", "rel/wh"])
    assert factory.config.warehouse == os.path.join(os.getcwd(), "rel", "wh")


def test_parse_conf() -> None:
    assert parse_conf(["spark.a=1", "x.y = z=w "]) == (
        {"spark.a": "1", "spark.ui.showConsoleProgress": "false"},
        {"x.y": "z=w"},
    )
    for bad in (["novalue"], ["=1"]):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            parse_conf(bad)


def test_file_and_init(tmp_path) -> None:
    init = tmp_path / "init.sql"
    init.write_text("use sales;\nrows 3;\ncreate;\n")
    script = tmp_path / "script.sql"
    script.write_text("-- a comment\necho hello;\n")
    code, out, err, factory = run(["-i", str(init), "-f", str(script)])
    assert code == 0
    assert factory.session.ran == ["use sales", "rows 3", "create", "echo hello"]
    assert "hello" in out and "| 0 |" not in out  # init printed nothing, rows not even fetched
    assert "Table created" not in err
    assert err.startswith("1 row (")
    assert ("toArrow", 3) not in factory.session.log


def test_init_failure_stops_everything(tmp_path) -> None:
    init = tmp_path / "init.sql"
    init.write_text("create;\nfail;\n")
    code, out, err, factory = run(["-i", str(init), "-e", "create"])
    assert code == 1
    assert factory.session.ran == ["create", "fail"]
    assert err.splitlines()[:3] == [
        "Error [42P01] unknown table t: create it first",
        f"  in {init}",
        "  line 2, column 1",
    ]


def test_unreadable_files_are_usage_errors(tmp_path) -> None:
    code, _, err, factory = run(["-f", str(tmp_path / "nope.sql")])
    assert code == 2
    assert "cannot read script file" in err and "nope.sql" in err
    assert factory.config is None  # Spark never started
    code, _, err, _ = run(["-i", str(tmp_path / "init.sql"), "-e", "create"])
    assert code == 2 and "cannot read init file" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["-e", "create", "-f", "x.sql"],
        ["--output", "xml", "-e", "create"],
        ["--max-rows", "-1", "-e", "create"],
        ["--max-rows", "many", "-e", "create"],
        ["--conf", "novalue", "-e", "create"],
        ["--no-such-option"],
    ],
)
def test_usage_errors_exit_2(argv, capsys) -> None:
    code, out, err, factory = run(argv)
    assert code == 2
    assert factory.config is None
    assert "usage: dyntable-sql" in capsys.readouterr().err or "error:" in err


def test_version_and_help(capsys) -> None:
    code, _, _, factory = run(["--version"])
    assert code == 0 and factory.config is None
    assert capsys.readouterr().out.startswith("dyntable-sql ")
    assert run(["--help"])[0] == 0
    assert "--warehouse" in capsys.readouterr().out


# --------------------------------------------------------------------------- formats and truncation


def test_output_formats_are_exact() -> None:
    _, out, _, _ = run(["--output", "tsv", "-e", "rows 3"])
    assert out == "id\tname\n0\tNULL\n1\tn1\n2\tNULL\n"
    _, out, _, _ = run(["--output", "csv", "-e", "rows 2"])
    assert out == "id,name\n0,\n1,n1\n"
    _, out, _, _ = run(["--output", "json", "-e", "rows 2; echo 'a\"b'"])
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": 0, "name": None},
        {"id": 1, "name": "n1"},
        {"text": "'a\"b'"},
    ]


def test_machine_formats_are_not_truncated() -> None:
    code, out, _, factory = run(["--output", "csv", "-e", "rows 1500"])
    assert code == 0
    assert len(out.splitlines()) == 1501
    assert ("toArrow", 1500) in factory.session.log
    assert not any(entry[0] == "limit" for entry in factory.session.log)


def test_table_output_is_truncated_to_1000_rows() -> None:
    code, out, err, factory = run(["-e", "rows 1500"])
    assert code == 0
    assert ("limit", 1001) in factory.session.log  # only one row past the limit is fetched
    assert len(out.splitlines()) == 1000 + 4
    assert err.startswith("more than 1000 rows, showing first 1000 (")


def test_max_rows_option() -> None:
    code, out, err, _ = run(["--max-rows", "2", "-e", "rows 5"])
    assert code == 0
    assert len(out.splitlines()) == 2 + 4
    assert "showing first 2" in err
    # Without DataFrame.limit all rows are fetched, so the total is known.
    _, _, err, _ = run(["--max-rows", "2", "-e", "rows 5"], factory=Factory(plain=True))
    assert err.startswith("5 rows, showing first 2 (")
    _, out, _, _ = run(["--max-rows", "1", "--output", "tsv", "-e", "rows 5"])
    assert out == "id\tname\n0\tNULL\n"
    _, out, err, factory = run(["--max-rows", "0", "-e", "rows 1200"])
    assert len(out.splitlines()) == 1200 + 4 and "showing" not in err
    _, out, err, _ = run(["--max-rows", "3", "-e", "rows 3"])
    assert err.startswith("3 rows (")


def test_values_are_whole_unless_max_width(capsys) -> None:
    long = "x" * 30 + "-tail-that-tells-files-apart-" + "y" * 30
    code, out, _, _ = run(["-e", f"echo {long}"])
    assert code == 0 and long in out
    _, out, _, _ = run(["--max-width", "20", "-e", f"echo {long}"])
    assert out.splitlines()[3] == "| " + long[:17] + "... |"
    _, out, _, _ = run(["--max-width", "0", "-e", "echo first\nsecond"])
    assert out.splitlines()[3:5] == ["| first +|", "| second |"]
    code, _, _, _ = run(["--max-width", "-3", "-e", "create"])
    assert code == 2 and "argument --max-width" in capsys.readouterr().err


def test_silent() -> None:
    code, out, err, _ = run(["--silent", "-e", "create; rows 2"])
    assert code == 0 and err == ""
    assert "| id |" in out
    _, _, err, _ = run(["-S", "--max-rows", "1", "-e", "rows 4"])
    assert err == "showing first 1 rows\n"  # truncation is still said


def test_status_lines() -> None:
    _, out, err, _ = run(["-e", "create; use x; rows 1"])
    lines = err.splitlines()
    assert lines[0].startswith("Table created (")
    assert lines[1].startswith("OK (")
    assert lines[2].startswith("1 row (")
    assert out.count("+----+") == 3


# --------------------------------------------------------------------------- errors and exit codes


def test_script_stops_at_first_failure() -> None:
    code, out, err, factory = run(["-e", "rows 1;\ncreate;\n  fail;\ncreate"])
    assert code == 1
    assert factory.session.ran == ["rows 1", "create", "fail"]
    assert "| 0 |" in out.replace("|  0 |", "| 0 |")
    assert err.splitlines()[-4:] == [
        "Error [42P01] unknown table t: create it first",
        "  line 3, column 3",
        "    fail;",
        "    ^",
    ]


@pytest.mark.parametrize(
    ("statement", "first_line"),
    [
        ("missing", "Error [42P01] table default.t does not exist"),
        ("spark", "Error [42P01] [TABLE_OR_VIEW_NOT_FOUND] no such view. SQLSTATE: 42P01"),
        ("boom", "Error [XX000] RuntimeError: bug in the session"),
    ],
)
def test_error_kinds(statement, first_line) -> None:
    code, _, err, _ = run(["-e", statement])
    assert code == 1
    assert err.splitlines()[0] == first_line
    assert "Traceback" not in err
    assert "Project" not in err


def test_verbose_shows_traceback() -> None:
    code, _, err, _ = run(["--verbose", "-e", "boom"])
    assert code == 1
    assert "Traceback (most recent call last)" in err and "RuntimeError: bug in the session" in err


def test_session_creation_failure() -> None:
    code, _, err, _ = run(
        ["--database", "nope", "-e", "create"], factory=Factory(NoSuchDatabaseError("no database nope"))
    )
    assert code == 1
    assert err == "Error [42P01] no database nope\n"


def test_interrupt_cancels_and_exits_130() -> None:
    code, _, err, factory = run(["-e", "create; interrupt; create"])
    assert code == 130
    assert err.splitlines()[-1] == "Cancelled"
    assert factory.session.ran == ["create", "interrupt"]


def test_broken_pipe_is_quiet(monkeypatch) -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError

    monkeypatch.setattr(cli, "_silence_stdout", lambda: None)
    code = main(
        ["-e", "rows 3"],
        session_factory=Factory(),
        stdin=io.StringIO(),
        stdout=Closed(),
        stderr=io.StringIO(),
    )
    assert code == 0


def test_default_factory_spark_is_stopped(monkeypatch) -> None:
    made: list[FakeSpark] = []

    def factory(config: CliConfig):
        session, spark = Factory()(config)
        made.append(spark)
        return session, spark

    monkeypatch.setattr(cli, "default_session_factory", factory)
    out, err = io.StringIO(), io.StringIO()
    assert main(["-e", "create"], stdin=io.StringIO(), stdout=out, stderr=err) == 0
    assert made[0].stopped
    # A session handed in by the caller belongs to the caller: it stays running.
    factory_ = Factory()
    run(["-e", "create"], factory=factory_)
    assert not factory_.session.spark.stopped


# --------------------------------------------------------------------------- stdin and the prompt


def test_stdin_that_is_not_a_terminal_is_a_script() -> None:
    code, out, _, factory = run([], stdin=io.StringIO("create;\necho piped;\n"))
    assert code == 0
    assert factory.session.ran == ["create", "echo piped"]
    assert "piped" in out
    code, _, _, _ = run([], stdin=io.StringIO("create; fail; create;"))
    assert code == 1


def test_interactive_prompt() -> None:
    stdin = TTY(
        "rows 1\n  ;\nuse sales;\necho 'a;\nb';\n\n-- just a comment\nfail;\ncreate; quit;\ncreate;\n"
    )
    code, out, err, factory = run([], stdin=stdin)
    assert code == 0
    assert factory.session.ran == ["rows 1", "use sales", "echo 'a;\nb'", "fail", "create"]
    main_prompt, more = prompts("default")
    sales, sales_more = prompts("sales")
    assert out.startswith(main_prompt + more + "+----+")
    assert sales_more in out
    assert "Error [42P01] unknown table t" in err  # the error was reported and the loop went on
    assert err.count("Table created") == 1


def test_interactive_end_of_input_and_init(tmp_path) -> None:
    init = tmp_path / "init.sql"
    init.write_text("use ops;")
    code, out, _, factory = run(["-i", str(init)], stdin=TTY("create;\n"))
    assert code == 0
    assert out == prompts("ops")[0] * 2 + "\n"
    assert factory.session.ran == ["use ops", "create"]


def test_prompts() -> None:
    main_prompt, more = prompts("default")
    assert main_prompt == "dyntable-sql (default)> "
    assert more.endswith("-> ") and len(more) == len(main_prompt) and not more.strip("-> ")


def test_complete_end() -> None:
    assert complete_end("select 1") == -1
    assert complete_end("select 1;") == 9
    assert complete_end("select ';'") == -1
    assert complete_end("select 'a;") == -1
    assert complete_end("select 1; select ';") == 9
    assert complete_end("select 1 -- ;") == -1
    assert complete_end("select 1 -- ;\n;") == 15
    assert complete_end("select /* ; */ 1") == -1
    assert complete_end("select /* ; ") == -1
    assert complete_end("select `a;b`;x") == 13
    assert complete_end("a; b; c") == 5
    assert is_blank("  -- x\n /* y */ ") and not is_blank("/* open") and not is_blank(" x")


def test_run_repl_directly() -> None:
    lines = iter(["select 1; sel", "ect 2;", "", "/* c", "*/ x", ";", "EXIT ;"])
    seen_prompts: list[str] = []
    ran: list[str] = []

    def read_line(prompt: str) -> str:
        seen_prompts.append(prompt)
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    assert run_repl(lambda text: ran.append(text) or 0, database=lambda: "db", read_line=read_line) == 0
    assert ran == ["select 1;", "sel\nect 2;", "/* c\n*/ x\n;"]
    main_prompt, more = prompts("db")
    assert seen_prompts == [main_prompt, more, main_prompt, main_prompt, more, more, main_prompt]


def test_repl_ctrl_c_clears_buffer_and_ctrl_d_leaves() -> None:
    events: list[Any] = ["select", KeyboardInterrupt(), "x;", EOFError()]
    ran: list[str] = []

    def read_line(prompt: str) -> str:
        event = events.pop(0)
        if isinstance(event, BaseException):
            raise event
        return event

    out = io.StringIO()
    assert (
        run_repl(lambda text: ran.append(text) or 0, database=lambda: "d", read_line=read_line, out=out) == 0
    )
    assert ran == ["x;"]
    assert out.getvalue() == "^C\n\n"


def test_repl_history_file(tmp_path, monkeypatch) -> None:
    readline = pytest.importorskip("readline")
    history = tmp_path / "hist"
    saved: list[str] = []
    monkeypatch.setattr(readline, "read_history_file", lambda path: saved.append(("read", path)))
    monkeypatch.setattr(readline, "write_history_file", lambda path: saved.append(("write", path)))
    run_repl(lambda text: 0, database=lambda: "d", read_line=lambda p: (_ for _ in ()).throw(EOFError()),
             history_file=str(history))  # fmt: skip
    assert saved == [("read", str(history)), ("write", str(history))]


def test_stream_reader() -> None:
    out = io.StringIO()
    read = stream_reader(io.StringIO("a\r\nb"), out)
    assert read("p> ") == "a" and read("q> ") == "b"
    with pytest.raises(EOFError):
        read("r> ")
    assert out.getvalue() == "p> q> r> "


# --------------------------------------------------------------------------- progress


@dataclass
class StageInfo:
    stageId: int  # noqa: N815 (pyspark's field names)
    numTasks: int  # noqa: N815
    numCompletedTasks: int  # noqa: N815
    numActiveTasks: int = 0  # noqa: N815


class FakeTracker:
    def __init__(self, stages: dict[int, StageInfo | None], fail: bool = False) -> None:
        self.stages = stages
        self.fail = fail

    def getActiveStageIds(self) -> list[int]:  # noqa: N802
        if self.fail:
            raise RuntimeError("context stopped")
        return list(self.stages)

    def getStageInfo(self, stage_id: int) -> StageInfo | None:  # noqa: N802
        return self.stages[stage_id]


def test_progress_text() -> None:
    assert progress_text(None, 1.25) == "running... 1.2 s"
    assert progress_text(FakeTracker({}), 2.0) == "running... 2.0 s"
    assert progress_text(FakeTracker({}, fail=True), 2.0) == "running... 2.0 s"
    one = progress_text(FakeTracker({3: StageInfo(3, 100, 50)}), 3.21)
    assert one == "[" + "=" * 12 + ">" + " " * 11 + "] 50/100 tasks, 1 stage, 3.2 s"
    two = progress_text(FakeTracker({1: StageInfo(1, 10, 10), 2: StageInfo(2, 30, 0), 4: None}), 5)
    assert two.endswith("] 10/40 tasks, 2 stages, 5.0 s")
    assert two.startswith("[" + "=" * 6 + ">")
    done = progress_text(FakeTracker({1: StageInfo(1, 4, 4)}), 1)
    assert done.startswith("[" + "=" * 24 + "]")


def test_run_with_progress_draws_and_clears() -> None:
    err = TTY()
    tracker = FakeTracker({0: StageInfo(0, 8, 2)})

    def statement() -> int:  # runs until the progress line was drawn (no guess of how long that takes)
        deadline = time.monotonic() + 30
        while "\r[" not in err.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        return 42

    value = run_with_progress(statement, line=ProgressLine(err), tracker=tracker, delay=0.05, interval=0.02)
    assert value == 42
    text = err.getvalue()
    assert "\r[" in text and "2/8 tasks, 1 stage" in text
    assert text.endswith("\r")  # the line was erased
    quick = TTY()
    assert run_with_progress(lambda: "fast", line=ProgressLine(quick), delay=5) == "fast"
    assert quick.getvalue() == ""


def test_run_with_progress_reraises_and_cancels() -> None:
    with pytest.raises(ValueError, match="bad"):
        run_with_progress(lambda: (_ for _ in ()).throw(ValueError("bad")), line=None)

    class InterruptingLine(ProgressLine):
        def show(self, text: str) -> None:
            raise KeyboardInterrupt

    cancelled: list[bool] = []

    def statement() -> None:  # a long statement: it ends when cancelled
        deadline = time.monotonic() + 30
        while not cancelled and time.monotonic() < deadline:
            time.sleep(0.01)

    with pytest.raises(KeyboardInterrupt):
        run_with_progress(
            statement,
            line=InterruptingLine(TTY()),
            cancel=lambda: cancelled.append(True),
            delay=0,
            interval=0.01,
        )
    assert cancelled == [True]


def test_runner_shows_progress_only_on_a_terminal(monkeypatch) -> None:
    monkeypatch.setattr(cli, "PROGRESS_DELAY", 0.05)
    monkeypatch.setattr(cli, "PROGRESS_INTERVAL", 0.02)
    session = FakeSession(None, "wh")
    tty_err, out = TTY(), io.StringIO()
    runner = Runner(session, CliConfig(warehouse="wh"), out=out, err=tty_err)
    assert runner.run_script("sleep 0.3") == 0
    assert "\rrunning... " in tty_err.getvalue()
    assert tty_err.getvalue().splitlines()[-1].strip().startswith("slept (")
    plain_err = io.StringIO()
    Runner(session, CliConfig(warehouse="wh"), out=out, err=plain_err).run_script("sleep 0.2")
    assert "running" not in plain_err.getvalue()
    silent_err = TTY()
    Runner(session, CliConfig(warehouse="wh", silent=True), out=out, err=silent_err).run_script("sleep 0.2")
    assert silent_err.getvalue() == ""


def test_spark_hooks_use_the_context() -> None:
    spark = FakeSpark("local", {})
    tracker, cancel = cli._spark_hooks(spark)
    assert tracker is None
    cancel()
    assert spark.sparkContext.cancelled == 1
    assert cli._spark_hooks(object()) == (None, None)  # e.g. Spark Connect: no SparkContext
