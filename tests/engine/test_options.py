"""Table options: declarations, value parsing, validation and the typed view."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.option_checks import PAIMON_STORED_KEYS, check_alterable, validate_options
from engine.options import (
    ALL_OPTIONS,
    BUCKET,
    FIELDS_AGGREGATE_FUNCTION,
    INT_MAX,
    CoreOptions,
    find_option,
    format_duration,
    format_memory_size,
    parse_bool,
    parse_duration,
    parse_memory_size,
)
from engine.options_doc import options_reference_markdown

MB = 1 << 20


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1 h", 3_600_000),
        ("1h", 3_600_000),
        ("2 hours", 7_200_000),
        ("30 min", 1_800_000),
        ("30min", 1_800_000),
        ("5 m", 300_000),
        ("10 s", 10_000),
        ("10s", 10_000),
        ("100 ms", 100),
        ("100", 100),
        ("7 d", 604_800_000),
        ("1 days", 86_400_000),
        ("PT1H", 3_600_000),
        ("pt30m", 1_800_000),
        ("P1D", 86_400_000),
        ("PT0.5S", 500),
        ("P1DT2H", 93_600_000),
        ("1500 us", 1),
        (" 3 SECONDS ", 3000),
        ("0 ms", 0),
    ],
)
def test_parse_duration(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("bad", ["", "h", "1 fortnight", "-1 h", "1.5 h", "PT", "P", "1 h 30 min"])
def test_parse_duration_errors(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("256 mb", 256 * MB),
        ("128MB", 128 * MB),
        ("1 gb", 1 << 30),
        ("1024", 1024),
        ("8 kb", 8192),
        ("1 b", 1),
        ("2 t", 2 << 40),
        ("64 MiB", 64 * MB),
    ],
)
def test_parse_memory_size(text: str, n: int) -> None:
    assert parse_memory_size(text) == n


@pytest.mark.parametrize("bad", ["", "mb", "1.5 mb", "-1", "12 parsecs"])
def test_parse_memory_size_errors(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_memory_size(bad)


def test_parse_bool() -> None:
    assert parse_bool("TRUE") is True and parse_bool(" false ") is False
    with pytest.raises(InvalidArgumentError):
        parse_bool("yes")


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**12))
def test_formatted_durations_and_sizes_parse_back(n: int) -> None:
    assert parse_duration(format_duration(n)) == n
    assert parse_memory_size(format_memory_size(n)) == n


# ---- declarations --------------------------------------------------------------------------------


def test_declarations_are_unique_and_defaults_consistent() -> None:
    keys = [o.key for o in ALL_OPTIONS]
    assert len(keys) == len(set(keys))
    for o in ALL_OPTIONS:
        assert o.description
        if o.default is not None:
            assert o.parse(o.default_text, validate=False) == o.default, o.key


def test_paimon_keys_and_defaults() -> None:
    c = CoreOptions({})
    expected = {
        "bucket": -1,
        "merge-engine": "deduplicate",
        "changelog-producer": "none",
        "file.format": "parquet",
        "file.compression": "zstd",
        "manifest.compression": "zstd",
        "write-buffer-size": 256 * MB,
        "num-sorted-run.compaction-trigger": 5,
        "compaction.max-size-amplification-percent": 200,
        "compaction.size-ratio": 1,
        "write-only": False,
        "change-tracking": True,
        "snapshot.num-retained.min": 10,
        "snapshot.num-retained.max": INT_MAX,
        "snapshot.time-retained": 3_600_000,
        "snapshot.expire.limit": 50,
        "commit.max-retries": 10,
        "commit.min-retry-wait": 10,
        "commit.max-retry-wait": 10_000,
        "branch": "main",
        "partition.default-name": "__DEFAULT_PARTITION__",
        "partition.legacy-name": True,
        "metadata.stats-mode": "truncate(16)",
        "manifest.target-file-size": 8 * MB,
        "manifest.merge-min-count": 30,
        "dynamic-bucket.target-row-num": 2_000_000,
        "data-file.prefix": "data-",
        "changelog-file.prefix": "changelog-",
        "deletion-vectors.enabled": False,
        "scan.mode": "default",
        "tag.automatic-creation": "none",
        "ignore-delete": False,
        "partial-update.remove-record-on-delete": False,
    }
    for key, value in expected.items():
        option = find_option(key)
        assert option is not None, key
        assert c.get(option) == value, key
    for key in (
        "target-file-size",
        "num-sorted-run.stop-trigger",
        "num-levels",
        "full-compaction.delta-commits",
        "commit.timeout",
        "scan.snapshot-id",
        "scan.tag-name",
        "scan.timestamp-millis",
        "scan.timestamp",
        "consumer-id",
        "consumer.expiration-time",
        "partition.expiration-time",
        "sequence.field",
        "partition.timestamp-formatter",
        "partition.timestamp-pattern",
        "tag.num-retained-max",
        "tag.default-time-retained",
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "changelog.time-retained",
        "bucket-key",
        "snapshot.clean-empty-directories",
    ):
        assert find_option(key) is not None, key


def test_typed_accessors_and_derived_defaults() -> None:
    c = CoreOptions({})
    assert c.bucket == -1 and c.bucket_keys == () and c.sequence_fields == ()
    assert c.target_file_size(True) == 128 * MB and c.target_file_size(False) == 256 * MB
    assert c.num_sorted_run_stop_trigger == 8 and c.num_levels == 6
    assert c.commit_timeout is None and c.commit_max_retries == 10
    assert c.changelog_num_retained_min == 10 and c.changelog_num_retained_max == INT_MAX
    assert c.changelog_time_retained == 3_600_000
    c2 = CoreOptions(
        {
            "num-sorted-run.compaction-trigger": "3",
            "target-file-size": "64 mb",
            "snapshot.time-retained": "2 h",
            "changelog.time-retained": "1 d",
            "merge-engine": "Partial-Update",
            "bucket-key": "a, b",
            "fields.x.aggregate-function": "sum",
            "fields.default-aggregate-function": "max",
            "fields.s1,s2.sequence-group": "a,b",
            "fields.y.ignore-retract": "true",
            "commit.timeout": "1 min",
        }
    )
    assert c2.num_sorted_run_stop_trigger == 6 and c2.num_levels == 4
    assert c2.target_file_size(True) == 64 * MB and c2.snapshot_time_retained == 7_200_000
    assert c2.changelog_time_retained == 86_400_000 and c2.commit_timeout == 60_000
    assert c2.merge_engine == "partial-update" and c2.bucket_keys == ("a", "b")
    assert c2.aggregate_function("x") == "sum" and c2.aggregate_function("z") == "max"
    assert c2.field_option(FIELDS_AGGREGATE_FUNCTION, "x") == "sum"
    assert c2.ignore_retract("y") and not c2.ignore_retract("x")
    assert c2.sequence_groups() == {("s1", "s2"): ("a", "b")}
    assert "bucket-key" in c2 and c2.to_dict()["bucket-key"] == "a, b"
    with pytest.raises(AttributeError):
        _ = c.no_such_option


def test_every_declared_option_is_an_attribute() -> None:
    c = CoreOptions({})
    for o in ALL_OPTIONS:
        name = o.key.replace(".", "_").replace("-", "_")
        if not o.is_pattern and name not in vars(CoreOptions):  # explicit accessors add derived defaults
            assert getattr(c, name) == c.get(o)


def test_reading_stored_values_skips_policy_checks() -> None:
    c = CoreOptions({"file.format": "orc", "deletion-vectors.enabled": "true", "bucket": "-1"})
    assert c.file_format == "orc" and c.deletion_vectors_enabled is True and c.bucket == -1
    with pytest.raises(InvalidArgumentError, match="bucket"):
        _ = CoreOptions({"bucket": "lots"}).bucket


# ---- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ok",
    [
        {"bucket": "4"},
        {"bucket": "-1"},
        {"bucket": "-2"},
        {"merge-engine": "aggregation"},
        {"changelog-producer": "full-compaction"},
        {"fields.price.aggregate-function": "last_non_null_value"},
        {"fields.a,b.sequence-group": "c,d"},
        {"fields.p.ignore-retract": "TRUE"},
        {"log.kafka.topic": "t"},
        {"log.consistency": "eventual"},
        {"k1": "v1"},  # any other key is a plain table property, as in Paimon
        {"my.tag": "x", "foo": "1"},
        {"metadata.stats-mode": "full"},
        {"fields.c.stats-mode": "truncate(32)"},
        {"snapshot.time-retained": "PT2H"},
        {"write-buffer-size": "1 gb"},
        {"lookup.cache-max-memory-size": "1 gb"},  # a Paimon option dyntable does not declare: kept
        {"file.format": "PARQUET"},
        {"scan.mode": "latest-full"},
        {"tag.creation-period": "hourly"},
    ],
)
def test_valid_options(ok: dict[str, str]) -> None:
    validate_options(ok)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"data-file.external-paths": "d"}, ["data-file.external-paths", "no scheme"]),
        ({"record-level.expire-time": "1 d"}, ["not supported"]),
        ({"file-index.bsi.columns": "a"}, ["not supported"]),
        ({"full-compaction.delta-commits": "0"}, ["full-compaction.delta-commits"]),
        ({"consumer.ignore-progress": "true"}, ["not supported"]),
        ({"incremental-between-scan-mode": "sideways"}, ["incremental-between-scan-mode"]),
        ({"bucket-function.type": "mod"}, ["not supported"]),
        ({"manifest.format": "orc"}, ["avro"]),
        ({"log.system": "kafka"}, ["log system"]),
        ({"partition.mark-done-action": "success-file,mark-event"}, ["mark-event"]),
        ({"partition.mark-done-action": "done-partition,http-report"}, ["http-report"]),
        ({"bucket": "0"}, ["'bucket'", "'0'"]),
        ({"bucket": "two"}, ["'bucket'", "'two'", "integer"]),
        ({"merge-engine": "last-row"}, ["'merge-engine'", "'last-row'", "deduplicate"]),
        ({"fields.p.aggregate-function": "median"}, ["median", "sum"]),
        ({"snapshot.time-retained": "soon"}, ["snapshot.time-retained", "soon", "duration"]),
        ({"write-buffer-size": "big"}, ["write-buffer-size", "memory size"]),
        ({"write-only": "yes"}, ["write-only", "boolean"]),
        ({"metadata.stats-mode": "truncate"}, ["metadata.stats-mode"]),
        ({"file.format": "lance"}, ["parquet", "orc", "avro"]),
        ({"num-sorted-run.compaction-trigger": "0"}, ["at least 1"]),
        ({"bucket": 3}, ["strings"]),
    ],
)
def test_invalid_options(bad: dict, words: list[str]) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        validate_options(bad)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize(
    ("key", "guess"),
    [
        ("bukcet", "bucket"),
        ("buckets", "bucket"),
        ("merge-engin", "merge-engine"),
        ("snapshot.num-retained.mx", "snapshot.num-retained.max"),
        ("fields.p.agregate-function", "fields.p.aggregate-function"),
        ("changelog-file.compresion", "changelog-file.compression"),  # a Paimon key dyntable only stores
    ],
)
def test_near_miss_keys_are_refused_with_the_key_they_likely_mean(key: str, guess: str, caplog) -> None:
    with caplog.at_level("WARNING"), pytest.raises(InvalidArgumentError) as e:
        validate_options({key: "4"})
    assert f"option '{key}' is not a table option dyntable or Paimon knows." in str(e.value)
    assert f"Did you mean '{guess}'?" in str(e.value)
    assert not caplog.records  # the caller hears of it; nothing is logged


def test_unrelated_keys_are_stored_without_a_word(caplog) -> None:
    with caplog.at_level("WARNING"):
        validate_options({"k1": "v1", "owner": "team-a", "dyntable.note": "x", "myteam.bukcet": "4"})
    assert not caplog.records


def test_the_stored_paimon_keys_are_none_dyntable_declares() -> None:
    # A key dyntable starts to honour is declared in engine/options.py and leaves the stored list,
    # or its values would be validated by one list and waved through by the other.
    assert sorted(k for k in PAIMON_STORED_KEYS if find_option(k) is not None) == []


def test_every_paimon_key_dyntable_does_not_declare_is_stored() -> None:
    # Real Paimon keys close to one of dyntable's (changelog-file.compression / changelog-file.prefix,
    # scan.fallback-delta-branch / scan.fallback-branch, ...) are never taken for misspellings.
    assert "scan.fallback-delta-branch" in PAIMON_STORED_KEYS
    validate_options({key: "x" for key in PAIMON_STORED_KEYS})


def test_check_alterable() -> None:
    for key in (
        "bucket",
        "merge-engine",
        "primary-key",
        "partition",
        "bucket-key",
        "sequence.field",
        "partition.default-name",
    ):
        with pytest.raises(InvalidArgumentError, match=key):
            check_alterable(key)
    for key in (
        "snapshot.num-retained.min",
        "changelog-producer",
        "fields.x.aggregate-function",
        "unknown.key",
    ):
        check_alterable(key)
    with pytest.raises(InvalidArgumentError, match="CLUSTERED INTO"):
        check_alterable(BUCKET.key)


def test_reference_markdown_lists_every_option() -> None:
    md = options_reference_markdown()
    assert md.startswith("| key | type | default |")
    for o in ALL_OPTIONS:
        assert f"| `{o.key}` |" in md
    assert "| `bucket` | int | `-1` | no |" in md
    assert "`256 mb`" in md and "`1 h`" in md


def test_generated_option_reference_is_current():
    from pathlib import Path


    doc = (Path(__file__).resolve().parents[2] / "docs" / "options.md").read_text()
    assert options_reference_markdown() in doc, "run: python -m engine.options_doc > docs/options.md"
