"""Snapshot, tag and consumer records with their exact Paimon JSON serde.

One job: turn the small JSON metadata files of a Paimon table (``snapshot/snapshot-N``,
``tag/tag-NAME``, ``consumer/consumer-ID``; ``docs/design/format-notes.md`` §3–§4) into frozen records and
back, byte-compatible with what Java Paimon (Jackson, default pretty printer) writes.

Invariants:

* ``to_json`` writes keys in Java's declaration order with Java's camelCase names, always writes
  the required keys, and omits every optional key whose value is None (Jackson ``NON_NULL``);
  the layout is Jackson's default pretty printer (``"key" : value``, two-space indent, arrays on
  one line), so files diff cleanly against Java-written ones.
* ``from_json`` ignores unknown keys (newer writers add keys; Java does the same), and raises
  :class:`~engine.errors.CorruptMetadataError` for bad JSON, a truncated file, a missing required
  key or a value of the wrong type, so a caller never sees a half-built record.
* A watermark of ``Long.MIN_VALUE`` (what old writers wrote for "no watermark") reads as None.
* Records are immutable, hashable and picklable: ``properties`` is stored as a read-only
  :class:`FrozenMap`, and an empty mapping is stored as None (Java writes no key for it).
"""

from __future__ import annotations

import json
import uuid as _uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

from engine.errors import CorruptMetadataError
from engine.frozen import FrozenMap  # noqa: F401  (re-exported: part of this module's API)
from engine.jackson import RawNumber, jackson_json

#: Java ``Long.MIN_VALUE``: the "no watermark" marker of old snapshot writers.
LONG_MIN_VALUE = -(2**63)
#: ``commitIdentifier`` of batch commits (Java ``BatchWriteBuilder.COMMIT_IDENTIFIER``).
BATCH_COMMIT_IDENTIFIER = 2**63 - 1
#: Snapshot format version Java writes today.
CURRENT_SNAPSHOT_VERSION = 3


class CommitKind(StrEnum):
    """What a commit did; serialized by name."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


def _pretty(pairs: list[tuple[str, Any]]) -> str:
    return jackson_json(dict(pairs))


# ---------------------------------------------------------------------------------------------
# Parsing helpers: every failure becomes CorruptMetadataError naming the key.


def _parse_object(text: str | bytes, what: str) -> dict[str, Any]:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptMetadataError(f"{what} is not valid UTF-8 ({e}); the file is corrupt") from e
    if not text.strip():
        raise CorruptMetadataError(f"{what} is empty; the file is corrupt or was never fully written")
    try:
        # Decimal keeps Duration seconds exact; snapshot fields themselves are all integers.
        data = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as e:
        raise CorruptMetadataError(
            f"{what} is not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
            "the file is truncated or corrupt: restore it or roll back past it"
        ) from e
    if not isinstance(data, dict):
        raise CorruptMetadataError(f"{what} must be a JSON object, found {type(data).__name__}")
    return data


def _req_int(data: Mapping[str, Any], key: str, what: str) -> int:
    if key not in data:
        raise CorruptMetadataError(f"{what} lacks the required key {key!r}; the file is corrupt")
    value = data[key]
    if type(value) is not int:
        raise CorruptMetadataError(f"{what}: {key!r} must be an integer, found {value!r}")
    return value


def _req_str(data: Mapping[str, Any], key: str, what: str) -> str:
    if key not in data:
        raise CorruptMetadataError(f"{what} lacks the required key {key!r}; the file is corrupt")
    value = data[key]
    if not isinstance(value, str):
        raise CorruptMetadataError(f"{what}: {key!r} must be a string, found {value!r}")
    return value


def _opt_int(data: Mapping[str, Any], key: str, what: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise CorruptMetadataError(f"{what}: {key!r} must be an integer or null, found {value!r}")
    return value


def _opt_str(data: Mapping[str, Any], key: str, what: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise CorruptMetadataError(f"{what}: {key!r} must be a string or null, found {value!r}")
    return value


# ---------------------------------------------------------------------------------------------


def new_snapshot_uuid() -> str:
    """A fresh snapshot ``uuid``: a random UUID in canonical lower-case 8-4-4-4-12 form, as Java's."""
    return str(_uuid.uuid4())


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One committed version of a table (``snapshot/snapshot-N``); see §3 for each field."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int
    delta_record_count: int
    version: int = CURRENT_SNAPSHOT_VERSION
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: Mapping[str, str] | None = None
    next_row_id: int | None = None
    operation: str | None = None
    writer_version: str | None = None
    # Committers pass new_snapshot_uuid() (Java writes a random UUID into every new snapshot);
    # a snapshot file written before the field existed reads back with None.
    uuid: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.commit_kind, CommitKind):
            object.__setattr__(self, "commit_kind", CommitKind(self.commit_kind))
        props = self.properties
        if props is not None and not isinstance(props, FrozenMap):
            props = FrozenMap(props)
        object.__setattr__(self, "properties", props if props else None)

    def _json_pairs(self) -> list[tuple[str, Any]]:
        """(key, value) in Java's write order; None-valued optional keys dropped."""
        pairs: list[tuple[str, Any]] = [
            ("version", self.version),
            ("uuid", self.uuid),
            ("id", self.id),
            ("schemaId", self.schema_id),
            ("baseManifestList", self.base_manifest_list),
            ("baseManifestListSize", self.base_manifest_list_size),
            ("deltaManifestList", self.delta_manifest_list),
            ("deltaManifestListSize", self.delta_manifest_list_size),
            ("changelogManifestList", self.changelog_manifest_list),
            ("changelogManifestListSize", self.changelog_manifest_list_size),
            ("indexManifest", self.index_manifest),
            ("commitUser", self.commit_user),
            ("writerVersion", self.writer_version),
            ("commitIdentifier", self.commit_identifier),
            ("commitKind", self.commit_kind.value),
            ("timeMillis", self.time_millis),
            ("totalRecordCount", self.total_record_count),
            ("deltaRecordCount", self.delta_record_count),
            ("changelogRecordCount", self.changelog_record_count),
            ("watermark", self.watermark),
            ("statistics", self.statistics),
            ("properties", self.properties),
            ("nextRowId", self.next_row_id),
            ("operation", self.operation),
        ]
        return [(k, v) for k, v in pairs if v is not None]

    def to_json(self) -> str:
        """The snapshot file content, as Java writes it.

        Returns:
            Pretty-printed JSON with Java's key order; None-valued optional keys are omitted.
        """
        return _pretty(self._json_pairs())

    @staticmethod
    def from_json(text: str | bytes) -> Snapshot:
        """Parse a snapshot file (any Paimon version ≥ 0.9, Java- or pypaimon-written).

        Args:
            text: The file content.

        Returns:
            The snapshot.

        Raises:
            CorruptMetadataError: The content is not JSON, is truncated, lacks a required key or
                holds a value of the wrong type.
        """
        return _snapshot_from_mapping(_parse_object(text, "snapshot JSON"), "snapshot JSON")


