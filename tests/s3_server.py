"""An S3 API on loopback for the tests: moto's S3 server, with its writes made atomic.

dyntable's commit on object storage rests on one primitive: a conditional PUT
(``If-None-Match: *``) that exactly one writer per key wins (``engine.io.fileio``). Real S3 decides
it atomically. moto checks the condition and then stores the object in two steps, and its
threaded server runs requests in parallel, so two concurrent conditional PUTs of one key can both
be answered 200: each of two writers then "publishes" the same snapshot id and the later body
silently replaces the earlier one (a commit that returned normally and is not in the history).

Here one lock is held while moto handles any request that changes objects (every method but
GET, HEAD and OPTIONS), so a conditional write's check and store are one step against every
other write, as on S3; reads stay concurrent. The server binds port 0 (the kernel picks a free
one) on 127.0.0.1 only.

:meth:`S3Server.hold_answer` makes one write take effect but keeps its answer back until the client
has given up on it (closed its connection, as a client does on a read timeout): what a client
sees when the answer to a PUT that succeeded is lost. The answer waits for that event, not for a
wall-clock delay, so the outcome does not depend on how fast the machine is.

The request handler sends exactly one "100 Continue" (as S3 does). werkzeug's handler sends one
itself and Python's ``http.server`` base class another; aiohttp (under s3fs) stops a request's
read timeout on every interim 1xx answer, so when the second one arrived after the body had gone
out, the client waited for the held answer without any timeout.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

_READS = frozenset({"GET", "HEAD", "OPTIONS"})


class SerialWrites:
    """WSGI middleware: requests that may change state run one at a time; reads run freely."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD", "GET") in _READS:
            return self.app(environ, start_response)
        with self._lock:
            # moto builds the whole response (and applies the write) inside this call.
            return self.app(environ, start_response)


class HeldAnswer:
    """One answer kept back by :meth:`S3Server.hold_answer`.

    The answer goes out when the client has closed its connection (``client_gave_up`` is then
    set), when the test calls :meth:`set`, or after ``limit`` seconds (``expired`` is then set: the
    client never gave up, which a test should report rather than wait on). ``puts`` counts every
    PUT of the path from then on, the held one included (a client that resends shows as 2).
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.puts = 0
        self.released = threading.Event()
        self.client_gave_up = threading.Event()
        self.expired = threading.Event()
        self.answered = threading.Event()

    def set(self) -> None:
        """Let the answer go (harmless after the client has gone)."""
        self.released.set()

    def hold(self, conn: socket.socket) -> None:
        """Blocks until the peer of ``conn`` hangs up, :meth:`set` is called, or the limit passes."""
        deadline = time.monotonic() + self.limit
        while not self.released.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.expired.set()
                return
            readable, _, _ = select.select([conn], [], [], min(0.05, remaining))
            if not readable:
                continue
            if _hung_up(conn):
                self.client_gave_up.set()
                return
            self.released.wait(min(0.05, remaining))  # bytes pending (not a hang-up): no busy loop


def _hung_up(conn: socket.socket) -> bool:
    """True when the peer has closed the connection (EOF or reset), without consuming any byte."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class _HeldAnswers:
    """WSGI middleware: the answer to the first PUT of a chosen path is held (see HeldAnswer)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.held: dict[str, HeldAnswer] = {}  # URL path -> the hold of its next PUT
        self.watched: dict[str, HeldAnswer] = {}  # URL path -> the hold counting its PUTs
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        answer = self.app(environ, start_response)  # the write has taken effect
        if environ.get("REQUEST_METHOD") == "PUT":
            path = environ.get("PATH_INFO", "")
            with self._lock:
                held = self.held.pop(path, None)
                watched = self.watched.get(path)
                if watched is not None:
                    watched.puts += 1
            if held is not None:
                held.hold(environ["werkzeug.socket"])
                held.answered.set()
        return answer


def _request_handler() -> type:
    """moto's request handler, answering ``Expect: 100-continue`` once (see the module docstring)."""
    from moto.server import MotoRequestHandler

    class OneContinue(MotoRequestHandler):  # type: ignore[misc, valid-type]
        def handle_expect_100(self) -> bool:
            return True  # werkzeug's run_wsgi sends the one "100 Continue"

    return OneContinue


class S3Server:
    """moto's S3 API behind :class:`SerialWrites` on 127.0.0.1; ``endpoint`` once started."""

    def __init__(self) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        self._held = _HeldAnswers(SerialWrites(DomainDispatcherApplication(create_backend_app)))
        self._server = make_server(
            "127.0.0.1", 0, self._held, threaded=True, request_handler=_request_handler()
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-s3", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def hold_answer(self, url: str, limit: float = 60.0) -> HeldAnswer:
        """The next PUT of ``url`` (``s3://bucket/key``) is applied, but its answer waits until the
        client hangs up (a client with a read timeout then sees a write that succeeded as failed);
        ``limit`` bounds the wait should the client never give up."""
        held = HeldAnswer(limit)
        path = "/" + url.removeprefix("s3://")
        with self._held._lock:
            self._held.held[path] = held
            self._held.watched[path] = held
        return held

    def start(self) -> S3Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()
