"""Who may open a session on ``dyntable-server``: the users file, and the server side of SASL PLAIN.

* The users file holds one ``user:scrypt$N$r$p$<salt>$<hash>`` line per user (salt and hash in
  base64); ``dyntable-server --hash-password`` prints such a line. Passwords are never stored,
  and a check compares derived keys with :func:`hmac.compare_digest` (constant time).
* :class:`SaslServerTransport` is the server half of the SASL framing HiveServer2 clients speak
  (beeline/Hive JDBC, PyHive and impyla through ``thrift_sasl``): messages of one status byte
  (START 1, OK 2, BAD 3, ERROR 4, COMPLETE 5), a 4-byte big-endian length and a payload, and once
  the exchange is COMPLETE, frames of a 4-byte length and the Thrift bytes. Only the PLAIN
  mechanism is offered (no integrity/confidentiality layer, so frames are not wrapped).
* ``--auth NONE`` is PLAIN without checking the password (any user name, as HiveServer2 does);
  ``--auth NOSASL`` skips SASL (plain Thrift on the socket); ``--auth PLAIN`` checks the users file.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import struct
from dataclasses import dataclass
from io import BytesIO

from thrift.transport.TTransport import CReadableTransport, TTransportBase, TTransportException

from sqlext.errors import SqlError

AUTH_MODES = ("NONE", "NOSASL", "PLAIN")
_SCRYPT = "scrypt"
_N, _R, _P = 2**14, 8, 1  # scrypt cost (16 MiB, ~50 ms): OWASP's minimum for interactive logins
_MAX_SASL_MESSAGE = 64 * 1024  # a PLAIN response is a few hundred bytes; refuse anything huge
MAX_FRAME = 256 * 1024 * 1024  # one Thrift request frame (a statement is far smaller)

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5


class AuthenticationError(SqlError):
    """A client's credentials were refused: check the user name and password."""

    default_sqlstate = "28000"  # invalid authorization specification


