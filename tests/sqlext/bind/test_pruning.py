"""Pruning predicates extracted from bound SQL (no JVM)."""

from __future__ import annotations

from engine.scan import predicate as P
from sqlext.bind.pruning import extract

VIEWS = {"__dyntable_1_t": ["id", "dt", "v"]}


def test_simple_conjuncts_become_a_predicate():
    got = extract(
        "SELECT * FROM __dyntable_1_t AS t WHERE t.dt = '2024-01-01' AND id > 5 AND v IS NOT NULL", VIEWS
    )
    assert got["__dyntable_1_t"] == P.and_(
        P.equal("dt", "2024-01-01"), P.greater_than("id", 5), P.is_not_null("v")
    )


def test_reversed_comparisons_and_in_lists():
    got = extract("SELECT id FROM __dyntable_1_t WHERE 5 < id AND dt IN ('a', 'b')", VIEWS)
    assert got["__dyntable_1_t"] == P.and_(P.greater_than("id", 5), P.is_in("dt", ["a", "b"]))


def test_disjunctions_joins_and_shared_views_give_nothing_unsafe():
    assert extract("SELECT * FROM __dyntable_1_t WHERE dt = 'a' OR id = 1", VIEWS) == {}
    assert extract("SELECT * FROM __dyntable_1_t a JOIN other b ON a.id = b.id WHERE a.dt = 'x'", VIEWS) == {}
    assert (
        extract("SELECT * FROM __dyntable_1_t WHERE dt = 'a' UNION ALL SELECT * FROM __dyntable_1_t", VIEWS)
        == {}
    )
    assert extract("SELECT * FROM __dyntable_1_t WHERE lower(dt) = 'a'", VIEWS) == {}


def test_predicate_json_round_trip():
    p = P.and_(P.equal("dt", "x"), P.or_(P.is_null("v"), P.not_(P.less_than("id", 3))))
    assert P.from_json(P.to_json(p)) == p
