"""FileIO against a real S3 API (moto's server on loopback): the shared conformance suite plus
the conditional-PUT create-if-absent and the absence of stale listing caches.

Skips cleanly when moto or s3fs is not installed (see conftest.py).
"""

from __future__ import annotations

import pickle
import socket
import threading
from collections import Counter
from typing import Any

import pytest

from engine.errors import StorageError
from engine.io import FileIO, join
from tests.engine.io.test_fileio import FileIOContract

pytestmark = pytest.mark.s3


class TestS3FileIO(FileIOContract):
    has_directories = False

    @pytest.fixture()
    def root(self, s3_root: str) -> str:
        return s3_root

    @pytest.fixture()
    def fileio(self, root: str, s3_endpoint: dict[str, Any]) -> FileIO:
        return FileIO.for_path(root, **s3_endpoint)


def _independent(root: str, options: dict[str, Any]) -> FileIO:
    """A FileIO with its own S3 client, like another process or host would have."""
    return FileIO.for_path(root, skip_instance_cache=True, **options)


def test_try_create_on_existing_key_is_refused_by_conditional_put(
    s3_root: str, s3_endpoint: dict[str, Any]
) -> None:
    path = join(s3_root, "snapshot", "snapshot-7")
    writer_a, writer_b = _independent(s3_root, s3_endpoint), _independent(s3_root, s3_endpoint)
    assert writer_a.try_create(path, b'{"id": 7, "commitUser": "a"}') is True
    # B has never looked at the key; only the server-side If-None-Match can stop it.
    assert writer_b.try_create(path, b'{"id": 7, "commitUser": "b"}') is False
    assert writer_b.read_bytes(path) == b'{"id": 7, "commitUser": "a"}'


def test_concurrent_conditional_puts_of_one_key_have_exactly_one_winner(
    s3_root: str, s3_endpoint: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit protocol's only atomic step, hammered: writers race for each key at once.

    Real S3 decides ``If-None-Match: *`` atomically; a server that checks and then stores in two
    steps lets a second writer in between, and both get 200 (a "committed" snapshot overwritten).
    """
    # moto keeps an object above this size in a temporary file: the file write releases the GIL in
    # the middle of the PUT, which is where a check-then-write server lets a racing PUT through.
    # (Without it the window is microseconds wide and only heavy machine load hits it.)
    monkeypatch.setenv("MOTO_S3_DEFAULT_KEY_BUFFER_SIZE", "1")
    writers = [_independent(s3_root, s3_endpoint) for _ in range(4)]
    keys = 40
    start = threading.Barrier(len(writers))
    won: list[list[int]] = [[] for _ in writers]
    errors: list[BaseException] = []

    def race(w: int) -> None:
        try:
            for k in range(keys):
                start.wait(timeout=60)
                if writers[w].try_create(join(s3_root, "race", f"snapshot-{k}"), f"writer {w}".encode()):
                    won[w].append(k)
        except BaseException as e:  # reported below; a dead thread would only break the barrier
            errors.append(e)
            start.abort()

    threads = [threading.Thread(target=race, args=(w,)) for w in range(len(writers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    wins = Counter(k for keys_won in won for k in keys_won)
    assert {k: n for k, n in wins.items() if n != 1} == {}
    assert sorted(wins) == list(range(keys))
    for w, keys_won in enumerate(won):
        for k in keys_won:  # the stored object is the winner's, untouched by the losers
            assert writers[0].read_bytes(join(s3_root, "race", f"snapshot-{k}")) == f"writer {w}".encode()


def test_a_create_whose_answer_is_lost_is_never_reported_as_lost_to_another_writer(
    s3_root: str, s3_endpoint: dict[str, Any], s3_server: Any
) -> None:
    """The PUT succeeds but its answer does not arrive in time: S3 clients resend such a request,
    and the resent conditional PUT meets the object the first one made (412). Reporting that as
    "another writer won" would make a commit delete the metadata of the snapshot it published.

    The server answers only once the client has hung up on the request (its read timeout), so the
    client's view is fixed: no answer, ever. It must send the PUT once and report "unknown"."""
    path = join(s3_root, "snapshot", "snapshot-3")
    options = {**s3_endpoint, "config_kwargs": {"read_timeout": 1}}
    held = s3_server.hold_answer(path, limit=30)  # a client that never gives up fails the test
    with pytest.raises(StorageError, match="Could not create"):  # outcome unknown, not False
        _independent(s3_root, options).try_create(path, b"mine")
    assert held.answered.wait(10)
    assert held.client_gave_up.is_set() and not held.expired.is_set()
    assert _independent(s3_root, s3_endpoint).read_bytes(path) == b"mine"
    assert held.puts == 1  # sent once: neither botocore nor s3fs resent it


def test_the_test_server_answers_expect_continue_once(s3_root: str, s3_server: Any) -> None:
    """One "100 Continue" per request, as S3 sends: a second one, arriving after the body, stops
    aiohttp's read timeout, and the lost-answer test above then waits on a client that never gives
    up (it failed that way about one run in three)."""
    host, port = s3_server.endpoint.removeprefix("http://").split(":")
    key = s3_root.removeprefix("s3://") + "/continue"
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        head = f"PUT /{key} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 1\r\n"
        conn.sendall((head + "Expect: 100-continue\r\nConnection: close\r\n\r\n").encode())
        received = b""
        while b"100 Continue\r\n\r\n" not in received:  # the body goes only after the go-ahead
            chunk = conn.recv(4096)
            assert chunk, received
            received += chunk
        conn.sendall(b"x")
        while chunk := conn.recv(4096):  # the final answer, then the server closes
            received += chunk
    assert received.count(b" 100 Continue") == 1, received
    assert b"HTTP/1.1 200" in received, received


def test_listing_and_exists_see_other_writers_immediately(s3_root: str, s3_endpoint: dict[str, Any]) -> None:
    reader, writer = _independent(s3_root, s3_endpoint), _independent(s3_root, s3_endpoint)
    snapshot_dir = join(s3_root, "snapshot")
    writer.write_text(join(snapshot_dir, "snapshot-1"), "{}")
    assert [s.path for s in reader.list_dir(snapshot_dir)] == [join(snapshot_dir, "snapshot-1")]
    assert not reader.exists(join(snapshot_dir, "snapshot-2"))
    writer.write_text(join(snapshot_dir, "snapshot-2"), "{}")
    # a cached listing would hide snapshot-2 here and make a hint reader trust a stale LATEST
    assert reader.exists(join(snapshot_dir, "snapshot-2"))
    assert len(reader.list_dir(snapshot_dir)) == 2


def test_listing_paths_keep_the_s3_scheme(s3_root: str, s3_endpoint: dict[str, Any]) -> None:
    io = FileIO.for_path(s3_root, **s3_endpoint)
    io.write_bytes(join(s3_root, "bucket-0", "data-1.parquet"), b"x")
    assert [s.path for s in io.list_files_recursive(s3_root)] == [f"{s3_root}/bucket-0/data-1.parquet"]
    assert io.fs_path(s3_root) == s3_root.removeprefix("s3://")


def test_pickled_fileio_rebuilds_its_client(s3_root: str, s3_endpoint: dict[str, Any]) -> None:
    io = FileIO.for_path(s3_root, **s3_endpoint)
    io.write_bytes(join(s3_root, "f"), b"v")
    clone = pickle.loads(pickle.dumps(io))
    assert clone._fs is None  # nothing but protocol + options travelled
    assert clone.read_bytes(join(s3_root, "f")) == b"v"
