"""The fault-injecting FileIO sees every byte a table moves (issue 8, defect 9)."""

from __future__ import annotations

import inspect
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.errors import DyntableError, InvalidArgumentError, StorageError
from engine.io import FileIO
from engine.io.faults import FAULT_ENV, FAULT_OPERATIONS, FailingFileIO, fault_from_env
from engine.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ROOT = Path(__file__).resolve().parents[3]  # the repository: children import engine from it


def _wrap(t: Table, io: FileIO) -> Table:
    return Table(None, t.identifier, io, t.store.paths, t.store.schema)


def _rows(t: Table) -> list[int]:
    return sorted(t.refresh().to_arrow().column("id").to_pylist())


def test_every_public_fileio_method_is_intercepted() -> None:
    # A method inherited from FileIO would reach storage through the base implementation and
    # never be counted: that is how manifests (write_new) escaped the old wrapper.
    public = {
        name for name, member in inspect.getmembers(FileIO)
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }
    state = {"protocol", "storage_options"}  # plain attributes: no storage access
    not_overridden = sorted(n for n in public - state if n not in vars(FailingFileIO))
    assert not_overridden == []
    counted = set().union(*(FAULT_OPERATIONS[op] for op in FAULT_OPERATIONS if op != "any"))
    passive = state | {"fs", "fs_path", "is_local", "arrow_fs", "for_path"}
    assert public - passive <= counted, sorted(public - passive - counted)


@pytest.mark.parametrize("pk", [(), ("id",)], ids=["append", "pk"])
def test_manifest_and_manifest_list_writes_can_fail(catalog: Any, pk: tuple[str, ...]) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=pk)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    for target in ("manifest-list-", "/manifest-"):
        io = FailingFileIO(t.store.io, "write", path_contains=target)
        with pytest.raises(StorageError, match="injected fault before write_new"):
            _wrap(t, io).write_arrow(pa.table({"id": [2], "v": ["b"]}))
        assert io.failures == 1
        assert _rows(t) == [1]


def test_a_parquet_data_file_can_fail_mid_stream(catalog: Any) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    seen: list[str] = []
    probe = FailingFileIO(t.store.io, "write", fail_on_call=10**9, path_contains=".parquet")
    original = probe.open_output

    def spy(path: str) -> Any:
        seen.append(path)
        return original(path)

    probe.open_output = spy  # type: ignore[method-assign]
    _wrap(t, probe).write_arrow(pa.table({"id": [2], "v": ["b"]}))
    chunks = probe.calls - 1  # every call after the open is one chunk of the Parquet stream
    assert len(seen) == 1 and chunks >= 3

    io = FailingFileIO(t.store.io, "write", fail_on_call=3, path_contains=".parquet")
    with pytest.raises(StorageError, match="injected fault before stream_write"):
        _wrap(t, io).write_arrow(pa.table({"id": [3], "v": ["c"]}))
    assert _rows(t) == [1, 2]


def test_torn_stream_and_manifest_writes_leave_partial_bytes(tmp_path: Any) -> None:
    inner = FileIO.for_path(str(tmp_path))
    io = FailingFileIO(inner, "write", fail_on_call=3, torn=True)
    out = io.open_output(str(tmp_path / "data.parquet"))  # call 1
    out.write(b"PAR1")  # call 2
    with pytest.raises(StorageError, match="before stream_write"):
        out.write(b"abcdefgh")  # call 3: half of it reaches the file
    out.close()
    assert inner.read_bytes(str(tmp_path / "data.parquet")) == b"PAR1abcd"

    io = FailingFileIO(inner, "write", torn=True)
    with pytest.raises(StorageError, match="before write_new"):
        io.write_new(str(tmp_path / "manifest-1"), b"0123456789")
    assert inner.read_bytes(str(tmp_path / "manifest-1")) == b"01234"


def test_after_mode_stream_write_lands_then_fails(tmp_path: Any) -> None:
    inner = FileIO.for_path(str(tmp_path))
    io = FailingFileIO(inner, "write", fail_on_call=2, after=True)
    with io.open_output(str(tmp_path / "f")) as out:
        with pytest.raises(StorageError, match="after stream_write"):
            out.write(b"xyz")
    assert inner.read_bytes(str(tmp_path / "f")) == b"xyz"


def test_arrow_fs_routes_parquet_reads_and_writes_through_the_counter(tmp_path: Any) -> None:
    inner = FileIO.for_path(str(tmp_path))
    table = pa.table({"a": list(range(50))})
    path = str(tmp_path / "x.parquet")
    io = FailingFileIO(inner, "any", fail_on_call=10**9)
    pq.write_table(table, path, filesystem=io.arrow_fs())
    written = io.calls
    assert written >= 3
    assert pq.read_table(path, filesystem=io.arrow_fs()).equals(table)
    assert io.calls > written
    failing = FailingFileIO(inner, "read", fail_on_call=2)  # the open succeeds, a chunk read fails
    with pytest.raises(StorageError, match="injected fault before stream_read"):
        pq.read_table(path, filesystem=failing.arrow_fs())


