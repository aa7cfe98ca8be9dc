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

:meth:`S3Server.hold_answer` makes one write take effect but keeps its answer back until the test
releases it: what a client sees when the answer to a PUT that succeeded is lost (a read timeout).
"""

from __future__ import annotations

import threading
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


class _HeldAnswers:
    """WSGI middleware: the answer to the first PUT of a chosen path waits for an event."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.held: dict[str, threading.Event] = {}  # URL path -> released when set
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        answer = self.app(environ, start_response)  # the write has taken effect
        if environ.get("REQUEST_METHOD") == "PUT":
            with self._lock:
                release = self.held.pop(environ.get("PATH_INFO", ""), None)
            if release is not None:
                release.wait(120)
        return answer


class S3Server:
    """moto's S3 API behind :class:`SerialWrites` on 127.0.0.1; ``endpoint`` once started."""

    def __init__(self) -> None:
        from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        self._held = _HeldAnswers(SerialWrites(DomainDispatcherApplication(create_backend_app)))
        self._server = make_server(
            "127.0.0.1", 0, self._held, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-s3", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def hold_answer(self, url: str) -> threading.Event:
        """The next PUT of ``url`` (``s3://bucket/key``) is applied, but its answer waits until the
        returned event is set: the writer's client times out on a write that succeeded."""
        release = threading.Event()
        with self._held._lock:
            self._held.held["/" + url.removeprefix("s3://")] = release
        return release

    def start(self) -> S3Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()
