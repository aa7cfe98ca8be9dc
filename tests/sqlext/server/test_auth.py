"""Users file, password hashes and the server side of the SASL PLAIN exchange (no Spark, no network)."""

from __future__ import annotations

import struct

import pytest
from thrift.transport.TTransport import TMemoryBuffer

from sqlext.server.auth import (
    BAD,
    COMPLETE,
    OK,
    START,
    AuthenticationError,
    Authenticator,
    SaslServerTransport,
    UsersFile,
    hash_password,
    verify_password,
)


def test_hash_is_salted_and_verifies():
    a, b = hash_password("pw"), hash_password("pw")
    assert a != b and a.startswith("scrypt$")
    assert verify_password("pw", a) and verify_password("pw", b)
    assert not verify_password("pW", a) and not verify_password("", a)
    assert not verify_password("pw", "plain-text") and not verify_password("pw", "scrypt$1$2$3$!!$!!")


def test_users_file(tmp_path):
    path = tmp_path / "users"
    path.write_text(f"# comment\n\nalice:{hash_password('a1')}\nbob:{hash_password('b2')}\n")
    users = UsersFile.load(str(path))
    assert users.check("alice", "a1") and users.check("bob", "b2")
    assert not users.check("alice", "b2") and not users.check("carol", "a1")
    path.write_text("alice:plaintext\n")
    with pytest.raises(ValueError, match="--hash-password"):
        UsersFile.load(str(path))


class _Pipe(TMemoryBuffer):
    """Reads the client's bytes; collects what the server writes."""

    def __init__(self, incoming: bytes) -> None:
        super().__init__(incoming)
        self.written = b""

    def write(self, buf: bytes) -> None:
        self.written += buf

    def flush(self) -> None:
        pass


def _message(status: int, payload: bytes) -> bytes:
    return struct.pack(">BI", status, len(payload)) + payload


def _negotiate(users: UsersFile | None, mechanism: bytes, response: bytes, status: int = COMPLETE):
    pipe = _Pipe(_message(START, mechanism) + _message(status, response) + struct.pack(">I", 3) + b"abc")
    transport = SaslServerTransport(pipe, Authenticator(users))
    return transport, pipe


def test_plain_exchange_then_frames(tmp_path):
    users = UsersFile({"alice": hash_password("pw")})
    transport, pipe = _negotiate(users, b"PLAIN", b"\0alice\0pw", status=OK)
    assert transport.negotiate() == "alice"
    assert pipe.written == _message(COMPLETE, b"")
    assert transport.read(3) == b"abc"  # then length-prefixed frames both ways
    pipe.written = b""
    transport.write(b"xy")
    transport.flush()
    assert pipe.written == struct.pack(">I", 2) + b"xy"


def test_wrong_password_is_refused_with_bad():
    transport, pipe = _negotiate(UsersFile({"alice": hash_password("pw")}), b"PLAIN", b"\0alice\0nope")
    with pytest.raises(AuthenticationError, match="authentication failed"):
        transport.negotiate()
    assert pipe.written.startswith(bytes([BAD]))


def test_none_mode_accepts_any_password_but_needs_a_user():
    transport, _ = _negotiate(None, b"PLAIN", b"\0anyone\0whatever")
    assert transport.negotiate() == "anyone"
    transport, _ = _negotiate(None, b"PLAIN", b"\0\0")
    with pytest.raises(AuthenticationError):
        transport.negotiate()


def test_other_mechanisms_are_refused():
    from thrift.transport.TTransport import TTransportException

    transport, pipe = _negotiate(None, b"GSSAPI", b"")
    with pytest.raises(TTransportException):
        transport.negotiate()
    assert pipe.written.startswith(bytes([BAD]))