# --------------------------------------------------------------------------- password hashes


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """The users-file form of ``password``: ``scrypt$N$r$p$<salt b64>$<key b64>`` with a fresh salt."""
    salt = salt if salt is not None else os.urandom(16)
    key = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    return "$".join([_SCRYPT, str(_N), str(_R), str(_P), _b64(salt), _b64(key)])


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` derives the key stored in ``stored`` (constant-time comparison)."""
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != _SCRYPT:
        return False
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, key = base64.b64decode(parts[4]), base64.b64decode(parts[5])
        derived = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=len(key),
                                 maxmem=256 * 1024 * 1024)
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(derived, key)


@functools.cache
def _dummy_hash() -> str:
    return hash_password("", salt=b"\0" * 16)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class UsersFile:
    """The users a ``PLAIN`` server accepts: user name → stored hash."""

    users: dict[str, str]

    @classmethod
    def load(cls, path: str) -> UsersFile:
        """Read ``user:hash`` lines (blank lines and ``#`` comments skipped).

        Raises:
            ValueError: a line without ``:``, an empty user, or a hash not made by :func:`hash_password`.
        """
        users: dict[str, str] = {}
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                user, sep, stored = line.partition(":")
                if not sep or not user or not stored.startswith(_SCRYPT + "$") or stored.count("$") != 5:
                    raise ValueError(f"{path}:{number}: expected user:scrypt$N$r$p$salt$hash "
                                     "(make one with dyntable-server --hash-password)")
                users[user] = stored
        return cls(users)

    def check(self, user: str, password: str) -> bool:
        stored = self.users.get(user)
        if stored is None:
            # Spend the same work on unknown users, so timing does not tell which names exist.
            verify_password(password, _dummy_hash())
            return False
        return verify_password(password, stored)


class Authenticator:
    """Decides a PLAIN exchange: ``users`` None accepts any password (``--auth NONE``)."""

    def __init__(self, users: UsersFile | None) -> None:
        self.users = users

    def authenticate(self, user: str, password: str) -> None:
        if not user:
            raise AuthenticationError("a user name is required")
        if self.users is not None and not self.users.check(user, password):
            raise AuthenticationError(f"authentication failed for user '{user}'")


# --------------------------------------------------------------------------- SASL server framing


class SaslServerTransport(TTransportBase, CReadableTransport):
    """The server side of Thrift's SASL transport, for the PLAIN mechanism only."""

    def __init__(self, transport: TTransportBase, authenticator: Authenticator) -> None:
        self._trans = transport
        self._auth = authenticator
        self._rbuf = BytesIO(b"")
        self._wbuf = BytesIO()
        self.user: str | None = None

    # The exchange: START(mechanism) [+ the initial response], then COMPLETE from the server.
    def negotiate(self) -> str:
        """Run the SASL exchange; returns the authenticated user.

        Raises:
            AuthenticationError: refused credentials (the client was told, with BAD).
            TTransportException: the client spoke something else, or went away.
        """
        status, mechanism = self._receive()
        if status != START:
            self._send(ERROR, b"expected a SASL START message")
            raise TTransportException(TTransportException.NOT_OPEN, "client did not start SASL")
        if mechanism.decode("ascii", "replace").upper() != "PLAIN":
            self._send(BAD, b"only the PLAIN mechanism is supported")
            raise TTransportException(
                TTransportException.NOT_OPEN, f"unsupported SASL mechanism {mechanism!r}"
            )
        status, response = self._receive()
        if status not in (OK, COMPLETE):
            self._send(ERROR, b"expected the PLAIN response")
            raise TTransportException(TTransportException.NOT_OPEN, "bad SASL status")
        parts = response.split(b"\0")
        if len(parts) != 3:
            self._send(BAD, b"malformed PLAIN response")
            raise AuthenticationError("malformed PLAIN response")
        user, password = parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")
        try:
            self._auth.authenticate(user, password)
        except AuthenticationError as e:
            self._send(BAD, e.message.encode())
            raise
        self._send(COMPLETE, b"")
        self.user = user
        return user

    def refuse(self, message: str) -> None:
        """Answer a SASL START with BAD and ``message`` (the client shows it in its error)."""
        self._send(BAD, message.encode())

    def _receive(self) -> tuple[int, bytes]:
        header = self._trans.readAll(5)
        status, length = struct.unpack(">BI", header)
        if length > _MAX_SASL_MESSAGE:
            raise TTransportException(TTransportException.SIZE_LIMIT, "SASL message too large")
        return status, self._trans.readAll(length) if length else b""

    def _send(self, status: int, payload: bytes) -> None:
        try:
            self._trans.write(struct.pack(">BI", status, len(payload)) + payload)
            self._trans.flush()
        except (TTransportException, OSError):
            pass  # the client is gone; the caller closes the connection anyway

    # Thrift transport interface once negotiated: length-prefixed frames.
    def isOpen(self) -> bool:
        return self._trans.isOpen()

    def open(self) -> None:
        self._trans.open()

    def close(self) -> None:
        self._trans.close()

    def read(self, sz: int) -> bytes:
        data = self._rbuf.read(sz)
        if data:
            return data
        self._read_frame()
        return self._rbuf.read(sz)

    def _read_frame(self) -> None:
        (length,) = struct.unpack(">I", self._trans.readAll(4))
        if length > MAX_FRAME:
            raise TTransportException(TTransportException.SIZE_LIMIT, f"frame of {length} bytes is too large")
        self._rbuf = BytesIO(self._trans.readAll(length))

    def write(self, buf: bytes) -> None:
        self._wbuf.write(buf)

    def flush(self) -> None:
        data = self._wbuf.getvalue()
        self._wbuf = BytesIO()
        self._trans.write(struct.pack(">I", len(data)) + data)
        self._trans.flush()

    # CReadableTransport: lets the accelerated (C) protocol decode straight from the frame buffer.
    @property
    def cstringio_buf(self) -> BytesIO:
        return self._rbuf

    def cstringio_refill(self, partialread: bytes, reqlen: int) -> BytesIO:
        prefix = partialread
        while len(prefix) < reqlen:
            self._read_frame()
            prefix += self._rbuf.getvalue()
        self._rbuf = BytesIO(prefix)
        return self._rbuf
