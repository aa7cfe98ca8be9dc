"""The SQL surface on S3 (moto's server on loopback) with storage options given only to SqlSession.

The endpoint exists nowhere else (no environment variable, no Spark conf), so every read and
write the data source does in Spark's Python workers proves the options travelled with it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.s3


@pytest.fixture
def s3_session(spark, s3_endpoint, s3_root):
    from sqlext.session import SqlSession

    options = dict(s3_endpoint, key="testing", secret="testing")
    s = SqlSession(spark, warehouse=s3_root, **options)
    yield s
    s.stop_jobs()


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def test_sql_surface_on_s3_with_session_options_only(s3_session):
    s = s3_session
    s.sql("CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
    s.sql("CREATE TABLE ap (id BIGINT, p STRING) PARTITIONED BY (p)")
    s.sql("INSERT INTO pk VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    s.sql("INSERT INTO ap VALUES (1, 'x'), (2, 'y')")
    s.sql("UPDATE pk SET v = 'B' WHERE id = 2")
    s.sql("DELETE FROM pk WHERE id = 3")
    s.sql("MERGE INTO pk t USING (SELECT 4 AS id, 'd' AS v) src ON t.id = src.id "
          "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (src.id, src.v)")
    s.sql("INSERT OVERWRITE ap PARTITION (p = 'x') VALUES (10)")
    s.sql("CALL sys.compact(table => 'default.pk')")
    assert _rows(s.sql("SELECT id, v FROM pk")) == [(1, "a"), (2, "B"), (4, "d")]
    assert _rows(s.sql("SELECT id, p FROM ap")) == [(2, "y"), (10, "x")]
    assert _rows(s.sql("SELECT id, v FROM pk VERSION AS OF 1")) == [(1, "a"), (2, "b"), (3, "c")]
    kinds = [r[0] for r in s.sql("SELECT commit_kind FROM `pk$snapshots` ORDER BY snapshot_id").collect()]
    assert kinds[0] == "APPEND" and "COMPACT" in kinds
