"""SQL text that breaks a parser's recursion gets a typed 54001 error (issue 8, defect 7)."""

from __future__ import annotations

import os

import pytest

from engine.errors import InvalidNameError
from sqlext.errors import SqlParseError, StatementTooComplexError, sqlstate_for
from sqlext.parse.names import TableName
from sqlext.parse.parser import parse_script
from sqlext.parse.splitter import MAX_NESTING, split_statements


def _nested(depth: int) -> str:
    return "SELECT " + "(" * depth + "1" + ")" * depth


def test_five_thousand_parentheses_are_statement_too_complex():
    script = "SELECT 1;\n" + _nested(5000)
    with pytest.raises(StatementTooComplexError) as e:
        split_statements(script)
    assert e.value.sqlstate == "54001"
    assert (e.value.line, e.value.column) == (2, 8 + MAX_NESTING)  # the first '(' too many
    with pytest.raises(StatementTooComplexError):
        parse_script("INSERT INTO t VALUES " + "(" * 5000 + "1" + ")" * 5000)  # dyntable's own parser


def test_nesting_up_to_the_limit_splits():
    (stmt,) = split_statements(_nested(MAX_NESTING))
    assert stmt.text == _nested(MAX_NESTING)


def test_only_real_parentheses_count_and_depth_is_per_statement():
    quoted = "SELECT '" + "(" * 5000 + "', `" + "(" * 5000 + "` /* " + "(" * 5000 + " */ -- " + "(" * 5000
    assert len(split_statements(quoted + "\n")) == 1
    # Unbalanced ')' never goes negative, and ';' starts again from zero.
    half = "SELECT " + "(" * MAX_NESTING + "1"
    assert len(split_statements(f"SELECT 1)))); {half}; {half}")) == 3


def test_too_complex_is_a_parse_error_and_recursion_maps_to_54001():
    assert issubclass(StatementTooComplexError, SqlParseError)  # the REPL's split guard catches it
    assert sqlstate_for(RecursionError()) == "54001"


def test_sql_names_use_the_storage_name_rules():
    for bad in ("`..`.t", "db.`.hidden`", "`t$branch_a..b`", "db.`" + "x" * 256 + "`", "`t$branch_123`"):
        with pytest.raises(InvalidNameError):
            TableName.parse(bad)
    assert TableName.parse("db.`t$branch_main`").branch == "main"


def test_spark_warehouse_dir_is_never_the_current_directory():
    pytest.importorskip("pyspark")
    from sqlext.spark import scratch_warehouse_dir

    path = scratch_warehouse_dir()
    assert os.path.isabs(path)
    assert not path.startswith(os.getcwd() + os.sep)


def test_a_table_feature_dyntable_does_not_support_is_0A000():
    from engine.errors import UnsupportedTableError

    assert sqlstate_for(UnsupportedTableError("deletion vectors")) == "0A000"


def test_a_snapshot_expired_during_a_read_is_72000_snapshot_too_old():
    from engine.errors import SnapshotExpiredDuringReadError

    assert sqlstate_for(SnapshotExpiredDuringReadError("snapshot 3 expired")) == "72000"
