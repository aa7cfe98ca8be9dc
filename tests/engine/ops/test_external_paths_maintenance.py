"""Tables writing to external paths (``data-file.external-paths``): every operation finds the files
there — reads, compaction, expiration, orphan cleanup and ``remove_missing_files`` — and none of
them deletes a live one."""

from __future__ import annotations

import os

import pytest

from engine.errors import InvalidArgumentError
from engine.ops.reachability import reachable_files
from tests.engine.ops.conftest import SCHEMA, content, rows
from tests.engine.ops.test_orphan_files import age, all_files, plant


def external_table(catalog, tmp_path, strategy="round-robin", **kw):
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    options = {"data-file.external-paths": ",".join(f"file://{r}" for r in roots),
               "data-file.external-paths.strategy": strategy,
               "file-index.bloom-filter.columns": "v", "file-index.in-manifest-threshold": "1 b",
               **kw.pop("options", {})}
    t = catalog.create_table("db.ext", SCHEMA, partition_keys=["p"], options=options, **kw)
    return t, [str(r) for r in roots]


def live_paths(t) -> list[str]:
    return reachable_files(t.store.io, t.path).paths()


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
@pytest.mark.parametrize("keys", [{}, {"primary_keys": ["id", "p"], "options": {"bucket": "2"}}])
def test_files_go_to_the_external_roots_and_every_operation_finds_them(catalog, tmp_path, strategy, keys):
    t, roots = external_table(catalog, tmp_path, strategy, **keys)
    for i in range(3):
        t.write_arrow(rows(range(i * 3, i * 3 + 4), v=f"w{i}"))
    t = t.refresh()
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert files and all(f.external_path.startswith(f"file:{tmp_path}/ext") for f in files)
    assert all("/p=a/bucket-" in f.external_path for f in files)
    # the file indexes (over the in-manifest threshold: separate files) sit beside their data files
    assert all(f.extra_files for f in files)
    for f in files:
        data = t.store.paths.external_file(f.external_path)
        assert os.path.exists(data) and os.path.exists(os.path.join(os.path.dirname(data), f.extra_files[0]))
    assert not any(n.endswith(".parquet") for n in all_files(t.path))  # nothing inside the table
    expected = content(t)
    t.compact(full=True)
    t = t.refresh()
    assert content(t) == expected
    assert all(f.external_path for s in t.new_scan().plan().splits for f in s.files)
    report = t.maintenance.remove_missing_files()
    assert report.paths == () and report.snapshot_id is None
    assert all(os.path.exists(p) for p in live_paths(t))


def test_expiration_deletes_expired_external_files_and_keeps_live_ones(catalog, tmp_path):
    t, _ = external_table(catalog, tmp_path)
    t.write_arrow(rows([1, 2]))
    first = {t.store.paths.external_file(f.external_path)
             for s in t.new_scan().plan().splits for f in s.files}
    t.write_arrow(rows([3, 4]), overwrite=True)
    t.write_arrow(rows([5]))
    t = t.refresh()
    expected = content(t)
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert report.snapshots == (1, 2)
    assert first and not any(os.path.exists(p) for p in first)
    live = live_paths(t)
    assert any(p.startswith(str(tmp_path / "ext")) for p in live)
    assert all(os.path.exists(p) for p in live)
    assert content(t.refresh()) == expected


def test_orphan_cleanup_lists_the_external_roots(catalog, tmp_path):
    t, roots = external_table(catalog, tmp_path, "entropy-inject")
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3], p="b"))
    live = set(live_paths(t))
    orphans = {
        plant(os.path.join(roots[0], "p=a", "bucket-0", "0101", "data-crashed-0.parquet"), 40),
        plant(os.path.join(roots[1], "p=b", "bucket-0", "data-crashed-1.parquet"), 40),
        plant(os.path.join(roots[1], "p=zz", "bucket-0", "data-job-0.parquet"), 40),
    }
    keep = {plant(os.path.join(roots[0], "notes.txt")),  # not a data directory: not ours to judge
            plant(os.path.join(roots[0], "other", "bucket-0", "data-x.parquet"))}
    age(str(tmp_path))
    expected = content(t)
    done = t.maintenance.remove_orphan_files()
    assert set(done.paths()) == orphans
    assert not any(os.path.exists(p) for p in orphans)
    assert all(os.path.exists(p) for p in live | keep)
    assert os.path.join(roots[1], "p=zz") in done.removed_dirs
    assert content(t) == expected


def test_remove_missing_files_drops_a_lost_external_file_only(catalog, tmp_path):
    t, _ = external_table(catalog, tmp_path)
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3]))
    t = t.refresh()
    lost = next(f for s in t.new_scan().plan().splits for f in s.files if f.row_count == 1)
    path = t.store.paths.external_file(lost.external_path)
    os.remove(path)
    report = t.maintenance.remove_missing_files()
    assert report.paths == (path,) and report.snapshot_id is not None
    assert content(t.refresh()) == [(1, "x1", "a"), (2, "x2", "a")]


@pytest.mark.parametrize(("key", "value", "words"), [
    ("data-file.external-paths", "/no/scheme", "no scheme"),
    ("data-file.external-paths.strategy", "random", "expected one of"),
    ("data-file.external-paths.weights", "1,x", "positive integer"),
])
def test_bad_external_path_options_are_refused_at_create(catalog, key, value, words):
    with pytest.raises(InvalidArgumentError, match=words):
        catalog.create_table("db.bad", SCHEMA, options={key: value})
