"""Result and error formatting of dyntable-sql: value text, table layout, tsv/csv/json, errors."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.errors import AnalysisException

from engine.errors import CommitConflictError, NoSuchTableError
from sqlext.errors import SqlParseError
from sqlext.output import (
    batch_lines,
    column_text,
    format_error,
    header_line,
    render_table,
    row_count_text,
    spark_message,
    table_cells,
    write_stream,
)


def text(values, type_=None, mode="display"):
    return column_text(pa.array(values, type_), mode).to_pylist()


# --------------------------------------------------------------------------- value text


def test_scalars_display() -> None:
    assert text([1, None, -3]) == ["1", None, "-3"]
    assert text([True, False]) == ["true", "false"]
    assert text([Decimal("1.50"), Decimal("-2.00")], pa.decimal128(5, 2)) == ["1.50", "-2.00"]
    assert text(["a", "b c"]) == ["a", "b c"]
    assert text([None, None], pa.null()) == [None, None]


def test_floats_look_like_spark() -> None:
    values = [1.0, 2.5, float("nan"), float("inf"), float("-inf"), -0.0, 100.0]
    assert text(values) == ["1.0", "2.5", "NaN", "Infinity", "-Infinity", "-0.0", "100.0"]
    assert text(values, mode="json") == ["1.0", "2.5", '"NaN"', '"Infinity"', '"-Infinity"', "-0.0", "100.0"]
    assert text([1.5], pa.float32()) == ["1.5"]


def test_temporal_values() -> None:
    ts = [dt.datetime(2024, 1, 2, 3, 4, 5), dt.datetime(2024, 1, 2, 3, 4, 5, 120000), None]
    assert text(ts, pa.timestamp("us")) == ["2024-01-02 03:04:05", "2024-01-02 03:04:05.12", None]
    # A zoned column shows the wall clock of its zone (Spark's session time zone).
    zoned = pa.array([dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.UTC)], pa.timestamp("us", tz="UTC"))
    tokyo = zoned.cast(pa.timestamp("us", tz="Asia/Tokyo"))
    assert column_text(tokyo).to_pylist() == ["2024-01-01 09:00:00"]
    assert text([dt.date(2024, 2, 29)]) == ["2024-02-29"]
    assert text([dt.date(2024, 2, 29)], mode="json") == ['"2024-02-29"']
    assert text(ts[:1], pa.timestamp("us"), mode="json") == ['"2024-01-02 03:04:05"']


def test_binary_values() -> None:
    assert text([b"ab", None, b"\x00\xff"]) == ["[61 62]", None, "[00 FF]"]
    assert text([b"ab"], mode="json") == ['"YWI="']


def test_nested_values_are_json_like() -> None:
    assert text([[1, 2], [], None, [None]]) == ["[1,2]", "[]", None, "[null]"]
    assert text([["a", 'q"']]) == ['["a","q\\""]']
    maps = pa.array([[("k", 1)], None, [("z", None)]], pa.map_(pa.string(), pa.int32()))
    assert column_text(maps).to_pylist() == ['{"k":1}', None, '{"z":null}']
    int_keys = pa.array([[(1, "a")]], pa.map_(pa.int32(), pa.string()))
    assert column_text(int_keys).to_pylist() == ['{1:"a"}']
    assert column_text(int_keys, "json").to_pylist() == ['{"1":"a"}']  # JSON keys are strings
    structs = pa.array(
        [{"x": 1, "y": "a"}, None, {"x": None, "y": None}], pa.struct([("x", pa.int32()), ("y", pa.string())])
    )
    assert column_text(structs).to_pylist() == ['{"x":1,"y":"a"}', None, '{"x":null,"y":null}']
    inner = pa.struct([("m", pa.map_(pa.string(), pa.list_(pa.float64())))])
    deep = pa.array([{"l": [{"m": [("k", [1.0])]}]}], pa.struct([("l", pa.list_(inner))]))
    assert column_text(deep).to_pylist() == ['{"l":[{"m":{"k":[1.0]}}]}']


def test_fixed_size_lists_and_slices() -> None:
    fixed = pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int32(), 2))
    assert column_text(fixed).to_pylist() == ["[1,2]", None, "[3,4]"]
    assert column_text(fixed.slice(1)).to_pylist() == [None, "[3,4]"]
    lists = pa.array([[1], None, [2, 3], [4]])
    assert column_text(lists.slice(2, 2)).to_pylist() == ["[2,3]", "[4]"]
    maps = pa.array([[("a", 1)], [("b", 2)], None], pa.map_(pa.string(), pa.int64()))
    assert column_text(maps.slice(1)).to_pylist() == ['{"b":2}', None]
    structs = pa.array([{"x": 1}, {"x": 2}])
    assert column_text(structs.slice(1)).to_pylist() == ['{"x":2}']


def test_dictionary_and_chunked_columns() -> None:
    dictionary = pa.array(["a", "b", "a", None]).dictionary_encode()
    assert column_text(dictionary).to_pylist() == ["a", "b", "a", None]
    chunked = pa.chunked_array([[1, 2], [3]])
    assert column_text(chunked).to_pylist() == ["1", "2", "3"]
    assert column_text(pa.chunked_array([], pa.int32())).to_pylist() == []


def test_json_string_escapes() -> None:
    raw = ['a"b\\c', "line\nbreak\ttab", "\x01\x1f", "é ü"]
    quoted = text(raw, mode="json")
    assert [json.loads(q) for q in quoted] == raw


# --------------------------------------------------------------------------- table format


def test_render_table_layout() -> None:
    table = pa.table({"id": [1, 22, None], "name": ["a", None, "ccc"]})
    assert render_table(table) == (
        "+------+------+\n"
        "| id   | name |\n"
        "+------+------+\n"
        "|    1 | a    |\n"
        "|   22 | NULL |\n"
        "| NULL | ccc  |\n"
        "+------+------+\n"
    )


def test_render_table_empty_results() -> None:
    assert render_table(pa.table({"a": pa.array([], pa.int32())})) == "+---+\n| a |\n+---+\n+---+\n"
    assert render_table(pa.table({})) == ""


def test_long_values_are_cut_and_breaks_escaped() -> None:
    cells = table_cells(pa.array(["x" * 100, "a\nb\tc", "short"]), max_width=10)
    assert cells == ["xxxxxxx...", "a\\nb\\tc", "short"]
    assert all(len(c) <= 10 for c in cells)


def test_values_are_whole_by_default() -> None:
    path = "warehouse/db.db/t/dt=2024-01-01/bucket-0/data-" + "0123456789abcdef" * 4 + "-0.parquet"
    out = render_table(pa.table({"file_path": [path, path.replace("-0.parquet", "-1.parquet")]}))
    assert path in out and path.replace("-0.parquet", "-1.parquet") in out
    assert "..." not in out
    assert len({len(line) for line in out.splitlines()}) == 1  # still aligned


def test_multi_line_values_keep_their_lines() -> None:
    create = "CREATE TABLE t (\r\n  id BIGINT NOT NULL,\n  v STRING)\nUSING dyntable"
    out = render_table(pa.table({"createtab_stmt": [create], "n": [1]}))
    assert out == (
        "+-----------------------+---+\n"
        "| createtab_stmt        | n |\n"
        "+-----------------------+---+\n"
        "| CREATE TABLE t (     +| 1 |\n"
        "|   id BIGINT NOT NULL,+|   |\n"
        "|   v STRING)          +|   |\n"
        "| USING dyntable        |   |\n"
        "+-----------------------+---+\n"
    )
    # tabs and stray carriage returns would break the alignment: escaped
    assert table_cells(pa.array(["a\tb\rc"])) == ["a\\tb\\rc"]


def test_max_width_cuts_to_one_line() -> None:
    create = "CREATE TABLE t (\n  id BIGINT)"
    out = render_table(pa.table({"s": [create, "short"]}), max_width=12)
    assert out.splitlines()[3] == "| CREATE TA... |"
    assert out.splitlines()[4] == "| short        |"
    assert table_cells(pa.array(["abcdef"]), max_width=2) == ["ab"]  # no room for the ellipsis
    assert table_cells(pa.array(["abcdef"]), max_width=4) == ["a..."]


def test_wide_characters_align() -> None:
    out = render_table(pa.table({"k": ["日本", "ab"]}))
    lines = out.splitlines()
    assert lines[3] == "| 日本 |"
    assert lines[4] == "| ab   |"


def test_row_count_text() -> None:
    assert row_count_text(1) == "1 row"
    assert row_count_text(0) == "0 rows"
    assert row_count_text(3) == "3 rows"


# --------------------------------------------------------------------------- tsv / csv / json


SAMPLE = pa.table(
    {
        "id": [1, None, 3],
        "s": ["plain", 'comma, "quote"', "tab\tnew\nline"],
        "e": ["", None, "back\\slash"],
        "l": [[1, 2], None, []],
    }
)


def test_tsv_lines() -> None:
    assert header_line(SAMPLE.column_names, "tsv") == "id\ts\te\tl\n"
    assert batch_lines(SAMPLE, "tsv").split("\n") == [
        "1\tplain\t\t[1,2]",
        'NULL\tcomma, "quote"\tNULL\tNULL',
        "3\ttab\\tnew\\nline\tback\\\\slash\t[]",
        "",
    ]


def test_csv_lines_round_trip() -> None:
    out = io.StringIO()
    write_stream(SAMPLE, "csv", out)
    rows = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    assert rows == [
        ["id", "s", "e", "l"],
        ["1", "plain", "", "[1,2]"],
        ["", 'comma, "quote"', "", ""],
        ["3", "tab\tnew\nline", "back\\slash", "[]"],
    ]
    # The empty string is quoted; null is an empty field.
    assert out.getvalue().splitlines()[1] == '1,plain,"","[1,2]"'
    assert out.getvalue().splitlines()[2] == ',"comma, ""quote""",,'


