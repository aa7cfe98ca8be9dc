"""Avro object-container files written from records that are each encoded only once.

One job: make a commit's metadata writes cost what is new in them. Each commit rewrites the
base manifest list (every manifest of the previous snapshot) and every few commits merges small
manifests into one; fastavro's ``writer`` would re-encode every one of those records each time
(about 7 µs per manifest-list record, 18 µs per manifest entry, measured). Here a record's Avro
binary encoding is computed once per process by ``fastavro.schemaless_writer`` and remembered
by the record's value (frozen, hashable metadata objects: equal objects encode to equal bytes,
so a cache hit can never be stale); a file is then one block of the concatenated encodings,
framed, compressed and synced by fastavro's own ``Writer.write_block``.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

import fastavro
from fastavro.write import Writer

from engine.errors import InvalidArgumentError

__all__ = ["RecordEncodings", "write_container"]

Item = TypeVar("Item", bound=Hashable)

# fastavro raises these when a record does not fit its schema (a missing field, a bad type).
_ENCODE_ERRORS = (TypeError, ValueError, OverflowError, AttributeError, KeyError)


class _Block:
    """What ``Writer.write_block`` reads of a block: its record count and its encoded bytes."""

    __slots__ = ("num_records", "bytes_")

    def __init__(self, num_records: int, data: bytes) -> None:
        self.num_records = num_records
        self.bytes_ = io.BytesIO(data)


def write_container(schema: Any, encoded: Sequence[bytes], avro_codec: str) -> bytes:
    """An Avro object-container file of the given record encodings, in order, as one block.

    Args:
        schema: the parsed writer schema (stored in the header).
        encoded: each record's Avro binary encoding under ``schema``.
        avro_codec: a fastavro codec name (``null``, ``zstandard``, ...).
    """
    buf = io.BytesIO()
    writer = Writer(buf, schema, codec=avro_codec)
    if encoded:
        writer.write_block(_Block(len(encoded), b"".join(encoded)))
    writer.flush()
    return buf.getvalue()


class RecordEncodings(Generic[Item]):
    """The Avro encodings of metadata records by value, for the most recent ``limit`` of them.

    Args:
        schema: the parsed Avro schema of one record.
        to_record: the metadata object → the dict fastavro encodes.
        what: names the records in errors ("manifest entries").
        limit: how many encodings to keep (oldest forgotten first), bounding the memory.
    """

    def __init__(
        self, schema: Any, to_record: Callable[[Item], dict[str, Any]], what: str, limit: int
    ) -> None:
        self._schema = schema
        self._to_record = to_record
        self._what = what
        self._limit = limit
        self._known: dict[Item, bytes] = {}
        self._lock = threading.Lock()  # eviction iterates the dict; writers in threads share it

    def encode_all(self, items: Sequence[Item]) -> list[bytes]:
        """Each item's encoding, computing (and remembering) only the ones not seen before.

        Raises:
            InvalidArgumentError: a record that does not fit the schema.
        """
        known = self._known
        out = []
        for item in items:
            data = known.get(item)
            if data is None:
                data = self._encode(item)
                with self._lock:
                    while len(known) >= self._limit:
                        del known[next(iter(known))]
                    known[item] = data
            out.append(data)
        return out

    def _encode(self, item: Item) -> bytes:
        buf = io.BytesIO()
        try:
            # Tuple notation off: our tuples are arrays, never (branch-name, value) union picks.
            fastavro.schemaless_writer(buf, self._schema, self._to_record(item), disable_tuple_notation=True)
        except _ENCODE_ERRORS as e:
            raise InvalidArgumentError(
                f"cannot write {self._what} as Avro: {e!r}; "
                "check that every required field is set and integers fit"
            ) from e
        return buf.getvalue()
