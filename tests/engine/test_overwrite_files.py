"""An overwrite of exact data files (``OverwriteSpec(files=...)``, the copy-on-write rewrite of an
append table's DELETE/UPDATE/MERGE): only the named files are replaced, in one OVERWRITE snapshot;
other commits since the read, even to the same partition, are kept; a named file another commit
removed meanwhile is a conflict, nothing committed, the new files deleted."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import CommitKind, OverwriteSpec
from engine.errors import CommitConflictError, InvalidArgumentError

SCHEMA = pa.schema([("id", pa.int32()), ("p", pa.string())])


def _rows(ids, p="a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "p": [p] * len(ids)}, schema=SCHEMA)


def _live(t) -> list[str]:
    return sorted(e.file.file_name for e in t.store.live_entries(t.latest_snapshot()))


def _ids(t) -> list[int]:
    return sorted(t.to_arrow().column("id").to_pylist())


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={"compaction.min.file-num": "2"})
    t.write_arrow(_rows([1, 2]))
    t.write_arrow(_rows([3, 4]))
    t.write_arrow(_rows([5], "b"))
    return t


def _first_files(table) -> list[str]:
    """The files the first write added (rows 1 and 2)."""
    return sorted({e.file.file_name for e in table.store.live_entries(table.store.snapshots.get(1))})


def test_only_the_named_files_are_replaced(table):
    files, doomed = _live(table), _first_files(table)
    base = table.latest_snapshot().id
    result = table.write_arrow(_rows([2, 20]), OverwriteSpec(files=tuple(doomed)))
    assert table.latest_snapshot().commit_kind is CommitKind.OVERWRITE
    assert table.latest_snapshot().id == base + 1
    assert result.rows_added == 2
    assert _ids(table) == [2, 3, 4, 5, 20]
    assert set(files) - set(doomed) <= set(_live(table))  # the other files stay, untouched
    assert not set(doomed) & set(_live(table))


def test_a_commit_since_the_read_is_kept(table):
    doomed = _first_files(table)
    base = table.latest_snapshot().id
    table.write_arrow(_rows([6]))  # same partition, after the read
    table.write_arrow(_rows([9]), OverwriteSpec(files=tuple(doomed)))
    assert _ids(table) == [3, 4, 5, 6, 9]
    assert base + 2 == table.latest_snapshot().id


def test_a_named_file_removed_meanwhile_is_a_conflict(table):
    doomed = _first_files(table)
    base = table.latest_snapshot().id
    table.compact(full=True)  # rewrites partition a's files
    builder = table.new_write_builder(OverwriteSpec(files=tuple(doomed)))
    write = builder.new_write()
    write.write(_rows([9]))
    messages = write.prepare_commit()
    new = [f.file_name for m in messages for f in m.new_files]
    with pytest.raises(CommitConflictError):
        builder.new_commit().with_base_snapshot(base).commit(messages)
    assert _ids(table) == [1, 2, 3, 4, 5]
    assert not any(n in _live(table) for n in new)
    assert all(not table.store.io.exists(p) for p in _paths(table, messages))


def _paths(table, messages) -> list[str]:
    from engine.files.reader import data_file_path

    return [data_file_path(table.store, table.store.partition_dir(("a",)), m.bucket, f)
            for m in messages for f in m.new_files]


def test_one_intent_per_spec():
    with pytest.raises(InvalidArgumentError, match="one intent"):
        OverwriteSpec(dynamic=True, files=("x",))