def test_json_lines() -> None:
    out = io.StringIO()
    write_stream(SAMPLE, "json", out)
    lines = out.getvalue().splitlines()
    assert lines[0] == '{"id":1,"s":"plain","e":"","l":[1,2]}'
    assert [json.loads(line) for line in lines] == SAMPLE.to_pylist()


def test_stream_batches_give_the_same_text() -> None:
    table = pa.table({"n": list(range(7)), "t": [str(i) * i for i in range(7)]})
    for fmt in ("tsv", "csv", "json"):
        whole, parts = io.StringIO(), io.StringIO()
        write_stream(table, fmt, whole)
        write_stream(table, fmt, parts, batch_rows=2)
        assert whole.getvalue() == parts.getvalue()
        assert len(whole.getvalue().splitlines()) == 7 + (fmt != "json")


def test_no_rows_and_no_columns() -> None:
    empty = pa.table({"a": pa.array([], pa.int64())})
    out = io.StringIO()
    write_stream(empty, "csv", out)
    assert out.getvalue() == "a\n"
    assert batch_lines(pa.table({}), "json") == ""
    assert batch_lines(pa.record_batch([pa.array([1, 2])], ["x"]).select([]), "json") == "{}\n{}\n"
    with pytest.raises(ValueError):
        batch_lines(SAMPLE, "table")  # type: ignore[arg-type]


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), _TEXT), min_size=1, max_size=8))
def test_csv_and_json_are_exact_for_any_string(values) -> None:
    # A second column: a one-column CSV row holding only a null is an empty line, which readers skip.
    table = pa.table({"v": pa.array(values, pa.string()), "n": list(range(len(values)))})
    out = io.StringIO()
    write_stream(table, "csv", out)
    rows = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    assert rows[1:] == [["" if v is None else v, str(i)] for i, v in enumerate(values)]
    out = io.StringIO()
    write_stream(table, "json", out)
    assert [json.loads(line)["v"] for line in out.getvalue().split("\n")[:-1]] == values


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=8))
def test_tsv_escapes_are_reversible(values) -> None:
    lines = batch_lines(pa.table({"v": values, "w": values}), "tsv").split("\n")[:-1]
    assert len(lines) == len(values)

    def unescape(field: str) -> str:
        return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[m.group(1)], field)

    for line, value in zip(lines, values, strict=True):
        left, right = line.split("\t")
        assert left == right
        assert unescape(left) == value