def _snapshot_from_mapping(d: Mapping[str, Any], what: str) -> Snapshot:
    kind_name = _req_str(d, "commitKind", what)
    try:
        kind = CommitKind(kind_name)
    except ValueError:
        raise CorruptMetadataError(
            f"{what}: unknown commitKind {kind_name!r} (expected one of "
            f"{', '.join(k.value for k in CommitKind)})"
        ) from None
    props = d.get("properties")
    if props is not None:
        if not isinstance(props, dict) or not all(isinstance(v, str) for v in props.values()):
            raise CorruptMetadataError(f"{what}: 'properties' must be an object of strings, found {props!r}")
    watermark = _opt_int(d, "watermark", what)
    if watermark == LONG_MIN_VALUE:
        watermark = None
    return Snapshot(
        id=_req_int(d, "id", what),
        schema_id=_req_int(d, "schemaId", what),
        base_manifest_list=_req_str(d, "baseManifestList", what),
        delta_manifest_list=_req_str(d, "deltaManifestList", what),
        commit_user=_req_str(d, "commitUser", what),
        commit_identifier=_req_int(d, "commitIdentifier", what),
        commit_kind=kind,
        time_millis=_req_int(d, "timeMillis", what),
        total_record_count=_req_int(d, "totalRecordCount", what),
        delta_record_count=_req_int(d, "deltaRecordCount", what),
        version=_req_int(d, "version", what),
        base_manifest_list_size=_opt_int(d, "baseManifestListSize", what),
        delta_manifest_list_size=_opt_int(d, "deltaManifestListSize", what),
        changelog_manifest_list=_opt_str(d, "changelogManifestList", what),
        changelog_manifest_list_size=_opt_int(d, "changelogManifestListSize", what),
        index_manifest=_opt_str(d, "indexManifest", what),
        changelog_record_count=_opt_int(d, "changelogRecordCount", what),
        watermark=watermark,
        statistics=_opt_str(d, "statistics", what),
        properties=props,
        next_row_id=_opt_int(d, "nextRowId", what),
        operation=_opt_str(d, "operation", what),
        writer_version=_opt_str(d, "writerVersion", what),
        uuid=_opt_str(d, "uuid", what),
    )


# ---------------------------------------------------------------------------------------------
# Tags

_NANOS_PER_MICRO = 1000
_MS_PER_SECOND = Decimal(1000)
_NINE_PLACES = Decimal("0.000000000")


