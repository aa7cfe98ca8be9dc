"""Container files built from once-encoded records read back exactly as fastavro's writer's do."""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro
import pytest

from engine.errors import InvalidArgumentError
from engine.meta.avro_container import RecordEncodings, write_container

SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "size", "type": ["null", "long"], "default": None},
        ],
    }
)


@dataclass(frozen=True)
class Item:
    name: str
    size: int | None


def to_record(item: Item) -> dict[str, object]:
    return {"name": item.name, "size": item.size}


def read(data: bytes) -> list[dict[str, object]]:
    return list(fastavro.reader(io.BytesIO(data)))


@pytest.mark.parametrize("codec", ["null", "zstandard", "deflate"])
def test_container_reads_back_like_fastavros_own(codec: str) -> None:
    items = [Item(f"f{i}", None if i % 3 == 0 else i * 1000) for i in range(50)]
    encodings = RecordEncodings(SCHEMA, to_record, "items", limit=100)
    ours = write_container(SCHEMA, encodings.encode_all(items), codec)
    theirs = io.BytesIO()
    fastavro.writer(theirs, SCHEMA, [to_record(i) for i in items], codec=codec)
    assert read(ours) == read(theirs.getvalue()) == [to_record(i) for i in items]
    assert fastavro.reader(io.BytesIO(ours)).codec == codec


def test_empty_container_is_a_valid_file() -> None:
    assert read(write_container(SCHEMA, [], "zstandard")) == []


def test_equal_values_share_one_encoding_and_the_cache_stays_bounded() -> None:
    encodings = RecordEncodings(SCHEMA, to_record, "items", limit=3)
    first = encodings.encode_all([Item("a", 1)])[0]
    again = encodings.encode_all([Item("a", 1)])[0]  # a different object, equal by value
    assert again is first
    encodings.encode_all([Item(n, 2) for n in "bcdef"])
    assert len(encodings._known) == 3
    assert encodings.encode_all([Item("a", 1)]) == [first]  # evicted, encoded again identically


def test_a_record_that_does_not_fit_is_a_typed_error() -> None:
    encodings = RecordEncodings(SCHEMA, lambda item: {"size": 1}, "items", limit=3)
    with pytest.raises(InvalidArgumentError, match="cannot write items as Avro"):
        encodings.encode_all([Item("a", 1)])