# --------------------------------------------------------------------------- errors


def test_sql_error_with_caret() -> None:
    script = "SELECT 1;\nSELEC 2"
    error = SqlParseError.at("unexpected word SELEC", script, 10)
    text_ = format_error(error, script=script)
    assert text_.splitlines() == [
        "Error [42601] unexpected word SELEC",
        "  line 2, column 1",
        "  SELEC 2",
        "  ^",
    ]


def test_sql_error_gets_its_source_line() -> None:
    error = SqlParseError("bad token", line=2, column=3)
    text_ = format_error(error, script="SELECT 1;\nSELECT @;")
    assert "  SELECT @;" in text_.splitlines()
    assert text_.splitlines()[-1] == "    ^"


def test_engine_errors_map_to_sqlstates() -> None:
    assert format_error(NoSuchTableError("table db.t does not exist")) == (
        "Error [42P01] table db.t does not exist"
    )
    assert format_error(CommitConflictError("retry")).startswith("Error [40001] retry")


class _SparkError(AnalysisException):
    def __init__(self, message: str, state: str | None) -> None:
        super().__init__(message)
        self.state = state
        self.text = message

    def getSqlState(self) -> str | None:  # noqa: N802 (pyspark's name)
        return self.state

    def __str__(self) -> str:
        return self.text


