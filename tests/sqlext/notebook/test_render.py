"""What the magics show: HTML/text tables of fetched rows, fetching one row past the limit, error text."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa

from sqlext.errors import SqlAnalysisError
from sqlext.notebook.progress import Progress
from sqlext.notebook.render import Shown, error_text, fetch, progress_bundle


class Frame:
    def __init__(self, table):
        self.table = table
        self.limits: list[int] = []

    def limit(self, n):
        self.limits.append(n)
        return Frame(self.table.slice(0, n))

    def toArrow(self):  # noqa: N802 - Spark's name
        return self.table


def test_fetch_reads_one_row_past_the_limit():
    frame = Frame(pa.table({"a": range(5)}))
    table, more = fetch(frame, 3)
    assert (table.num_rows, more, frame.limits) == (3, True, [4])
    table, more = fetch(Frame(pa.table({"a": range(3)})), 3)
    assert (table.num_rows, more) == (3, False)
    table, more = fetch(frame, None)
    assert (table.num_rows, more) == (5, False)


def test_html_escapes_and_aligns():
    table = pa.table(
        {
            "n<": pa.array([1, None], pa.int64()),
            "s": ["<script>", "a\nb"],
            "l": pa.array([[1, 2], None], pa.list_(pa.int32())),
        }
    )
    html = Shown(table, truncated=True, elapsed=0.5).html()
    assert '<th title="int64">n&lt;</th>' in html
    assert "<td>&lt;script&gt;</td>" in html and "<script>" not in html
    assert '<td style="text-align:right">NULL</td>' in html and "white-space:pre\">a\nb</td>" in html
    assert "<td>[1,2]</td>" in html  # nested values as dyntable-sql prints them
    assert "showing first 2 rows, more available (0.50 s)" in html


def test_max_width_cuts_cells_in_html_and_text():
    shown = Shown(pa.table({"s": ["abcdefgh\nij"]}), truncated=False, max_width=6)
    assert "<td>abc...</td>" in shown.html()
    assert "| abc... |" in shown.text()


def test_text_is_the_cli_table():
    text = Shown(pa.table({"a": [1]}), truncated=False).text()
    assert text == "+---+\n| a |\n+---+\n| 1 |\n+---+\n1 row"


def test_result_without_columns():
    assert Shown(pa.table({}), truncated=False).html() == "<div><small>0 rows</small></div>"


def test_error_text_has_the_caret_and_a_notebook_hint():
    script = "SELECT 1;\nSELECT nope FROM t"
    err = SqlAnalysisError.at(
        "column nope not found", "SELECT nope FROM t", 7, line=2, column=1, sqlstate="42703"
    )
    assert error_text(err, script) == (
        "Error [42703] column nope not found\n  line 2, column 8\n  SELECT nope FROM t\n         ^"
    )
    internal = error_text(RuntimeError("bad"), "")
    assert internal.startswith("Error [XX000] RuntimeError: bad") and "--verbose" not in internal
    assert "SqlMagic.short_errors = False" in internal


def test_progress_bundle():
    bundle = progress_bundle(Progress(3, 10, 1, 1.0))
    assert (
        '<progress value="3" max="10"' in bundle["text/html"]
        and bundle["text/plain"] == "3/10 tasks, 1 stage, 1.0 s"
    )
    assert "<progress style" in progress_bundle(Progress(0, 0, 0, 1.0))["text/html"]  # indeterminate


def test_importing_sqlext_is_light_and_sqlsession_is_its_entry_point():
    code = (
        "import sys, sqlext\n"
        "assert not {'pyspark', 'IPython', 'sqlext.session'} & set(sys.modules), sorted(sys.modules)\n"
        "from sqlext import SqlSession\n"
        "import sqlext.session\n"
        "assert SqlSession is sqlext.session.SqlSession\n"
        "try:\n    sqlext.nothing\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit('no error')\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[3])
    )
