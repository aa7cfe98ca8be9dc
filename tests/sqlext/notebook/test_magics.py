"""The %sql / %%sql / %sql_connect magics on a real IPython shell, over a scripted fake session (no Spark)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("IPython")

from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

from sqlext.errors import SqlParseError  # noqa: E402
from sqlext.notebook.magics import SqlMagic, SqlMagicError  # noqa: E402
from sqlext.parse.splitter import split_statements  # noqa: E402


class FakeFrame:
    """The slice of a Spark DataFrame the magic uses."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.fetches = 0

    def limit(self, n: int) -> FakeFrame:
        parent = self

        class Limited(FakeFrame):
            def toArrow(self) -> pa.Table:  # noqa: N802 - Spark's name
                parent.fetches += 1
                return parent.table.slice(0, n)

        return Limited(self.table)

    def toArrow(self) -> pa.Table:  # noqa: N802
        self.fetches += 1
        return self.table

    def toPandas(self) -> Any:  # noqa: N802
        return self.table.to_pandas()


class FakeSession:
    """Runs 'CREATE …' as DDL, 'SELECT n' as an n-row result, 'SELEC …' as a syntax error."""

    def __init__(self, warehouse: str, database: str, spark: Any = None) -> None:
        self.warehouse = warehouse
        self.current_database = database
        self.spark = spark
        self.ran: list[str] = []
        self.stopped = False
        self.on_run = lambda text: None

    def execute(self, script: str):
        for stmt in split_statements(script):
            self.ran.append(stmt.text)
            self.on_run(stmt.text)
            words = stmt.text.split()
            if words[0] == "SELEC":
                raise SqlParseError.at(
                    "syntax error at 'SELEC'", stmt.text, 0, line=stmt.line, column=stmt.column
                )
            if words[0] == "SELECT":
                n = int(words[1])
                table = pa.table(
                    {"id": list(range(n)), "v": [f"<b>{i}</b>" if i else None for i in range(n)]}
                )
                yield SimpleNamespace(statement=stmt, dataframe=FakeFrame(table), message=None)
            else:
                yield SimpleNamespace(statement=stmt, dataframe=None, message="Table created")

    def stop_jobs(self) -> None:
        self.stopped = True


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "sqlext")
    return ip


@pytest.fixture
def magic(shell):
    magic = shell.magics_manager.registry["SqlMagic"]
    opened: list[tuple] = []

    def factory(warehouse, database, master, spark_conf, session_conf):
        opened.append((warehouse, database, master, spark_conf, session_conf))
        magic.fake = FakeSession(warehouse, database)
        return magic.fake

    magic.close_session()
    magic.session_factory = factory
    magic.opened = opened
    for name in (
        "warehouse",
        "database",
        "displaylimit",
        "max_width",
        "autopandas",
        "short_errors",
        "feedback",
        "progress",
        "progress_delay",
    ):
        setattr(magic, name, magic.trait_defaults(name))
    yield magic
    magic.close_session()


def run(shell, code: str):
    with capture_output() as out:
        result = shell.run_cell(code)
    return result, out


def test_load_ext_registers_the_magics_and_config_reaches_them(shell, magic):
    assert "sql" in shell.magics_manager.magics["line"]
    assert "sql" in shell.magics_manager.magics["cell"]
    assert "sql_connect" in shell.magics_manager.magics["line"]
    shell.run_line_magic("config", "SqlMagic.displaylimit = 3")
    assert magic.displaylimit == 3


def test_a_cell_runs_a_script_and_shows_the_last_result(shell, magic):
    result, out = run(shell, "%%sql\nCREATE TABLE t (id INT);\nCREATE TABLE u (id INT);\nSELECT 3")
    assert result.success
    assert magic.fake.ran == ["CREATE TABLE t (id INT)", "CREATE TABLE u (id INT)", "SELECT 3"]
    assert out.stdout.count("Table created (") == 2
    frame = result.result
    assert isinstance(frame, FakeFrame)  # the DataFrame itself, not a wrapper
    data, _ = shell.display_formatter.format(frame)
    html = data["text/html"]
    assert html.count("<tr>") == 4  # header and three rows
    assert "&lt;b&gt;1&lt;/b&gt;" in html and "<b>1" not in html  # cells are escaped
    assert "<td>NULL</td>" in html and '<td style="text-align:right">2</td>' in html
    assert "3 rows" in html
    assert "| id | v" in data["text/plain"] and "3 rows" in data["text/plain"]