def _local_datetime_to_array(dt: datetime) -> list[int]:
    """Jackson's LocalDateTime array: trailing zero second / nano components are dropped."""
    arr = [dt.year, dt.month, dt.day, dt.hour, dt.minute]
    nanos = dt.microsecond * _NANOS_PER_MICRO
    if dt.second or nanos:
        arr.append(dt.second)
        if nanos:
            arr.append(nanos)
    return arr


def _local_datetime_from_json(value: Any, what: str) -> datetime:
    try:
        if isinstance(value, str):  # Jackson also accepts the ISO-8601 string form
            return datetime.fromisoformat(value).replace(tzinfo=None)
        if isinstance(value, list) and 3 <= len(value) <= 7 and all(type(v) is int for v in value):
            y, mo, d, h, mi, s, ns = list(value) + [0] * (7 - len(value))
            # Python keeps microseconds: finer Java nanos are truncated.
            return datetime(y, mo, d, h, mi, s, ns // _NANOS_PER_MICRO)
    except ValueError as e:
        raise CorruptMetadataError(f"{what}: 'tagCreateTime' {value!r} is not a date-time ({e})") from e
    raise CorruptMetadataError(
        f"{what}: 'tagCreateTime' must be [year, month, day, hour, minute(, second(, nano))], found {value!r}"
    )


def _duration_ms_to_json(ms: int) -> RawNumber:
    """Java Duration as Jackson writes it: decimal seconds with nine fraction digits."""
    return RawNumber(str((Decimal(ms) / _MS_PER_SECOND).quantize(_NINE_PLACES)))


def _duration_ms_from_json(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise CorruptMetadataError(f"{what}: 'tagTimeRetained' must be a number of seconds, found {value!r}")
    try:
        # Sub-millisecond parts are dropped (floor), the unit this engine keeps.
        return int((Decimal(value) * _MS_PER_SECOND).to_integral_value(rounding=ROUND_FLOOR))
    except InvalidOperation as e:
        raise CorruptMetadataError(f"{what}: 'tagTimeRetained' {value!r} is not a finite number") from e


@dataclass(frozen=True, slots=True)
class Tag:
    """A tag file: the tagged snapshot's JSON plus, when a retention is set, its creation time.

    ``create_time`` is a naive local wall-clock time (Java ``LocalDateTime``; tz info, if any, is
    ignored); ``time_retained_ms`` is the retention in milliseconds.
    """

    snapshot: Snapshot
    create_time: datetime | None = None
    time_retained_ms: int | None = None

    def to_json(self) -> str:
        """The tag file content: snapshot keys, then ``tagCreateTime`` / ``tagTimeRetained`` if set.

        Returns:
            Pretty-printed JSON; with neither tag key set it equals ``snapshot.to_json()``.
        """
        pairs = self.snapshot._json_pairs()
        if self.create_time is not None:
            pairs.append(("tagCreateTime", _local_datetime_to_array(self.create_time)))
        if self.time_retained_ms is not None:
            pairs.append(("tagTimeRetained", _duration_ms_to_json(self.time_retained_ms)))
        return _pretty(pairs)

    @staticmethod
    def from_json(text: str | bytes) -> Tag:
        """Parse a tag file (Java or pypaimon written).

        Args:
            text: The file content.

        Returns:
            The tag.

        Raises:
            CorruptMetadataError: As :meth:`Snapshot.from_json`, or a malformed tag key.
        """
        what = "tag JSON"
        d = _parse_object(text, what)
        snapshot = _snapshot_from_mapping(d, what)
        raw_time = d.get("tagCreateTime")
        raw_retained = d.get("tagTimeRetained")
        return Tag(
            snapshot=snapshot,
            create_time=None if raw_time is None else _local_datetime_from_json(raw_time, what),
            time_retained_ms=None if raw_retained is None else _duration_ms_from_json(raw_retained, what),
        )


# ---------------------------------------------------------------------------------------------
# Consumers


@dataclass(frozen=True, slots=True)
class Consumer:
    """A streaming consumer's progress (``consumer/consumer-ID``): the next snapshot it will read."""

    next_snapshot: int

    def to_json(self) -> str:
        """The consumer file content.

        Returns:
            Pretty-printed ``{"nextSnapshot" : N}``.
        """
        return _pretty([("nextSnapshot", self.next_snapshot)])

    @staticmethod
    def from_json(text: str | bytes) -> Consumer:
        """Parse a consumer file.

        Args:
            text: The file content.

        Returns:
            The consumer.

        Raises:
            CorruptMetadataError: Bad JSON, or ``nextSnapshot`` missing or not an integer.
        """
        what = "consumer JSON"
        return Consumer(next_snapshot=_req_int(_parse_object(text, what), "nextSnapshot", what))
