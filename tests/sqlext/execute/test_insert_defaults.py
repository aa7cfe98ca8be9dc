"""``VALUES`` rows with DEFAULT items: each bare DEFAULT becomes its column's default (no Spark)."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlAnalysisError
from sqlext.execute.insert import fill_default_keywords, spark_interval

COLUMNS = ["a", "b", "c"]
DEFAULTS = {"b": "CAST('2' AS INT)", "c": "CAST('x' AS STRING)"}


@pytest.mark.parametrize(
    "query, expected",
    [
        ("VALUES (3, DEFAULT, DEFAULT)", "VALUES (3, CAST('2' AS INT), CAST('x' AS STRING))"),
        (
            "values (3, default, 1), (4, 5, Default)",
            "values (3, CAST('2' AS INT), 1), (4, 5, CAST('x' AS STRING))",
        ),
        # a column without a default gets NULL
        ("VALUES (DEFAULT, 1, 2)", "VALUES (NULL, 1, 2)"),
        # quoted text, longer words, nested expressions and comments are left alone
        ("VALUES (1, 'DEFAULT', `DEFAULT`)", "VALUES (1, 'DEFAULT', `DEFAULT`)"),
        (
            "VALUES (1, coalesce(DEFAULT_x, 1), (DEFAULT)) -- DEFAULT",
            "VALUES (1, coalesce(DEFAULT_x, 1), (DEFAULT)) -- DEFAULT",
        ),
        (
            "VALUES (1, named_struct('k', 1), DEFAULT)",
            "VALUES (1, named_struct('k', 1), CAST('x' AS STRING))",
        ),
        # only VALUES queries are rewritten
        ("SELECT 1, DEFAULT, 2", "SELECT 1, DEFAULT, 2"),
    ],
)
def test_fill_default_keywords(query, expected):
    assert fill_default_keywords(query, COLUMNS, DEFAULTS) == expected


def test_unparenthesised_rows_are_one_column_each():
    assert fill_default_keywords("VALUES DEFAULT, 1", ["b"], DEFAULTS) == "VALUES CAST('2' AS INT), 1"


@pytest.mark.parametrize(
    ("text", "interval"),
    [("200 ms", "200 milliseconds"), ("1 s", "1000 milliseconds"), ("2 min", "120000 milliseconds"),
     ("100", "100 milliseconds"), ("PT1H", "3600000 milliseconds")],
)
def test_the_checkpoint_interval_is_read_by_the_engine_duration_parser(text, interval):
    assert spark_interval(text) == interval


def test_a_checkpoint_interval_that_is_no_duration_is_a_typed_error():
    with pytest.raises(SqlAnalysisError, match="'soon' is not a duration") as info:
        spark_interval("soon")
    assert info.value.sqlstate == "22023"