def test_display_limit_fetches_one_row_past_it(shell, magic):
    magic.displaylimit = 2
    result, _ = run(shell, "%sql SELECT 5")
    html = shell.display_formatter.format(result.result)[0]["text/html"]
    assert html.count("<tr>") == 3
    assert "showing first 2 rows, more available" in html


def test_values_are_whole_unless_max_width_is_set(shell, magic):
    result, _ = run(shell, "%sql SELECT 3")
    html = shell.display_formatter.format(result.result)[0]["text/html"]
    assert "&lt;b&gt;2&lt;/b&gt;" in html
    shell.run_line_magic("config", "SqlMagic.max_width = 4")
    assert magic.max_width == 4
    result, _ = run(shell, "%sql SELECT 3")
    data = shell.display_formatter.format(result.result)[0]
    assert "<td>&lt;...</td>" in data["text/html"] and "<b>2" not in data["text/html"]
    assert "| <... |" in data["text/plain"]


def test_line_magic_assignment_and_capture(shell, magic):
    result, _ = run(shell, "df = %sql SELECT 2")
    assert result.success and isinstance(shell.user_ns["df"], FakeFrame)
    assert shell.user_ns["df"].table.num_rows == 2
    result, _ = run(shell, "%%sql kept <<\nCREATE TABLE t (id INT);\nSELECT 4")
    assert shell.user_ns["kept"] is result.result and result.result.table.num_rows == 4
    result, _ = run(shell, "%sql other << SELECT 1")
    assert shell.user_ns["other"].table.num_rows == 1


def test_statement_without_rows_returns_nothing(shell, magic):
    result, out = run(shell, "%sql CREATE TABLE t (id INT)")
    assert result.success and result.result is None
    assert "Table created" in out.stdout
    magic.feedback = False
    _, out = run(shell, "%sql CREATE TABLE t (id INT)")
    assert out.stdout == ""


def test_error_shows_message_and_caret_not_a_traceback(shell, magic):
    result, out = run(shell, "%%sql\nCREATE TABLE t (id INT);\n  SELEC 1;\nCREATE TABLE never (id INT)")
    assert isinstance(result.error_in_exec, SqlMagicError)
    assert result.error_in_exec.sqlstate == "42601" and isinstance(result.error_in_exec.error, SqlParseError)
    assert magic.fake.ran == ["CREATE TABLE t (id INT)", "SELEC 1"]  # stops at the failing statement
    lines = out.stdout.splitlines()
    i = lines.index("Error [42601] syntax error at 'SELEC'")
    assert lines[i + 1 : i + 4] == ["  line 2, column 3", "  SELEC 1", "  ^"]  # as dyntable-sql prints it
    assert "Traceback" not in out.stdout and "File " not in out.stdout


def test_long_errors_raise_the_original_error(shell, magic):
    magic.short_errors = False
    result, _ = run(shell, "%sql SELEC 1")
    assert isinstance(result.error_in_exec, SqlParseError)


def test_dollar_and_braces_are_never_expanded(shell, magic):
    shell.user_ns["snapshots"] = "oops"
    shell.user_ns["x"] = "oops"
    run(shell, "%sql CREATE TABLE t$snapshots {x}")
    run(shell, "%%sql\nCREATE TABLE t$snapshots {x}")
    assert magic.fake.ran == ["CREATE TABLE t$snapshots {x}"] * 2


def test_session_opens_once_and_reopens_when_settings_change(shell, magic):
    shell.run_line_magic("config", "SqlMagic.warehouse = '/tmp/wh-a'")
    run(shell, "%sql CREATE TABLE t (id INT)")
    run(shell, "%sql CREATE TABLE u (id INT)")
    assert [o[0] for o in magic.opened] == ["/tmp/wh-a"]
    first = magic.fake
    shell.run_line_magic("config", "SqlMagic.warehouse = '/tmp/wh-b'")
    assert first.stopped
    run(shell, "%sql CREATE TABLE t (id INT)")
    assert [o[0] for o in magic.opened] == ["/tmp/wh-a", "/tmp/wh-b"]


