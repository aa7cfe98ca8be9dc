"""Paimon's dynamic table options through SQL: ``SET spark.paimon.…`` and
``/*+ OPTIONS(...) */`` on INSERT."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from sqlext.parse.names import TableName
from tests.integration.sql_helpers import run


def tags(session, name):
    t = session.table(TableName.parse(name))
    return {n: t.refs.tags.get(n).snapshot.id for n in t.refs.tags.names()}, t.latest_snapshot().id


@pytest.mark.parametrize("pk", ["", ", PRIMARY KEY (id) NOT ENFORCED"])
def test_an_insert_hint_names_the_batch_tag(session, pk):
    session.sql(f"CREATE TABLE t (id INT, v STRING{pk}) TBLPROPERTIES ('tag.automatic-creation' = 'batch')")
    session.sql("INSERT INTO t /*+ OPTIONS('tag.batch.customized-name' = 'nightly') */ VALUES (1, 'a')")
    found, latest = tags(session, "t")
    assert found == {"nightly": latest}
    session.sql("INSERT INTO t /*+ OPTIONS('tag.batch.customized-name' = 'nightly') */ VALUES (2, 'b')")
    found, latest = tags(session, "t")
    assert found == {"nightly": latest}  # replaced, as Paimon replaces a batch tag of that name


def test_set_spark_paimon_options_apply_to_later_writes_and_reads(session):
    session.sql("CREATE TABLE a (id INT)")
    session.sql("CREATE TABLE b (id INT)")
    run(session, "SET spark.paimon.tag.automatic-creation = batch")
    run(session, "SET spark.paimon.*.default.b.tag.batch.customized-name = b-tag")  # this table only
    session.sql("INSERT INTO a VALUES (1)")
    session.sql("INSERT INTO b VALUES (1)")
    found_a, _ = tags(session, "a")
    assert [n[: len("batch-write-")] for n in found_a] == ["batch-write-"]
    assert tags(session, "b") == ({"b-tag": 1}, 1)
    # A hint wins over the session's keys.
    session.sql("INSERT INTO b /*+ OPTIONS('tag.batch.customized-name' = 'hinted') */ VALUES (2)")
    assert tags(session, "b")[0] == {"b-tag": 1, "hinted": 2}
    run(session, "RESET")
    session.sql("INSERT INTO b VALUES (3)")
    assert tags(session, "b")[0] == {"b-tag": 1, "hinted": 2}  # no longer tagged
    # Reads: Paimon's scan options, globally or for one table.
    run(session, "SET spark.paimon.scan.snapshot-id = 1")
    assert run(session, "SELECT id FROM b") == [(1,)]
    run(session, "SET spark.paimon.dyntable.default.b.scan.snapshot-id = 2")
    assert sorted(run(session, "SELECT id FROM b")) == [(1,), (2,)]
    run(session, "RESET spark.paimon.dyntable.default.b.scan.snapshot-id")
    run(session, "RESET spark.paimon.scan.snapshot-id")
    assert sorted(run(session, "SELECT id FROM b")) == [(1,), (2,), (3,)]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("spark.paimon.bucket", "4", ["'bucket' cannot change for a statement"]),
        ("spark.paimon.scan.snapshot-idd", "1", ["not a table option", "Did you mean 'scan.snapshot-id'"]),
        ("spark.paimon.*.default.t.snapshot.num-retained.min", "zero", ["snapshot.num-retained.min"]),
        ("spark.paimon.data-file.external-paths", "x", ["not supported by dyntable"]),
    ],
)
def test_a_dynamic_option_that_cannot_apply_is_refused(session, key, value, words):
    with pytest.raises(SqlError) as info:
        run(session, f"SET {key} = {value}")
    for w in words:
        assert w in str(info.value), str(info.value)
    assert key not in session.options
