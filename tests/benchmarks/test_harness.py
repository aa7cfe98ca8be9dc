"""The benchmark machinery: pairing, ratios, checks, checksums, printing, JSON, and a tiny real run.

Spark only in the W3c smoke test (marked ``spark``); the other smoke runs select engine-only
workloads at ``--size tiny``.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import WORKLOADS, run_suite, select
from benchmarks.__main__ import main
from benchmarks.data import S20_SCHEMA, T8_SCHEMA, apply_cdc, cdc, s20, t8
from benchmarks.harness import (
    SIZES,
    Arm,
    Context,
    Outcome,
    Reported,
    Result,
    arrow_checksum,
    compare,
    expect,
    format_line,
    unique_keys_last,
    write_json,
)

# -- pairing and ratios ----------------------------------------------------------------------------


def test_compare_alternates_warms_up_and_reports_ratios():
    calls: list[str] = []

    def arm(name: str, seconds: float) -> Arm:
        def run() -> Reported:
            calls.append(name)
            return Reported(seconds, Outcome(10, 42))

        return Arm(run=run, setup=lambda: calls.append(f"setup-{name}"))

    result = compare("X1", "fake", arm("ours", 2.0), arm("base", 1.0), pairs=4, rows=10, target=">= 0.5")
    runs = [c for c in calls if not c.startswith("setup")]
    # one warm-up each, then strict alternation A B A B
    assert runs == ["ours", "base"] * 5
    assert calls[0] == "setup-ours" and calls[2] == "setup-base"
    assert result.ratios == [0.5] * 4
    assert result.best == 0.5 and result.median == 0.5
    assert result.ours_times == [2.0] * 4 and result.baseline_times == [1.0] * 4
    assert result.ok


def test_compare_enforces_minimum_pairs_and_times_only_run():
    import time

    slow_setup = Arm(run=lambda: Outcome(1), setup=lambda: time.sleep(0.05))
    fast = Arm(run=lambda: Outcome(1))
    result = compare("X2", "setup untimed", slow_setup, fast, pairs=1)
    assert len(result.ratios) == 3
    assert max(result.ours_times) < 0.04  # the 50 ms setup is outside the timed region


def test_failed_check_is_recorded_not_hidden():
    ours = Arm(run=lambda: Outcome(10, 1))
    wrong = Arm(run=lambda: Outcome(11, 1))
    result = compare("X3", "wrong rows", ours, wrong, pairs=3)
    assert not result.ok
    assert "row count 10" in result.check
    assert "CHECK FAILED" in format_line(result)

    bad_sum = compare(
        "X4", "wrong checksum", Arm(run=lambda: Outcome(5, 1)), Arm(run=lambda: Outcome(5, 2)), pairs=3
    )
    assert "checksum" in bad_sum.check

    unchecked = compare("X7", "no outcome", Arm(run=lambda: None), Arm(run=lambda: None), pairs=3)
    assert not unchecked.ok and "no outcome" in unchecked.check


def test_verify_runs_untimed_on_first_pair_and_expectations_per_arm():
    verified: list[int] = []

    def verify(value: int) -> Outcome:
        verified.append(value)
        return Outcome(value)

    result = compare(
        "X5",
        "expect",
        Arm(run=lambda: 3, verify=verify),
        Arm(run=lambda: 7, verify=verify),
        pairs=3,
        check=expect(Outcome(3), Outcome(7)),
    )
    assert result.ok
    assert verified == [3, 7, 3, 7]  # warm-up and first pair only
    mismatch = compare(
        "X6",
        "expect",
        Arm(run=lambda: 3, verify=verify),
        Arm(run=lambda: 7, verify=verify),
        pairs=3,
        check=expect(Outcome(4), None),
    )
    assert mismatch.check.startswith("FAILED: ours")


# -- checksums ------------------------------------------------------------------------------------


def test_checksum_ignores_row_order_chunking_and_type_variants():
    table = t8(3_000, seed=3)
    base = arrow_checksum(table)
    assert base.rows == 3_000
    shuffled = table.take(pa.array(np.random.default_rng(0).permutation(3_000)))
    chunked = pa.concat_tables([table.slice(0, 1000), table.slice(1000)])
    wide = table.cast(
        pa.schema(
            [
                pa.field(f.name, pa.large_string())
                if f.type == pa.string()
                else pa.field(f.name, pa.timestamp("ns"))
                if f.name == "ts"
                else pa.field(f.name, pa.int64())
                if f.name == "qty"
                else f
                for f in table.schema
            ]
        )
    )
    assert arrow_checksum(shuffled) == base
    assert arrow_checksum(chunked) == base
    assert arrow_checksum(wide) == base


def test_checksum_sees_changed_values_columns_and_nulls():
    table = pa.table({"a": [1, 2, 3], "s": ["x", "yz", None]})
    base = arrow_checksum(table)
    assert arrow_checksum(table.set_column(1, "s", pa.array(["x", "zy", None]))) != base
    assert arrow_checksum(table.set_column(1, "s", pa.array(["x", "yz", ""]))) != base
    assert arrow_checksum(table.set_column(0, "a", pa.array([1, 2, 4]))) != base
    assert arrow_checksum(table.select(["s", "a"])) != base  # column order matters
    assert arrow_checksum(table, ["a"]) == arrow_checksum(table.select(["a"]))
    assert arrow_checksum(table.slice(0, 0)) == Outcome(0, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=1, max_size=30), st.integers(0, 2**32))
def test_string_hash_paths_agree(values, seed):
    # Fixed-width, short variable-width and long (prefix-sum) paths must give the same code per value.
    strings = pa.array(values, pa.string())
    single = [arrow_checksum(pa.table({"s": [v]})).checksum for v in values]
    together = arrow_checksum(pa.table({"s": strings}))
    assert together.checksum == sum(single) % 2**64
    order = np.random.default_rng(seed).permutation(len(values))
    assert arrow_checksum(pa.table({"s": strings.take(pa.array(order))})) == together


# -- data -----------------------------------------------------------------------------------------


def test_generators_are_seeded_and_shaped():
    a, b = t8(2_000, seed=1), t8(2_000, seed=1)
    assert a.equals(b) and a.schema == T8_SCHEMA
    assert sorted(a.column("id").to_pylist()) == list(range(2_000))
    assert set(len(x) for x in a.column("token").to_pylist()) == {16}
    assert len(set(a.column("category").to_pylist())) <= 1_000
    s = s20(500)
    assert s.schema == S20_SCHEMA and s.num_columns == 21
    assert set(len(x) for x in s.column("s07").to_pylist()) == {10}


def test_cdc_batch_mix_and_expected_state():
    base = t8(1_000, seed=4)
    batch = cdc(1_000, 400, seed=5)
    kinds = batch.column("rowkind").to_pylist()
    assert (kinds.count("+U"), kinds.count("+I"), kinds.count("-D")) == (320, 60, 20)
    assert len(set(batch.column("id").to_pylist())) == 400
    merged = apply_cdc(base, batch)
    assert merged.num_rows == 1_000 + 60 - 20
    deleted = {i for i, k in zip(batch.column("id").to_pylist(), kinds, strict=True) if k == "-D"}
    assert not deleted & set(merged.column("id").to_pylist())
    with pytest.raises(ValueError, match="existing keys"):
        cdc(10, 100, seed=1)


def test_unique_keys_last_keeps_highest_sequence():
    t = pa.table({"id": [2, 1, 2, 1], "seq": [1, 2, 3, 0], "v": ["a", "b", "c", "d"]})
    out = unique_keys_last(t, "id", [("id", "ascending"), ("seq", "ascending")])
    assert out.to_pydict() == {"id": [1, 2], "seq": [2, 3], "v": ["b", "c"]}


# -- printing, JSON, CLI --------------------------------------------------------------------------


def test_line_format_and_json(tmp_path):
    r = Result(
        "W1",
        "append write",
        ">= 0.8",
        ratios=[0.91, 0.88, 0.8],
        ours_times=[1.23, 1.3, 1.2],
        baseline_times=[1.12, 1.1, 1.0],
        rows=1_000_000,
    )
    line = format_line(r)
    assert line.startswith("W1    append write")
    assert "ratio best 0.91 median 0.88" in line and "1,000,000 rows" in line and "ours 1.23 s" in line
    path = write_json([r], tmp_path, {"size": "tiny"})
    doc = json.loads(path.read_text())
    assert doc["meta"]["size"] == "tiny"
    assert doc["results"][0]["median"] == 0.88 and doc["results"][0]["key"] == "W1"


def test_select_and_cli_usage_errors(capsys):
    assert [w.key for w in select(["w5", "MERGE"])] == ["merge", "W5"]
    assert len(select(None)) == len(WORKLOADS)
    with pytest.raises(ValueError, match="unknown workload"):
        select(["W99"])
    assert main(["run", "--size", "tiny", "--only", "W99"]) == 2
    assert main(["list"]) == 0
    assert "W3b" in capsys.readouterr().out


def test_tiny_run_of_engine_workloads(tmp_path):
    lines: list[str] = []
    midway: list[dict] = []

    def echo(line: str) -> None:
        lines.append(line)
        if line.startswith("W5 "):  # merge is finished and recorded, W5 is not yet
            midway.extend(json.loads(p.read_text()) for p in (tmp_path / "out").glob("*.json"))

    results, path = run_suite(
        "tiny", ["merge", "W5"], pairs=3, out=tmp_path / "out", workdir=tmp_path / "work", echo=echo
    )
    assert [[r["key"] for r in d["results"]] for d in midway] == [["merge"]]
    assert midway[0]["meta"]["complete"] is False
    assert json.loads(path.read_text())["meta"]["complete"] is True
    assert [p.name for p in (tmp_path / "out").iterdir()] == [path.name]  # one record, rewritten
    assert [r.key for r in results] == ["merge", "W5", "W5w"]
    assert all(r.ok for r in results), [format_line(r) for r in results]
    assert all(len(r.ratios) == 3 and all(x > 0 for x in r.ratios) for r in results)
    assert results[1].extra["live files"] == 30
    assert any(line.startswith("merge ") for line in lines)
    doc = json.loads(path.read_text())
    assert [r["key"] for r in doc["results"]] == ["merge", "W5", "W5w"]


def test_cli_tiny_run_writes_json(tmp_path, capsys):
    assert main(["run", "--size", "tiny", "--only", "W6", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "W6 " in out and "W6f " in out and "flatness" in out
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_tiny_run_of_concurrent_writers(tmp_path):
    results, _path = run_suite("tiny", ["W10"], pairs=3, out=tmp_path / "out", workdir=tmp_path / "work",
                               echo=lambda _line: None)
    assert [r.key for r in results] == ["W10", "W10s"]
    for r in results:
        assert r.ok, format_line(r)
        assert len(r.ratios) == 3 and all(x > 0 for x in r.ratios)
        assert r.extra["success"] == "100%" and r.extra["writes"] == 4 * 3 * 3  # warm-up + 3 runs, 3 writers


# -- P2, W3c, plot --------------------------------------------------------------------------------


def test_tiny_run_of_p2_against_the_physical_floor(tmp_path):
    results, _path = run_suite("tiny", ["P2"], pairs=3, out=tmp_path / "out", workdir=tmp_path / "work",
                               echo=lambda _line: None)
    (p2,) = results
    assert p2.key == "P2" and p2.ok, format_line(p2)
    assert p2.rows == SIZES["tiny"].p1_rows and len(p2.ratios) == 3 and all(x > 0 for x in p2.ratios)
    assert {"ours write", "ours read", "floor write", "floor read"} <= set(p2.extra)


@pytest.mark.spark
def test_tiny_w3c_scans_small_files_before_and_after_compaction(tmp_path, spark):
    from benchmarks.workloads_spark import run_w3c

    size = dataclasses.replace(SIZES["tiny"], small_file_commits=6, small_file_rows=100)
    ctx = Context(size, 3, tmp_path)
    ctx.cache["spark"] = spark  # the shared test session, not the suite's own
    before, after = run_w3c(ctx)
    assert (before.key, after.key) == ("W3c", "W3cc")
    for r in (before, after):
        assert r.ok, format_line(r)
        assert r.rows == 600 and len(r.ratios) == 3
    assert before.extra["files"] == 6 and after.extra["files"] == 1


def _record(directory, stamp, size, results):
    directory.mkdir(parents=True, exist_ok=True)
    doc = {"meta": {"size": size}, "results": results}
    (directory / f"{stamp}.json").write_text(json.dumps(doc))


def test_history_keeps_one_size_in_time_order_and_skips_broken_records(tmp_path):
    from benchmarks.plot import load_history, parse_target

    kept, scratch = tmp_path / "history", tmp_path / "results"
    w1 = {"key": "W1", "title": "append write", "target": ">= 0.9", "median": 0.8, "best": 0.85}
    _record(kept, "20260101T000000000000Z", "small", [w1, {"key": "W3", "median": None, "error": "boom"}])
    _record(scratch, "20260102T000000000000Z", "small", [{**w1, "median": 0.95, "best": 1.0},
                                                         {"key": "W3", "median": 0.4, "best": 0.5}])
    _record(scratch, "20260101T000000000000Z", "small", [w1])  # the same run in both places: once
    _record(scratch, "20260103T000000000000Z", "tiny", [w1])  # another size: not comparable
    (scratch / "20260104T000000000000Z.json").write_text('{"meta": {"size": "sma')  # interrupted
    warnings: list[str] = []
    history = load_history("small", [kept, scratch], warnings.append)
    assert history.runs == ["20260101T000000000000Z", "20260102T000000000000Z"]
    assert history.series["W1"].medians == [0.8, 0.95] and history.series["W1"].runs == [0, 1]
    assert history.series["W1"].target == 0.9
    assert history.series["W3"].runs == [1] and history.series["W3"].bests == [0.5]
    assert len(warnings) == 1 and "20260104" in warnings[0]
    assert parse_target(">= 0.67, >= 50K entries/s") == 0.67 and parse_target("context") is None


def test_plot_draws_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    w1 = {"key": "W1", "title": "append write", "target": ">= 0.9", "median": 0.8, "best": 0.85}
    _record(tmp_path, "20260101T000000000000Z", "small", [w1])
    _record(tmp_path, "20260102T000000000000Z", "small", [{**w1, "median": 0.95}])
    png = tmp_path / "out" / "small.png"
    assert main(["plot", "--size", "small", "--dir", str(tmp_path), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", "--size", "large", "--dir", str(tmp_path), "--png", str(png)]) == 1  # no runs


def test_growth_takes_the_newest_run_of_each_size_in_size_order(tmp_path):
    from benchmarks.plot_sizes import load_growth

    def w2(median, ours):
        return {"key": "W2", "title": "upsert", "target": ">= 0.7", "median": median, "ours_times": ours}

    _record(tmp_path, "20260101T000000000000Z", "large", [w2(0.4, [40.0, 42.0, 44.0])])
    _record(tmp_path, "20260102T000000000000Z", "small", [w2(0.5, [4.0, 4.2, 4.4])])
    _record(tmp_path, "20260103T000000000000Z", "small", [w2(0.6, [3.0, 3.2, 3.4])])  # newer: wins
    _record(tmp_path, "20260104T000000000000Z", "tiny", [w2(0.9, [0.1, 0.1, 0.1])])  # not a growth size
    _record(tmp_path, "20260105T000000000000Z", "medium", [{"key": "W2", "median": None}])  # errored
    growth = load_growth([tmp_path], warn=lambda _m: None)
    g = growth["W2"]
    assert g.sizes == ["small", "large"] and g.ratios == [0.6, 0.4] and g.ours_s == [3.2, 42.0]
    assert g.runs == ["20260103T000000000000Z", "20260101T000000000000Z"] and g.target == 0.7


def test_growth_plot_draws_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    for stamp, size, median in (("20260101T0", "small", 0.6), ("20260102T0", "large", 0.5)):
        _record(tmp_path, stamp, size, [{"key": "W1", "median": median, "ours_times": [1.0, 1.0, 1.0]}])
    png = tmp_path / "growth.png"
    assert main(["plot", "--by-size", "--dir", str(tmp_path), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_growth_compares_runs_of_one_master_and_marks_drift_beyond_20_percent(tmp_path):
    from benchmarks.plot import master_kind
    from benchmarks.plot_sizes import growth_table, load_growth, memory_table

    def line(key, median, ours, rss=None):
        return {"key": key, "median": median, "ours_times": [ours] * 3, "peak_rss_mib": rss or {}}

    _record(tmp_path, "20260101T0", "small", [line("W1", 1.0, 2.0), line("W2", 0.5, 4.0)])
    _record(tmp_path, "20260102T0", "large", [line("W1", 0.9, 20.0, {"driver_jvm": 1040}),
                                              line("W2", 0.3, 60.0, {"driver_jvm": 1040})])
    cluster = {"meta": {"size": "small", "master": "local-cluster[2,1,1024]"},
               "results": [line("W1", 5.0, 1.0)]}
    (tmp_path / "20260103T0.json").write_text(json.dumps(cluster))  # newer, but another master
    growth = load_growth([tmp_path], warn=lambda _m: None)
    assert growth["W1"].ratios == [1.0, 0.9] and growth["W2"].ratios == [0.5, 0.3]
    assert load_growth([tmp_path], warn=lambda _m: None, master="local-cluster")["W1"].sizes == ["small"]
    assert master_kind({"spark_conf": {"master": "spark://h:7077"}}) == "cluster"
    assert master_kind({}) == "local"
    table = growth_table(growth).splitlines()
    w1 = next(r for r in table if r.startswith("| W1 "))
    w2 = next(r for r in table if r.startswith("| W2 "))
    assert "-10%" in w1 and "beyond" not in w1
    assert "-40%" in w2 and "beyond 20 %" in w2 and "| – |" in w2  # no medium run
    assert "| W1, W2 | – | 1040 |" in memory_table(growth)
