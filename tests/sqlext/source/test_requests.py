"""The typed requests survive the trip through Spark's flat option map, and parse what users write."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import IncrementalQuery, InvalidArgumentError, OverwriteSpec
from sqlext.source.requests import (
    SESSION_CONF,
    ReadRequest,
    ReadVersion,
    TableTarget,
    WriteRequest,
)

names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
targets = st.builds(
    TableTarget,
    st.just("/wh"),
    names.map(lambda n: f"db.{n}"),
    st.none() | names,
    st.dictionaries(st.sampled_from(["endpoint_url", "key", "secret"]), names, max_size=2),
)
versions = st.none() | st.builds(
    ReadVersion,
    st.none() | st.integers(1, 10**6),
    st.none() | names,
    st.none() | st.integers(0, 2**41),
    st.none() | st.just("2026-01-02T03:04:05"),
    st.none() | names,
).filter(lambda v: v is None or v.to_options())  # an empty version is no version: it does not travel


@given(
    targets,
    st.none() | st.lists(names, min_size=1, max_size=3).map(tuple),
    st.none() | st.just('{"op": "eq", "column": "p", "literal": 1}'),
    versions,
    st.booleans(),
    st.none() | st.builds(
        IncrementalQuery,
        st.just("t1,t2"),
        st.none(),
        st.none(),
        st.sampled_from(["auto", "delta", "changelog", "diff"]),
        st.booleans(),
    ) | st.builds(lambda t: IncrementalQuery(between_timestamp=t), st.just("1,2"))
    | st.builds(lambda t: IncrementalQuery(to_auto_tag=t), st.just("2024-12-01")),
    st.none() | st.integers(1, 10**6),
    st.dictionaries(st.sampled_from(["scan.mode", "consumer-id"]), names, max_size=2),
)
def test_read_request_round_trips(
    target, columns, filter_json, travel, changelog, between, merge_only, passthrough
):
    request = ReadRequest(target, columns, filter_json, travel, changelog, between, merge_only, passthrough)
    assert ReadRequest.from_options(request.to_options()) == request


overwrites = st.one_of(
    st.none(),
    st.just(OverwriteSpec()),
    st.just(OverwriteSpec(dynamic=True)),
    st.builds(lambda v: OverwriteSpec(static={"p": v}), st.integers(0, 9)),
    st.builds(lambda vs: OverwriteSpec(partitions=tuple({"p": v} for v in vs)),
              st.lists(st.integers(0, 9), max_size=3)),
)


@given(
    targets,
    overwrites,
    st.none() | names,
    st.none() | st.integers(0, 10**9),
    st.none() | st.integers(1, 99),
    st.none() | st.booleans(),
    st.dictionaries(st.sampled_from(["write-only", "tag.batch.customized-name"]), names, max_size=2),
)
def test_write_request_round_trips(target, overwrite, user, identifier, base, tracking, passthrough):
    # Table options (``write-only`` too, Paimon's option) travel as passthrough, applied to the table.
    request = WriteRequest(target, overwrite, user, identifier, base, tracking, passthrough)
    parsed = WriteRequest.from_options(request.to_options(), overwrite=overwrite is not None)
    assert parsed == request
    assert parsed.save_mode == ("append" if overwrite is None else "overwrite")


def test_spark_lower_cased_keys_and_user_spellings_parse():
    request = WriteRequest.from_options(
        {"warehouse": "/wh", "table": "db.t", "partitionoverwritemode": "DYNAMIC", "Commit-User": "u"},
        overwrite=True,
    )
    assert request.overwrite == OverwriteSpec(dynamic=True) and request.commit_user == "u"
    # Without Spark's overwrite save mode, overwrite options do not turn an append into an overwrite.
    assert WriteRequest.from_options({"warehouse": "/wh", "table": "db.t", "overwrite-partition": '{"p": 1}'},
                                     overwrite=False).overwrite is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"table": "db.t"}, "needs the options 'warehouse' and 'table'"),
        ({"warehouse": "/wh", "table": "db.t", "catalog-options": "[1]"}, "must be a JSON object"),
        ({"warehouse": "/wh", "table": "db.t", "scan.snapshot-id": "x"}, "must be an integer"),
        ({"warehouse": "/wh", "table": "db.t", "read.changelog": "yes"}, "must be true or false"),
    ],
)
def test_bad_read_options_are_typed_errors(options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        ReadRequest.from_options(options)


def test_bad_overwrite_options_are_typed_errors():
    base = {"warehouse": "/wh", "table": "db.t"}
    with pytest.raises(InvalidArgumentError, match="JSON list of partition objects"):
        WriteRequest.from_options({**base, "overwrite-partitions": "[1, 2]"}, overwrite=True)
    with pytest.raises(InvalidArgumentError, match="JSON object of partition values"):
        WriteRequest.from_options({**base, "overwrite-partition": "[]"}, overwrite=True)
    # The engine's shorthand (Table.write_arrow) converts in one place: OverwriteSpec.of.
    assert OverwriteSpec.of([{"p": 1}]) == OverwriteSpec(partitions=({"p": 1},))
    assert OverwriteSpec.of({"p": 1}) == OverwriteSpec(static={"p": 1})
    assert OverwriteSpec.of(True) == OverwriteSpec() and OverwriteSpec.of(False) is None
    assert OverwriteSpec.of("dynamic") == OverwriteSpec(dynamic=True)
    with pytest.raises(InvalidArgumentError, match="overwrite must be"):
        OverwriteSpec.of("everything")  # type: ignore[arg-type]


def test_session_conf_resolves_for_the_request_table_under_the_explicit_options():
    conf = {
        "spark.paimon.scan.snapshot-id": "1",  # every table
        "spark.paimon.*.db.t.scan.snapshot-id": "2",  # this table: wins over the global key
        "spark.paimon.dyntable.db.other.scan.tag-name": "x",  # another table
        "spark.paimon.*.*.t.consumer-id": "c",
    }
    import json

    base = {**TableTarget("/wh", "db.t").to_options(), SESSION_CONF: json.dumps(conf)}
    read = ReadRequest.from_options(base)
    assert read.travel == ReadVersion(snapshot_id=2) and read.passthrough == {"consumer-id": "c"}
    hinted = ReadRequest.from_options({**base, "scan.snapshot-id": "3"})  # an explicit option wins
    assert hinted.travel == ReadVersion(snapshot_id=3)
    write = WriteRequest.from_options({**base, "write-only": "true"}, overwrite=False)
    assert write.passthrough == {"write-only": "true"}  # what a created table would store
    assert write.dynamic == {"scan.snapshot-id": "2", "consumer-id": "c"}
