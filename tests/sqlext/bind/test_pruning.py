"""Pushdown extracted from bound SQL (no JVM): pruning predicates, which of them are exact, limits."""

from __future__ import annotations

import pytest

from engine import types as T
from engine.scan import predicate as P
from sqlext.bind.pruning import Pushdown, extract, pushdown

V = "__dyntable_1_t"
VIEWS = {V: {"id": T.BIGINT(), "dt": T.VARCHAR(), "v": T.VARCHAR(), "d": T.DOUBLE(), "f": T.FLOAT(),
             "c": T.CHAR(3), "m": T.DECIMAL(10, 2), "b": T.BOOLEAN(), "day": T.DATE(),
             "ts": T.TIMESTAMP(6)}}


def test_simple_conjuncts_become_a_predicate():
    got = extract(f"SELECT * FROM {V} AS t WHERE t.dt = '2024-01-01' AND id > 5 AND v IS NOT NULL", VIEWS)
    assert got[V] == P.and_(P.equal("dt", "2024-01-01"), P.greater_than("id", 5), P.is_not_null("v"))


def test_reversed_comparisons_and_in_lists():
    got = extract(f"SELECT id FROM {V} WHERE 5 < id AND dt IN ('a', 'b')", VIEWS)
    assert got[V] == P.and_(P.greater_than("id", 5), P.is_in("dt", ["a", "b"]))


def test_disjunctions_joins_and_shared_views_give_nothing_unsafe():
    assert extract(f"SELECT * FROM {V} WHERE dt = 'a' OR id = 1", VIEWS) == {}
    assert extract(f"SELECT * FROM {V} a JOIN other b ON a.id = b.id WHERE a.dt = 'x'", VIEWS) == {}
    assert extract(f"SELECT * FROM {V} WHERE dt = 'a' UNION ALL SELECT * FROM {V}", VIEWS) == {}
    assert extract(f"SELECT * FROM {V} WHERE lower(dt) = 'a'", VIEWS) == {}
    # a sample or a lateral view sits between the rows and the WHERE
    assert pushdown(f"SELECT * FROM {V} TABLESAMPLE (10 PERCENT) WHERE id = 1 LIMIT 3", VIEWS) == {}
    assert pushdown(f"SELECT * FROM {V} LATERAL VIEW explode(array(1)) x AS id2 WHERE id = 1", VIEWS) == {}


@pytest.mark.parametrize("cond", [
    "v = 1",  # Spark casts the string column to a number: '01' = 1
    "id = '2'",  # and the text to the column's type, by its own rules
    "id < 1.5", "id = 1.0",  # DECIMAL literals against integers: Spark compares exactly
    "f < 0.7",  # FLOAT: Spark widens the column, the engine would narrow the literal
    "c = 'a'",  # CHAR(n): compared padded
    "m = 1.25",  # DECIMAL with a fractional literal
    "d < 0.12345678901234567",  # more digits than a double keeps: Spark may round twice
    "b < true",  # booleans: equality only
    "ts > '2024-01-01 00:00:00'",  # the session time zone
    "day = '2024-1-1'",  # not the ISO form
    "v = 'a\\\\b'",  # an escape
    "id IN (1, 'x')",
])
def test_comparisons_spark_evaluates_otherwise_are_not_pushed(cond):
    assert pushdown(f"SELECT * FROM {V} WHERE {cond}", VIEWS) == {}


def test_comparisons_the_engine_evaluates_as_spark_are_pushed():
    got = extract(f"SELECT * FROM {V} WHERE d >= 0.7 AND d < 1e300 AND m > 3 AND b = true "
                  "AND day = '2024-01-31' AND id IN (1, 2) AND d <> -2", VIEWS)[V]
    assert got == P.and_(P.greater_or_equal("d", 0.7), P.less_than("d", 1e300), P.greater_than("m", 3),
                         P.equal("b", True), P.equal("day", "2024-01-31"), P.is_in("id", [1, 2]),
                         P.not_equal("d", -2))


def test_a_plain_limit_is_pushed_with_its_offset_and_a_whole_where():
    assert pushdown(f"SELECT * FROM {V} LIMIT 10", VIEWS) == {V: Pushdown(None, 10)}
    assert pushdown(f"SELECT id, v AS w FROM {V} LIMIT 10 OFFSET 5", VIEWS) == {V: Pushdown(None, 15)}
    limited = pushdown(f"SELECT * FROM {V} WHERE id > 3 LIMIT 2", VIEWS)
    assert limited == {V: Pushdown(P.greater_than("id", 3), 2)}
    assert pushdown(f"SELECT * FROM (SELECT id FROM {V} LIMIT 4) x JOIN y ON x.id = y.id", VIEWS) == {
        V: Pushdown(None, 4)}


@pytest.mark.parametrize("query", [
    f"SELECT * FROM {V} WHERE lower(v) = 'a' LIMIT 3",  # a conjunct left to Spark
    f"SELECT * FROM {V} WHERE v = 1 AND id > 3 LIMIT 3",
    f"SELECT * FROM {V} ORDER BY id LIMIT 3",
    f"SELECT DISTINCT v FROM {V} LIMIT 3",
    f"SELECT v, count(*) FROM {V} GROUP BY v LIMIT 3",
    f"SELECT count(*) FROM {V} LIMIT 3",
    f"SELECT explode(array(id, id)) FROM {V} LIMIT 3",
    f"SELECT id, row_number() OVER (ORDER BY id) FROM {V} LIMIT 3",
    f"SELECT upper(v) FROM {V} LIMIT 3",
    f"SELECT * FROM {V} LIMIT 1 + 2",
    f"SELECT id FROM {V} UNION ALL SELECT id FROM {V} LIMIT 3",
])
def test_limits_that_depend_on_more_rows_are_not_pushed(query):
    assert all(p.limit is None for p in pushdown(query, VIEWS).values())


def test_predicate_json_round_trip():
    p = P.and_(P.equal("dt", "x"), P.or_(P.is_null("v"), P.not_(P.less_than("id", 3))))
    assert P.from_json(P.to_json(p)) == p