def test_spark_errors_use_their_sqlstate_and_drop_the_plan() -> None:
    message = (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `nope` cannot be found. "
        "SQLSTATE: 42P01; line 1 pos 14;\n"
        "'Project [*]\n+- 'UnresolvedRelation [nope], [], false\n"
    )
    text_ = format_error(_SparkError(message, "42P01"))
    assert text_ == (
        "Error [42P01] [TABLE_OR_VIEW_NOT_FOUND] The table or view `nope` cannot be found. "
        "SQLSTATE: 42P01; line 1 pos 14"
    )
    parse = (
        "\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. SQLSTATE: 42601 (line 1, pos 0)\n"
        "\n== SQL ==\nselec 1\n^^^\n"
    )
    assert format_error(_SparkError(parse, "42601")).splitlines() == [
        "Error [42601] [PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. SQLSTATE: 42601 (line 1, pos 0)",
        "",
        "== SQL ==",
        "selec 1",
        "^^^",
    ]
    assert format_error(AnalysisException("boom")) == "Error [XX000] boom"


def test_spark_message_drops_jvm_trace() -> None:
    assert spark_message("bad thing\n\nJVM stacktrace:\norg.apache...") == "bad thing"


def test_unexpected_errors_hide_the_traceback_unless_verbose() -> None:
    try:
        raise RuntimeError("kaput")
    except RuntimeError as e:
        error = e
    quiet = format_error(error)
    assert quiet.splitlines() == [
        "Error [XX000] RuntimeError: kaput",
        "  (run with --verbose for the traceback)",
    ]
    loud = format_error(error, verbose=True)
    assert loud.startswith("Error [XX000] RuntimeError: kaput")
    assert "Traceback (most recent call last)" in loud


def test_each_front_end_names_its_own_way_to_the_traceback() -> None:
    error = RuntimeError("kaput")
    assert format_error(error, hint="(the server log has the traceback: incident 1a2b3c4d)").splitlines() == [
        "Error [XX000] RuntimeError: kaput",
        "  (the server log has the traceback: incident 1a2b3c4d)",
    ]
    assert format_error(error, hint=None) == "Error [XX000] RuntimeError: kaput"
