"""The maintenance log stores one record per run, bounded, and never fails the run."""

import pytest

from engine.io import FileIO
from engine.ops.maintenance_log import MaintenanceRecord, read_records, recorded_run, write_record


def test_records_round_trip_oldest_first_and_are_bounded(tmp_path):
    io = FileIO.for_path(str(tmp_path))
    root = str(tmp_path / "t")
    for i in range(5):
        write_record(
            io,
            root,
            MaintenanceRecord("expire_snapshots", "called", started_at_ms=1000 + i, deleted_files=i),
            num_retained=3,
        )
    records = read_records(io, root)
    assert [r.deleted_files for r in records] == [2, 3, 4]
    assert all(r.run_id for r in records)


def test_a_failing_run_is_recorded_with_its_error_and_reraised(tmp_path):
    io = FileIO.for_path(str(tmp_path))
    root = str(tmp_path / "t")
    with pytest.raises(ValueError, match="boom"):
        with recorded_run(io, root, "remove_orphan_files", dry_run=True) as record:
            record.deleted_files = 7
            raise ValueError("boom")
    (record,) = read_records(io, root)
    assert (record.procedure, record.dry_run, record.deleted_files, record.error) == (
        "remove_orphan_files",
        True,
        7,
        "ValueError: boom",
    )


def test_an_unwritable_log_does_not_fail_the_run(tmp_path):
    io = FileIO.for_path(str(tmp_path))
    blocker = tmp_path / "t"
    blocker.write_text("a file where the table directory should be")
    with recorded_run(io, str(blocker), "expire_snapshots") as record:
        record.deleted_files = 1
    assert read_records(io, str(blocker)) == []