def test_reading_a_table_can_fail_on_its_data_file(catalog: Any) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    io = FailingFileIO(t.store.io, "read", path_contains=".parquet")
    # The data-file reader currently wraps every OSError (a transient StorageError too) in
    # CorruptMetadataError; either way the injected fault must be what surfaces.
    with pytest.raises(DyntableError, match="injected fault"):
        _wrap(t, io).to_arrow()
    assert io.failures == 1


def test_raw_fsspec_access_is_refused(tmp_path: Any) -> None:
    io = FailingFileIO(FileIO.for_path(str(tmp_path)), "write")
    with pytest.raises(InvalidArgumentError, match="bypass"):
        io.fs  # noqa: B018
    with pytest.raises(InvalidArgumentError):
        FailingFileIO(FileIO.for_path(str(tmp_path)), "write", action="explode")


def test_stat_list_mkdirs_and_mark_directory_are_counted(tmp_path: Any) -> None:
    inner = FileIO.for_path(str(tmp_path))
    cases = {
        "stat": lambda io: io.exists(str(tmp_path)),
        "list": lambda io: io.list_dir(str(tmp_path)),
        "mkdirs": lambda io: io.mark_directory(str(tmp_path / "d")),
        "delete": lambda io: io.delete_dir(str(tmp_path / "nothing")),
    }
    for op, act in cases.items():
        io = FailingFileIO(inner, op)
        with pytest.raises(StorageError, match="injected fault"):
            act(io)


def test_pickled_wrapper_continues_the_count(tmp_path: Any) -> None:
    io = FailingFileIO(FileIO.for_path(str(tmp_path)), "write", fail_on_call=2)
    io.write_bytes(str(tmp_path / "a"), b"1")
    copy = pickle.loads(pickle.dumps(io))
    with pytest.raises(StorageError):
        copy.write_new(str(tmp_path / "b"), b"2")


def test_fault_from_env(tmp_path: Any) -> None:
    inner = FileIO.for_path(str(tmp_path))
    assert fault_from_env(inner, {}) is inner
    io = fault_from_env(inner, {FAULT_ENV: "operation=write,call=3,action=raise,after=1,path=snap,torn=1"})
    assert isinstance(io, FailingFileIO)
    assert (io.operation, io.fail_on_call, io.action, io.after, io.path_contains, io.torn) == (
        "write", 3, "raise", True, "snap", True
    )
    for bad in ("call=x", "operation=any", "call=1,colour=red"):
        with pytest.raises(InvalidArgumentError):
            fault_from_env(inner, {FAULT_ENV: bad})


def test_kill_action_is_a_real_sigkill(tmp_path: Any) -> None:
    script = (
        "import sys\n"
        "from engine.io import FileIO\n"
        "from engine.io.faults import fault_from_env\n"
        "io = fault_from_env(FileIO.for_path(sys.argv[1]))\n"
        "try:\n"
        "    for i in range(5):\n"
        "        io.write_bytes(sys.argv[1] + f'/f{i}', b'x')\n"
        "finally:\n"
        "    print('finally ran', flush=True)\n"
    )
    env = {**os.environ, FAULT_ENV: "operation=write,call=3,after=1"}
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout == ""  # no cleanup code ran
    assert sorted(os.listdir(tmp_path)) == ["f0", "f1", "f2"]  # after=1: the third write landed


def test_an_after_mode_kill_fires_even_when_the_call_itself_fails(tmp_path: Any) -> None:
    # Reading a missing file raises FileNotFoundError on its own; a crash chosen for that call
    # must still happen, or a kill trial silently runs to completion.
    script = (
        "import sys\n"
        "from engine.io import FileIO\n"
        "from engine.io.faults import fault_from_env\n"
        "io = fault_from_env(FileIO.for_path(sys.argv[1]))\n"
        "try:\n"
        "    io.read_bytes(sys.argv[1] + '/missing')\n"
        "except FileNotFoundError:\n"
        "    print('survived', flush=True)\n"
    )
    env = {**os.environ, FAULT_ENV: "operation=read,call=1,after=1"}
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL and proc.stdout == ""


def test_object_store_paths_route_through_the_counter_too() -> None:
    # pyarrow hands the wrapper scheme-less paths; they must map back to the table's URLs.
    import uuid

    from engine import open_catalog

    cat = open_catalog(f"memory://faults-{uuid.uuid4().hex}")
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    io = FailingFileIO(t.store.io, "write", fail_on_call=10**9, path_contains=".parquet")
    _wrap(t, io).write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert io.calls >= 3 and _rows(t) == [1, 2]
    assert sorted(_wrap(t, io).to_arrow().column("id").to_pylist()) == [1, 2]
    failing = FailingFileIO(t.store.io, "write", fail_on_call=2, path_contains=".parquet")
    with pytest.raises(StorageError, match="before stream_write"):
        _wrap(t, failing).write_arrow(pa.table({"id": [3], "v": ["c"]}))
    assert _rows(t) == [1, 2]
