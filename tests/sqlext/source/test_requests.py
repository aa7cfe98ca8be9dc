"""The typed requests survive the trip through Spark's flat option map, and parse what users write."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import InvalidArgumentError
from sqlext.source.requests import (
    Overwrite,
    OverwriteKind,
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
    st.none() | st.just("t1,t2"),
    st.none() | st.integers(1, 10**6),
    st.dictionaries(st.sampled_from(["scan.mode", "consumer-id"]), names, max_size=2),
)
def test_read_request_round_trips(target, columns, filter_json, travel, changelog, between, merge_only, passthrough):
    request = ReadRequest(target, columns, filter_json, travel, changelog, between, "auto", merge_only, passthrough)
    assert ReadRequest.from_options(request.to_options()) == request


overwrites = st.one_of(
    st.just(Overwrite.none()),
    st.just(Overwrite(OverwriteKind.ALL)),
    st.just(Overwrite(OverwriteKind.DYNAMIC)),
    st.builds(lambda v: Overwrite(OverwriteKind.ALL, static={"p": v}), st.integers(0, 9)),
    st.builds(lambda vs: Overwrite(OverwriteKind.PARTITIONS, partitions=tuple({"p": v} for v in vs)),
              st.lists(st.integers(0, 9), max_size=3)),
)


@given(targets, overwrites, st.none() | names, st.none() | st.integers(0, 10**9), st.none() | st.integers(1, 99),
       st.booleans(), st.none() | st.booleans())
def test_write_request_round_trips(target, overwrite, user, identifier, base, write_only, tracking):
    request = WriteRequest(target, overwrite, user, identifier, base, write_only, tracking)
    parsed = WriteRequest.from_options(request.to_options(), overwrite=overwrite.kind is not OverwriteKind.NONE)
    assert parsed == request
    assert parsed.overwrite.spark_mode == ("append" if overwrite.kind is OverwriteKind.NONE else "overwrite")


def test_spark_lower_cased_keys_and_user_spellings_parse():
    request = WriteRequest.from_options(
        {"warehouse": "/wh", "table": "db.t", "partitionoverwritemode": "DYNAMIC", "Commit-User": "u"}, overwrite=True
    )
    assert request.overwrite.kind is OverwriteKind.DYNAMIC and request.commit_user == "u"
    assert request.overwrite.commit_argument() == "dynamic"
    # Without Spark's overwrite save mode, overwrite options do not turn an append into an overwrite.
    assert WriteRequest.from_options({"warehouse": "/wh", "table": "db.t", "overwrite-partition": '{"p": 1}'},
                                     overwrite=False).overwrite == Overwrite.none()


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
    assert Overwrite.of([{"p": 1}]).commit_argument() == [{"p": 1}]
    assert Overwrite.of({"p": 1}).commit_argument() == {"p": 1}
    assert Overwrite.of(True).commit_argument() is True and Overwrite.of(False).commit_argument() is False
