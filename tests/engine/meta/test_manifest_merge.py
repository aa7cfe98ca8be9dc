"""The manifest merge policy: a commit's merge keeps the live files exact, keeps the manifests few,
and rewrites each file's entry only about log2(history) times (not at every merge), checked
against a model of the live set over random histories of adds and deletes."""

from __future__ import annotations

import dataclasses
import math
import tempfile
import uuid

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import open_catalog
from engine.meta.manifest_store import ManifestStore

SCHEMA = pa.schema([("id", pa.int64())])


class MetadataTable:
    """A table whose commits add copies of one real file's metadata (hard links), so a long
    history builds in milliseconds; ``live`` is the model: the file names that should be live."""

    def __init__(self, root: str, merge_min_count: int) -> None:
        catalog = open_catalog(root)
        catalog.create_database("db")
        self.table = catalog.create_table(
            "db.t", SCHEMA, options={"manifest.merge-min-count": str(merge_min_count)}
        )
        writer = self.table.new_writer()
        writer.write(pa.table({"id": [1]}, schema=SCHEMA))
        self.template = writer.prepare_commit()[0]
        self.table.new_commit().commit([self.template])
        self.live = {f.file_name: f for f in self.template.new_files}

    def _copies(self, count: int):
        f = self.template.new_files[0]
        bucket_dir = self.table.store.paths.bucket_dir("", self.template.bucket)
        copies = []
        for _ in range(count):
            copy = dataclasses.replace(f, file_name=f"data-{uuid.uuid4()}-0.parquet")
            self.table.store.io.link_or_copy(f"{bucket_dir}/{f.file_name}", f"{bucket_dir}/{copy.file_name}")
            copies.append(copy)
        return tuple(copies)

    def add(self, count: int) -> None:
        files = self._copies(count)
        self.table.new_commit().commit([dataclasses.replace(self.template, new_files=files)])
        self.live.update((f.file_name, f) for f in files)

    def replace(self, names: list[str], count: int) -> None:
        """A compaction-like commit: delete ``names``, add ``count`` new files."""
        before = tuple(self.live[n] for n in names)
        after = self._copies(count)
        message = dataclasses.replace(self.template, new_files=(), compact_before=before, compact_after=after)
        self.table.new_commit().commit([message])
        for n in names:
            del self.live[n]
        self.live.update((f.file_name, f) for f in after)

    def manifests(self):
        store = self.table.refresh().store
        return store.manifests.data_manifests(store.snapshots.latest())

    def live_names(self) -> set[str]:
        store = self.table.refresh().store
        return {e.file.file_name for e in store.live_entries(store.snapshots.latest())}


@settings(max_examples=25, deadline=None)
@given(
    merge_min_count=st.integers(2, 6),
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "add", "replace"]), st.integers(1, 4), st.integers(0, 10_000)),
        min_size=1,
        max_size=40,
    ),
)
def test_merged_manifests_hold_exactly_the_live_files(merge_min_count, steps):
    with tempfile.TemporaryDirectory() as root:
        t = MetadataTable(root, merge_min_count)
        for op, count, seed in steps:
            if op == "add" or not t.live:
                t.add(count)
            else:
                names = sorted(t.live)
                picked = [names[(seed + i * 7) % len(names)] for i in range(min(count, len(names)))]
                t.replace(sorted(set(picked)), count - 1)
            assert t.live_names() == set(t.live)
        manifests = t.manifests()
        # Bounded by the deltas since the last merge plus about one manifest per tier.
        assert len(manifests) <= merge_min_count + math.log2(len(steps) + 1) + 2


def _record_calls(monkeypatch, method: str, record) -> list:
    """Patch ``ManifestStore.<method>`` to append ``record(first argument)`` to the returned list."""
    calls: list = []
    original = getattr(ManifestStore, method)

    def recording(self, first, *args, **kwargs):
        calls.append(record(first))
        return original(self, first, *args, **kwargs)

    monkeypatch.setattr(ManifestStore, method, recording)
    return calls


def test_each_file_is_rewritten_about_log_history_times_not_at_every_merge(monkeypatch, tmp_path):
    written = _record_calls(monkeypatch, "write_entries", len)
    t = MetadataTable(str(tmp_path), merge_min_count=5)
    commits, per_commit = 400, 3
    written.clear()
    for _ in range(commits):
        t.add(per_commit)
    files = commits * per_commit
    # Each commit writes its own delta (files entries in all); merges rewrite each entry about
    # log2(commits / merge-min-count) times. Rewriting every small manifest at every merge (the old
    # policy) wrote about files * commits / (2 * 5) = 48,000 entries here.
    rewritten = sum(written) - files
    assert rewritten <= files * (math.log2(commits / 5) + 2)
    assert t.live_names() == set(t.live)
    assert len(t.manifests()) <= 5 + math.log2(commits) + 1


def test_an_append_only_merge_opens_only_the_manifests_it_rewrites(monkeypatch, tmp_path):
    t = MetadataTable(str(tmp_path), merge_min_count=4)
    opened = _record_calls(monkeypatch, "read_entries", str)
    merges_that_kept = 0
    for _ in range(80):
        before = {m.file_name for m in t.manifests()}
        opened.clear()
        t.add(2)
        after = {m.file_name for m in t.manifests()}
        if not before <= after:  # this commit merged
            kept = before & after
            merges_that_kept += bool(kept)
            assert not kept & set(opened), "a kept manifest of an append-only history is never opened"
    assert merges_that_kept >= 5
    assert t.live_names() == set(t.live)
