"""Conformance with Apache Paimon's Spark SQL for VARIANT columns (issue 36).

Each test replays statements of Paimon's ``VariantTestBase`` (release 2.0, Spark 4) and expects
what Paimon's test expects; the test it comes from is named in a comment.
"""

from __future__ import annotations

from tests.integration.sql_helpers import fails, run


def test_read_and_write_variant(session):
    # VariantTestBase "Paimon Variant: read and write variant"
    run(session, "CREATE TABLE T (id INT, v VARIANT)")
    run(session, """INSERT INTO T VALUES
        (1, parse_json('{"age":26,"city":"Beijing"}')),
        (2, parse_json('{"age":27,"city":"Hangzhou"}'))""")
    assert run(session, "SELECT id, variant_get(v, '$.age', 'int'), variant_get(v, '$.city', 'string') "
                        "FROM T ORDER BY id") == [(1, 26, "Beijing"), (2, 27, "Hangzhou")]
    assert run(session, "SELECT id, to_json(v) FROM T ORDER BY id") == [
        (1, '{"age":26,"city":"Beijing"}'), (2, '{"age":27,"city":"Hangzhou"}')]
    assert run(session, "SELECT id FROM T WHERE variant_get(v, '$.city', 'string') = 'Beijing'") == [(1,)]
