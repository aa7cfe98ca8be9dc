"""Tests for engine.io.fileio: one conformance suite run against every backend, plus the
local-disk specifics (cross-process create-if-absent race, link/renameat2 fallbacks, errors).

``FileIOContract`` is the abstract suite (fsspec's abstract-test style): a backend subclasses it
and provides the ``fileio`` and ``root`` fixtures. ``test_fileio_s3.py`` runs it against moto.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import pickle
import threading
import uuid
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError, StorageError
from engine.io import FileIO, FileStatus, join, localfs

# The suite's hypothesis test runs once per backend class (differing executors is expected).
_FIXTURE_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
)


def _names(statuses: list[FileStatus]) -> set[str]:
    return {s.path.rstrip("/").rsplit("/", 1)[-1] for s in statuses}


class FileIOContract:
    """Behaviour every FileIO backend must have. Subclasses provide ``fileio`` and ``root``."""

    has_directories = True  # False for object stores: empty "directories" do not exist

    def test_write_read_roundtrip(self, fileio: FileIO, root: str) -> None:
        path = join(root, "a", "b.bin")
        assert not fileio.exists(path)
        fileio.write_bytes(path, b"\x00\x01payload")
        assert fileio.exists(path)
        assert fileio.read_bytes(path) == b"\x00\x01payload"
        assert fileio.file_size(path) == 9
        fileio.write_text(join(root, "t.json"), '{"id": "é"}')
        assert fileio.read_text(join(root, "t.json")) == '{"id": "é"}'

    def test_missing_file_raises_builtin_file_not_found(self, fileio: FileIO, root: str) -> None:
        path = join(root, "nope")
        for call in (fileio.read_bytes, fileio.read_text, fileio.file_size, fileio.open_input):
            with pytest.raises(FileNotFoundError) as info:
                call(path)
            assert not isinstance(info.value, StorageError)

    def test_write_overwrites_by_default(self, fileio: FileIO, root: str) -> None:
        path = join(root, "LATEST")
        fileio.write_text(path, "1")
        fileio.write_text(path, "22")
        assert fileio.read_text(path) == "22"
        assert _names(fileio.list_dir(root)) == {"LATEST"}  # no temp file left behind

    def test_write_without_overwrite_refuses_existing(self, fileio: FileIO, root: str) -> None:
        path = join(root, "f")
        fileio.write_bytes(path, b"first", overwrite=False)
        with pytest.raises(FileExistsError):
            fileio.write_bytes(path, b"second", overwrite=False)
        assert fileio.read_bytes(path) == b"first"

    def test_try_create_is_create_if_absent(self, fileio: FileIO, root: str) -> None:
        path = join(root, "snapshot", "snapshot-1")
        assert fileio.try_create(path, b"winner") is True
        assert fileio.try_create(path, b"loser") is False
        assert fileio.read_bytes(path) == b"winner"
        assert _names(fileio.list_dir(join(root, "snapshot"))) == {"snapshot-1"}

    def test_try_create_threads_race_one_winner(self, fileio: FileIO, root: str) -> None:
        path = join(root, "race")
        barrier = threading.Barrier(6)
        results: dict[int, bool] = {}

        def attempt(i: int) -> None:
            barrier.wait()
            results[i] = fileio.try_create(path, f"writer-{i}".encode())

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, won in results.items() if won]
        assert len(winners) == 1
        assert fileio.read_bytes(path) == f"writer-{winners[0]}".encode()

    def test_streams_carry_parquet(self, fileio: FileIO, root: str) -> None:
        table = pa.table({"k": pa.array(range(1000), pa.int64()), "v": ["x"] * 1000})
        path = join(root, "bucket-0", "data-0.parquet")
        with fileio.open_output(path) as out:
            pq.write_table(table, out)
        with fileio.open_input(path) as f:
            assert f.seekable()
            assert pq.read_table(f).equals(table)
            f.seek(0)
            assert f.read(4) == b"PAR1"
        assert fileio.file_size(path) == len(fileio.read_bytes(path))

    def test_arrow_fs_reads_and_writes_same_storage(self, fileio: FileIO, root: str) -> None:
        table = pa.table({"a": [1, 2, 3]})
        path = join(root, "arrow.parquet")
        fileio.mkdirs(root)
        pq.write_table(table, fileio.fs_path(path), filesystem=fileio.arrow_fs())
        assert fileio.read_bytes(path)[:4] == b"PAR1"
        assert pq.read_table(fileio.fs_path(path), filesystem=fileio.arrow_fs()).equals(table)

    def test_list_dir_direct_children_in_callers_style(self, fileio: FileIO, root: str) -> None:
        fileio.write_bytes(join(root, "f1"), b"12345")
        fileio.write_bytes(join(root, "sub", "f2"), b"1")
        fileio.write_bytes(join(root, "sub", "deep", "f3"), b"1")
        listed = {s.path: s for s in fileio.list_dir(root)}
        assert set(listed) == {join(root, "f1"), join(root, "sub")}
        f1, sub = listed[join(root, "f1")], listed[join(root, "sub")]
        assert (f1.is_dir, f1.size, sub.is_dir) == (False, 5, True)
        assert f1.modification_time_ms is not None and f1.modification_time_ms > 1_600_000_000_000
        # trailing slash on the directory does not change the answer
        assert {s.path for s in fileio.list_dir(root + "/")} == set(listed)

    def test_list_dir_missing_or_file_is_empty(self, fileio: FileIO, root: str) -> None:
        assert fileio.list_dir(join(root, "missing")) == []
        fileio.write_bytes(join(root, "file"), b"x")
        assert fileio.list_dir(join(root, "file")) == []

    def test_list_files_recursive(self, fileio: FileIO, root: str) -> None:
        expected = {join(root, "a"), join(root, "d1", "b"), join(root, "d1", "d2", "c")}
        for i, p in enumerate(sorted(expected)):
            fileio.write_bytes(p, b"x" * (i + 1))
        found = fileio.list_files_recursive(root)
        assert {s.path for s in found} == expected
        assert all(not s.is_dir and s.size >= 1 and s.modification_time_ms for s in found)
        assert fileio.list_files_recursive(join(root, "missing")) == []

    def test_delete(self, fileio: FileIO, root: str) -> None:
        path = join(root, "gone")
        fileio.write_bytes(path, b"x")
        fileio.delete(path)
        assert not fileio.exists(path)
        fileio.delete(path)  # missing_ok by default
        with pytest.raises(FileNotFoundError):
            fileio.delete(path, missing_ok=False)

    def test_delete_dir(self, fileio: FileIO, root: str) -> None:
        d = join(root, "branch", "branch-b1")
        fileio.write_bytes(join(d, "schema", "schema-0"), b"{}")
        fileio.write_bytes(join(d, "x"), b"{}")
        with pytest.raises(StorageError):
            fileio.delete_dir(d, recursive=False)
        assert fileio.exists(join(d, "x"))
        fileio.delete_dir(d)
        assert not fileio.exists(d)
        assert fileio.list_files_recursive(root) == []
        fileio.delete_dir(d)  # missing is fine

    def test_rename_refuses_existing_target(self, fileio: FileIO, root: str) -> None:
        src, dst = join(root, ".tmp-1"), join(root, "tag", "tag-t1")
        fileio.write_bytes(src, b"content")
        assert fileio.rename(src, dst) is True
        assert not fileio.exists(src) and fileio.read_bytes(dst) == b"content"
        other = join(root, ".tmp-2")
        fileio.write_bytes(other, b"other")
        assert fileio.rename(other, dst) is False
        assert fileio.read_bytes(dst) == b"content" and fileio.read_bytes(other) == b"other"
        with pytest.raises(FileNotFoundError):
            fileio.rename(join(root, "missing"), join(root, "x"))

    def test_link_or_copy_gives_a_file_a_second_name(self, fileio: FileIO, root: str) -> None:
        src, dst = join(root, "bucket-0", "data-a-0.parquet"), join(root, "bucket-0", "data-b-0.parquet")
        fileio.write_bytes(src, b"rows")
        fileio.link_or_copy(src, dst)
        assert fileio.read_bytes(dst) == b"rows" and fileio.read_bytes(src) == b"rows"
        fileio.delete(src)  # the second name lives on its own (what Java's expiration relies on)
        assert fileio.read_bytes(dst) == b"rows"
        with pytest.raises(FileNotFoundError):
            fileio.link_or_copy(src, join(root, "bucket-0", "data-c-0.parquet"))
        other = join(root, "bucket-0", "data-d-0.parquet")
        fileio.write_bytes(other, b"other")
        with pytest.raises(StorageError):
            fileio.link_or_copy(other, dst)  # never replaces an existing file
        assert fileio.read_bytes(dst) == b"rows"

    def test_mkdirs(self, fileio: FileIO, root: str) -> None:
        d = join(root, "x", "y")
        fileio.mkdirs(d)
        fileio.mkdirs(d)  # idempotent
        if self.has_directories:
            assert fileio.exists(d)
            assert [s.is_dir for s in fileio.list_dir(join(root, "x"))] == [True]
        fileio.write_bytes(join(d, "f"), b"1")
        assert fileio.read_bytes(join(d, "f")) == b"1"

    def test_pickles_to_equivalent_fileio(self, fileio: FileIO, root: str) -> None:
        fileio.write_bytes(join(root, "p"), b"shipped")
        clone = pickle.loads(pickle.dumps(fileio))
        assert clone == fileio and clone.protocol == fileio.protocol
        assert clone.read_bytes(join(root, "p")) == b"shipped"

    def test_foreign_protocol_rejected(self, fileio: FileIO, root: str) -> None:
        foreign = "gcs://bucket/x" if fileio.protocol != "gcs" else "memory://x"
        with pytest.raises(InvalidArgumentError):
            fileio.read_bytes(foreign)

    @_FIXTURE_SETTINGS
    @given(data=st.binary(max_size=2048))
    def test_any_bytes_roundtrip_through_try_create(self, fileio: FileIO, root: str, data: bytes) -> None:
        path = join(root, "h", uuid.uuid4().hex)
        assert fileio.try_create(path, data)
        assert fileio.read_bytes(path) == data
        assert fileio.file_size(path) == len(data)


class TestLocalFileIO(FileIOContract):
    @pytest.fixture()
    def root(self, tmp_path: Any) -> str:
        return str(tmp_path / "wh")

    @pytest.fixture()
    def fileio(self, root: str) -> FileIO:
        return FileIO.for_path(root)


class TestFileUrlFileIO(FileIOContract):
    @pytest.fixture()
    def root(self, tmp_path: Any) -> str:
        return "file://" + str(tmp_path / "wh")

    @pytest.fixture()
    def fileio(self, root: str) -> FileIO:
        return FileIO.for_path(root)


class TestMemoryFileIO(FileIOContract):
    @pytest.fixture()
    def root(self) -> str:
        return f"memory://dyntable-tests/{uuid.uuid4().hex}"

    @pytest.fixture()
    def fileio(self, root: str) -> FileIO:
        return FileIO.for_path(root)


# ------------------------------------------------------------------------------- path helpers


def test_join_keeps_schemes_and_roots() -> None:
    assert join("s3://b/wh", "db.db", "t") == "s3://b/wh/db.db/t"
    assert join("s3://b/wh/", "/snapshot/", "snapshot-1") == "s3://b/wh/snapshot/snapshot-1"
    assert join("s3://", "b", "k") == "s3://b/k"
    assert join("file:///", "tmp", "x") == "file:///tmp/x"
    assert join("/", "tmp") == "/tmp"
    assert join("/a", "", "/b") == "/a/b"
    assert join() == ""


@settings(max_examples=100, deadline=None)
@given(
    scheme=st.sampled_from(["", "s3://", "memory://", "file://"]),
    segments=st.lists(st.text("abcXYZ019._-=", min_size=1, max_size=8), min_size=1, max_size=5),
)
def test_join_equals_slash_concatenation(scheme: str, segments: list[str]) -> None:
    root = scheme + "/" + segments[0] if scheme in ("", "file://") else scheme + segments[0]
    assert join(root, *segments[1:]) == "/".join([root, *segments[1:]])
    assert join(root + "/", *(s + "/" for s in segments[1:])) == "/".join([root, *segments[1:]])


def test_for_path_picks_protocol() -> None:
    assert FileIO.for_path("/tmp/x").protocol == "file" and FileIO.for_path("/tmp/x").is_local
    assert FileIO.for_path("file:///tmp/x").is_local
    assert FileIO.for_path("memory://x").protocol == "memory"
    with pytest.raises(InvalidArgumentError):
        FileIO.for_path("nosuchscheme://x/y")
    with pytest.raises(InvalidArgumentError):
        FileIO.for_path("simplecache::s3://b/x")


def test_repr_hides_storage_options() -> None:
    io = FileIO("memory", {"secret": "hunter2"})
    assert "hunter2" not in repr(io) and "hunter2" not in str(io)


def test_fs_and_arrow_fs_types(tmp_path: Any) -> None:
    import pyarrow.fs as pafs

    local = FileIO.for_path(str(tmp_path))
    assert isinstance(local.arrow_fs(), pafs.LocalFileSystem)
    assert isinstance(local.fs, fsspec.AbstractFileSystem)
    assert isinstance(FileIO.for_path("memory://x").arrow_fs(), pafs.PyFileSystem)
    with pytest.raises(InvalidArgumentError):
        FileIO.for_path("memory://x").fs_path("/no/scheme")


class _PlainMemoryFS(MemoryFileSystem):
    """A memory store under another protocol name, standing in for a store with no known CAS."""

    protocol = ("dtplainmem",)


fsspec.register_implementation("dtplainmem", _PlainMemoryFS, clobber=True)


def test_try_create_refused_on_store_without_conditional_put() -> None:
    io = FileIO.for_path("dtplainmem://x")
    with pytest.raises(StorageError, match="conditional_put=True"):
        io.try_create("dtplainmem://x/snapshot-1", b"1")
    assert not io.exists("dtplainmem://x/snapshot-1")
    trusted = FileIO.for_path("dtplainmem://x", conditional_put=True)
    assert trusted.try_create("dtplainmem://x/snapshot-1", b"1") is True
    assert trusted.try_create("dtplainmem://x/snapshot-1", b"2") is False
    assert trusted.read_bytes("dtplainmem://x/snapshot-1") == b"1"


# ------------------------------------------------------------------------- local specifics


def test_io_failures_become_storage_errors_naming_the_path(tmp_path: Any) -> None:
    io = FileIO.for_path(str(tmp_path))
    (tmp_path / "dir").mkdir()
    with pytest.raises(StorageError, match="dir"):
        io.read_bytes(str(tmp_path / "dir"))
    (tmp_path / "plain").write_bytes(b"x")
    under_file = str(tmp_path / "plain" / "child")
    for call in (lambda: io.write_bytes(under_file, b"1"), lambda: io.try_create(under_file, b"1")):
        with pytest.raises(StorageError, match="plain"):
            call()
    with pytest.raises(StorageError):
        io.delete(str(tmp_path / "dir"))
    assert sorted(os.listdir(tmp_path)) == ["dir", "plain"]


def test_local_rename_moves_directories_without_replacing(tmp_path: Any) -> None:
    io = FileIO.for_path(str(tmp_path))
    io.write_bytes(str(tmp_path / "a" / "f"), b"1")
    io.write_bytes(str(tmp_path / "b" / "g"), b"2")
    assert io.rename(str(tmp_path / "a"), str(tmp_path / "b")) is False
    assert io.rename(str(tmp_path / "a"), str(tmp_path / "c")) is True
    assert io.read_bytes(str(tmp_path / "c" / "f")) == b"1" and not io.exists(str(tmp_path / "a"))


def _no_link(src: str, dst: str) -> None:
    raise OSError(errno.EPERM, "hard links not supported here")


def _no_renameat2(src: str, dst: str) -> None:
    raise OSError(errno.ENOSYS, "renameat2 not available")


@pytest.mark.parametrize("fallback", ["renameat2", "exclusive-open"])
def test_try_create_and_rename_without_hard_links(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, fallback: str
) -> None:
    monkeypatch.setattr(localfs.os, "link", _no_link)
    if fallback == "exclusive-open":
        monkeypatch.setattr(localfs, "_rename_noreplace", _no_renameat2)
    io = FileIO.for_path(str(tmp_path))
    target = str(tmp_path / "snapshot-1")
    assert io.try_create(target, b"first") is True
    assert io.try_create(target, b"second") is False
    assert io.read_bytes(target) == b"first"
    io.write_bytes(str(tmp_path / "src"), b"s")
    assert io.rename(str(tmp_path / "src"), target) is False
    assert io.rename(str(tmp_path / "src"), str(tmp_path / "dst")) is True
    assert sorted(os.listdir(tmp_path)) == ["dst", "snapshot-1"]  # no temp files


def test_rename_noreplace_primitive(tmp_path: Any) -> None:
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    try:
        localfs._rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    except FileExistsError:
        pass
    except OSError as e:  # a platform without renameat2: must say "unsupported", not corrupt
        assert e.errno in localfs.UNSUPPORTED_ERRNOS
    assert (tmp_path / "b").read_bytes() == b"b"


# ---------------------------------------------------------------- cross-process create race

_RACE_PROCESSES = 8
_RACE_PATHS = 50
_PAYLOAD_SIZE = 64 * 1024  # large enough that a non-atomic create would be caught half-written


def _payload(worker: int, index: int) -> bytes:
    head = f"worker={worker};path={index};".encode()
    return head + bytes([65 + worker]) * (_PAYLOAD_SIZE - len(head))


def _race_worker(root: str, worker: int, barrier: Any, results: Any) -> None:
    io = FileIO.for_path(root)
    barrier.wait()
    outcome = []
    for i in range(_RACE_PATHS):
        path = join(root, f"snapshot-{i}")
        won = io.try_create(path, _payload(worker, i))
        seen = io.read_bytes(path)  # a loser must see a complete file, never a partial one
        complete = any(seen == _payload(w, i) for w in range(_RACE_PROCESSES))
        outcome.append((i, won, complete))
    results.put((worker, outcome))


def test_try_create_cross_process_race(tmp_path: Any) -> None:
    ctx = multiprocessing.get_context("spawn")
    root = str(tmp_path / "snapshot")
    barrier, results = ctx.Barrier(_RACE_PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(root, w, barrier, results)) for w in range(_RACE_PROCESSES)
    ]
    for p in procs:
        p.start()
    collected = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    io = FileIO.for_path(root)
    for i in range(_RACE_PATHS):
        winners = [w for w, outcome in collected.items() if outcome[i][1]]
        assert len(winners) == 1, f"path {i} created by {winners}"
        assert io.read_bytes(join(root, f"snapshot-{i}")) == _payload(winners[0], i)
        assert all(outcome[i][2] for outcome in collected.values())
    assert sorted(os.listdir(root)) == sorted(f"snapshot-{i}" for i in range(_RACE_PATHS))


# ------------------------------------------------------------------------ fault injection


def test_failing_fileio_fails_nth_call_before_acting(tmp_path: Any) -> None:
    from engine.io.faults import FailingFileIO

    io = FailingFileIO(FileIO.for_path(str(tmp_path)), "try_create", fail_on_call=2)
    assert io.try_create(str(tmp_path / "s1"), b"1") is True
    with pytest.raises(StorageError, match="injected fault before"):
        io.try_create(str(tmp_path / "s2"), b"2")
    assert not io.exists(str(tmp_path / "s2"))  # nothing happened
    assert io.try_create(str(tmp_path / "s2"), b"2") is True  # only one failure by default
    io.write_bytes(str(tmp_path / "w"), b"other operations pass through")
    assert (io.calls, io.failures) == (3, 1)


def test_failing_fileio_after_mode_leaves_the_effect(tmp_path: Any) -> None:
    from engine.io.faults import FailingFileIO

    io = FailingFileIO(FileIO.for_path(str(tmp_path)), "write", after=True, path_contains="snapshot-")
    io.write_text(str(tmp_path / "LATEST"), "1")  # not counted: path does not match
    with pytest.raises(StorageError, match="injected fault after"):
        io.write_text(str(tmp_path / "snapshot-1"), "{}")
    assert io.read_text(str(tmp_path / "snapshot-1")) == "{}"  # written, but the caller saw an error


@pytest.mark.parametrize("operation", ["write", "rename", "delete", "try_create"])
def test_failing_fileio_every_call_and_pickling(tmp_path: Any, operation: str) -> None:
    from engine.io.faults import FailingFileIO

    inner = FileIO.for_path(str(tmp_path))
    inner.write_bytes(str(tmp_path / "f"), b"x")
    io = pickle.loads(pickle.dumps(FailingFileIO(inner, operation, times=-1)))
    act = {
        "write": lambda: io.write_bytes(str(tmp_path / "g"), b"y"),
        "rename": lambda: io.rename(str(tmp_path / "f"), str(tmp_path / "h")),
        "delete": lambda: io.delete(str(tmp_path / "f")),
        "try_create": lambda: io.try_create(str(tmp_path / "g"), b"y"),
    }[operation]
    for _ in range(3):
        with pytest.raises(StorageError):
            act()
    assert sorted(os.listdir(tmp_path)) == ["f"] and io.failures == 3
    assert io.read_bytes(str(tmp_path / "f")) == b"x"


def test_failing_fileio_rejects_bad_arguments(tmp_path: Any) -> None:
    from engine.io.faults import FailingFileIO

    inner = FileIO.for_path(str(tmp_path))
    with pytest.raises(InvalidArgumentError):
        FailingFileIO(inner, "explode")
    with pytest.raises(InvalidArgumentError):
        FailingFileIO(inner, "write", fail_on_call=0)
