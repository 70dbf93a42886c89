"""A TCP proxy for HTTP/1.1 that loses replies: it forwards each request to the server, reads
the whole response, and for every ``drop_every``-th response closes the client's connection
instead of relaying it. The server has answered (the write landed); the client only lost the
reply, which is what a keyed resend must survive."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType

_MAX_HEAD = 64 * 1024


class _Closed(Exception):
    """The peer closed the connection."""


def _read_message(stream: socket.socket, buffer: bytearray) -> tuple[bytes, dict[str, str]]:
    """One HTTP message (head and a Content-Length body) from ``stream``; bytes past it stay
    in ``buffer``."""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > _MAX_HEAD:
            raise _Closed("head too long")
        chunk = stream.recv(65536)
        if not chunk:
            raise _Closed("closed")
        buffer.extend(chunk)
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end])
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(buffer) < end + length:
        chunk = stream.recv(65536)
        if not chunk:
            raise _Closed("closed mid-body")
        buffer.extend(chunk)
    message = bytes(buffer[: end + length])
    del buffer[: end + length]
    return message, headers


@dataclass
class ProxyStats:
    """What the proxy did, for the test's assertions."""

    relayed: int = 0
    dropped: int = 0
    dropped_by_key: Counter[str] = field(default_factory=Counter)


class DroppingProxy:
    """Listens on a free loopback port and forwards to ``upstream`` (``host``, ``port``),
    dropping every ``drop_every``-th response to a write (a request with an
    ``Idempotency-Key``; reads are always answered). A key that already lost
    ``max_drops_per_key`` replies is answered, so each call gets through within its client's
    resends."""

    def __init__(
        self, upstream: tuple[str, int], drop_every: int = 3, max_drops_per_key: int = 2
    ) -> None:
        self.stats = ProxyStats()
        self._lock = threading.Lock()
        self._responses = 0
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                client: socket.socket = self.request
                buffer = bytearray()
                try:
                    while True:
                        request, headers = _read_message(client, buffer)
                        response = proxy._forward(request, upstream)
                        if proxy._drop(
                            headers.get("idempotency-key"), drop_every, max_drops_per_key
                        ):
                            # Lost reply: the request was served, the answer never arrives.
                            client.shutdown(socket.SHUT_RDWR)
                            return
                        client.sendall(response)
                except (_Closed, OSError):
                    return

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _forward(self, request: bytes, upstream: tuple[str, int]) -> bytes:
        with socket.create_connection(upstream, timeout=30) as server:
            server.sendall(request)
            response, _ = _read_message(server, bytearray())
            return response

    def _drop(self, key: str | None, drop_every: int, max_drops_per_key: int) -> bool:
        with self._lock:
            self._responses += 1
            due = self._responses % drop_every == 0
            allowed = key is not None and self.stats.dropped_by_key[key] < max_drops_per_key
            if due and allowed:
                self.stats.dropped += 1
                if key is not None:
                    self.stats.dropped_by_key[key] += 1
                return True
            self.stats.relayed += 1
            return False

    def __enter__(self) -> DroppingProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