def test_sql_connect_splits_spark_and_session_conf(shell, magic):
    with capture_output() as out:
        shell.run_line_magic(
            "sql_connect",
            "--warehouse /tmp/wh-c --database sales --conf spark.sql.shuffle.partitions=3 "
            "--conf table-storage.bucket=2",
        )
    assert magic.opened[-1] == (
        "/tmp/wh-c",
        "sales",
        "local[*]",
        {"spark.sql.shuffle.partitions": "3"},
        {"table-storage.bucket": "2"},
    )
    assert "Connected: warehouse /tmp/wh-c, database sales" in out.stdout
    run(shell, "%sql CREATE TABLE t (id INT)")
    assert len(magic.opened) == 1  # the connected session is the one the magics use
    from IPython.core.error import UsageError

    with pytest.raises(UsageError):
        shell.run_line_magic("sql_connect", "--conf nokey")


def test_cell_line_other_than_capture_is_a_usage_error(shell, magic):
    from IPython.core.error import UsageError

    result, _ = run(shell, "%%sql SELECT 1\nSELECT 2")
    assert isinstance(result.error_in_exec, UsageError) and "put the SQL in the cell" in str(
        result.error_in_exec
    )
    assert magic.session is None  # nothing ran


def test_autopandas_returns_pandas(shell, magic):
    import pandas as pd

    magic.autopandas = True
    result, _ = run(shell, "%sql SELECT 3")
    assert isinstance(result.result, pd.DataFrame) and len(result.result) == 3


def test_other_frames_of_the_same_class_display_as_before(shell, magic):
    run(shell, "%sql SELECT 1")
    other = FakeFrame(pa.table({"a": [1]}))
    data, _ = shell.display_formatter.format(other)
    assert "text/html" not in data and data["text/plain"].startswith("<")  # plain repr


def test_progress_bar_follows_spark_stages_while_a_statement_runs(shell, magic, monkeypatch):
    polled = threading.Event()

    class Tracker:
        def getActiveStageIds(self):  # noqa: N802 - pyspark's names
            polled.set()  # the cell's thread is drawing the bar: the statement may now finish
            return [7, 8]

        def getJobIdsForGroup(self, group):  # noqa: N802
            return [1]

        def getJobInfo(self, job_id):  # noqa: N802
            return SimpleNamespace(stageIds=[7])

        def getStageInfo(self, stage_id):  # noqa: N802
            return SimpleNamespace(numTasks=10, numCompletedTasks=3)

    groups: list[str] = []
    context = SimpleNamespace(
        statusTracker=Tracker,
        setJobGroup=lambda g, d, interruptOnCancel: groups.append(g),
        cancelJobGroup=lambda g: None,
    )
    magic.get_session()
    magic.fake.spark = SimpleNamespace(sparkContext=context)
    magic.fake.on_run = lambda text: polled.wait(30)
    magic.progress_delay = 0.0
    monkeypatch.setattr(shell, "kernel", object(), raising=False)  # progress shows only under a kernel
    result, out = run(shell, "%sql CREATE TABLE t (id INT)")
    assert result.success
    assert groups and groups[0].startswith("dyntable-notebook-")  # the statement ran in its job group
    bars = [o.data for o in out.outputs if "text/html" in o.data and "<progress" in o.data["text/html"]]
    assert bars and '<progress value="3" max="10"' in bars[0]["text/html"]
    assert "3/10 tasks, 1 stage" in bars[0]["text/plain"]


def test_no_progress_outside_a_kernel(shell, magic):
    magic.progress_delay = 0.0
    result, out = run(shell, "%sql CREATE TABLE t (id INT)")
    assert result.success and not out.outputs


def test_magic_without_a_shell_formatter_registration_is_skipped():
    magic = SqlMagic(shell=None)
    assert magic.displaylimit == 20 and magic.session is None


def test_storing_a_result_without_a_shell_is_refused_before_anything_runs():
    magic = SqlMagic(shell=None)
    ran: list[str] = []

    def factory(warehouse, database, master, spark_conf, session_conf):
        session = FakeSession(warehouse, database)
        session.on_run = ran.append
        return session

    magic.session_factory = factory
    with pytest.raises(UsageError, match=r"'kept <<' stores into IPython's namespace"):
        magic.sql("kept << SELECT 1")
    assert ran == []
