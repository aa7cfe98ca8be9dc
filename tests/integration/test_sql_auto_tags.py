"""Automatic tags through SQL INSERT (the Spark write path): batch mode, append and primary-key tables."""

from __future__ import annotations

import datetime as dt

import pytest

from sqlext.parse.names import TableName


@pytest.mark.parametrize("pk", ["", ", PRIMARY KEY (id) NOT ENFORCED"])
def test_insert_creates_the_batch_tag_on_the_latest_snapshot(session, pk):
    name = "auto_batch_pk" if pk else "auto_batch"
    session.sql(
        f"CREATE TABLE {name} (id INT, v STRING{pk}) TBLPROPERTIES ('tag.automatic-creation' = 'batch')"
    )
    session.sql(f"INSERT INTO {name} VALUES (1, 'a')")
    session.sql(f"INSERT INTO {name} VALUES (2, 'b')")
    t = session.table(TableName.parse(name))
    latest = t.latest_snapshot()
    day = dt.datetime.fromtimestamp(latest.time_millis / 1000).strftime("%Y-%m-%d")
    assert t.refs.tags.names() == [f"batch-write-{day}"]
    assert t.refs.tags.get(f"batch-write-{day}").snapshot.id == latest.id


def test_insert_creates_the_process_time_tag(session):
    session.sql("CREATE TABLE auto_daily (id INT) TBLPROPERTIES ('tag.automatic-creation' = 'process-time')")
    session.sql("INSERT INTO auto_daily VALUES (1)")
    t = session.table(TableName.parse("auto_daily"))
    when = dt.datetime.fromtimestamp(t.latest_snapshot().time_millis / 1000) - dt.timedelta(days=1)
    assert t.refs.tags.names() == [when.strftime("%Y-%m-%d")]
