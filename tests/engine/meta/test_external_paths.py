"""engine.meta.external_paths: which external root and path a new data file gets, by Paimon's rules."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from engine.errors import InvalidArgumentError
from engine.meta.external_paths import ExternalPaths, entropy_dirs, murmur3_32, normalise_root


def opts(paths: str, strategy: str, **more: str) -> dict[str, str]:
    return {"data-file.external-paths": paths, "data-file.external-paths.strategy": strategy,
            **{f"data-file.external-paths.{k.replace('_', '-')}": v for k, v in more.items()}}


def test_murmur3_32_matches_the_reference_vectors():
    # MurmurHash3 x86_32, seed 0 (the reference implementation's published values)
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"hello") == 0x248BFA47
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog") == 0x2E4FF723


@pytest.mark.parametrize(("given", "recorded"), [
    ("file:///data/ext/", "file:/data/ext"),  # Paimon's Path drops the empty authority
    ("file:/data/ext", "file:/data/ext"),
    ("s3://bucket/t", "s3://bucket/t"),
    (" oss://b/x/ ", "oss://b/x"),
])
def test_roots_are_recorded_as_paimon_prints_them(given, recorded):
    assert normalise_root(given) == recorded


def test_a_root_without_a_scheme_is_refused():
    with pytest.raises(InvalidArgumentError, match="no scheme"):
        ExternalPaths.of(opts("/data/ext", "round-robin"))


def test_strategy_none_or_no_roots_keeps_files_in_the_table():
    assert ExternalPaths.of(opts("file:///a", "none")) is None
    assert ExternalPaths.of({"data-file.external-paths.strategy": "round-robin"}) is None
    assert ExternalPaths.of({}) is None


def test_round_robin_takes_the_roots_in_turn():
    p = ExternalPaths.of(opts("file:///a,file:///b,file:///c", "round-robin")).provider("dt=1/bucket-0")
    got = [p.next(f"data-{i}.parquet") for i in range(6)]
    roots = [g.split("/dt=1/")[0] for g in got]
    assert roots[:3] == roots[3:] and sorted(roots[:3]) == ["file:/a", "file:/b", "file:/c"]
    assert got[0].endswith("/dt=1/bucket-0/data-0.parquet")


def test_specific_fs_writes_only_to_roots_of_that_scheme():
    paths = ExternalPaths.of(opts("file:///a,s3://b/t,s3://c/t", "specific-fs", specific_fs="s3"))
    p = paths.provider("bucket-0")
    assert {p.next("f").rsplit("/bucket-0/", 1)[0] for _ in range(6)} == {"s3://b/t", "s3://c/t"}
    with pytest.raises(InvalidArgumentError, match="specific-fs"):
        ExternalPaths.of(opts("file:///a", "specific-fs"))
    with pytest.raises(InvalidArgumentError, match="no external path left"):
        ExternalPaths.of(opts("file:///a", "specific-fs", specific_fs="oss"))


def test_entropy_inject_puts_hash_directories_before_the_name():
    p = ExternalPaths.of(opts("file:///a,file:///b", "entropy-inject")).provider("bucket-3")
    first, second = p.next("data-x-0.parquet"), p.next("data-x-1.parquet")
    # Paimon's provider starts at position 0 and moves before it picks: the second root first
    assert first.startswith("file:/b/bucket-3/") and second.startswith("file:/a/bucket-3/")
    dirs = entropy_dirs("data-x-0.parquet")
    assert re.fullmatch(r"[01]{4}/[01]{4}/[01]{4}/[01]{8}", dirs)
    assert first == f"file:/b/bucket-3/{dirs}/data-x-0.parquet"
    bits = format(murmur3_32(b"data-x-0.parquet") | 0x80000000, "b")[-20:]
    assert dirs.replace("/", "") == bits


def test_weight_robin_draws_by_weight_and_checks_the_weights():
    p = ExternalPaths.of(opts("file:///a,file:///b", "weight-robin", weights="1,3"))
    counts = Counter(p.provider("bucket-0").next("f").split("/bucket-0/")[0] for _ in range(400))
    assert set(counts) == {"file:/a", "file:/b"} and counts["file:/b"] > counts["file:/a"]
    with pytest.raises(InvalidArgumentError, match="2 weights for 3"):
        ExternalPaths.of(opts("file:///a,file:///b,file:///c", "weight-robin", weights="1,2"))
    with pytest.raises(InvalidArgumentError, match="positive integer"):
        ExternalPaths.of(opts("file:///a,file:///b", "weight-robin", weights="1,-2"))
