"""A light HTTP/1.1 load client for bench_serve: asyncio protocols over keep-alive connections, one request in
flight per connection, the request's bytes built once.

Why not httpx: at 64 in flight an httpx client spent more CPU per request than the server's workers, so on two
shared cores the client set the rate. This one parses only what it needs (status line, ``Content-Length``,
``Connection: close``) and costs a few tens of microseconds a request. Any non-2xx status, a response without a
``Content-Length`` (or chunked), a body that is not a JSON object, or a connection lost mid-response is an
error; the first response on each connection is also decoded as JSON and must carry ``action``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

IDLE_SECONDS = 4.0
"""An idle connection is dropped before uvicorn closes it (5 s), so no request is sent on one as it closes."""


def request_bytes(
    host: str, port: int, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
) -> bytes:
    """One complete ``POST`` request, sent as is on every call."""
    target = f"{path}?{urlencode(query)}" if query else path
    lines = [f"POST {target} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class _Conn(asyncio.Protocol):
    """A connection: ``send`` one request, await its response's status (0: malformed or lost)."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.closed = False
        self.close_after = False
        self.checked = False
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(0)

    def send(self, data: bytes) -> asyncio.Future[int]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buf[:end]).split(b"\r\n")
        try:
            status = int(head[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            return self._done(0)
        length = -1
        for line in head[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip()) if value.strip().isdigit() else -1
            elif name == b"connection" and value.strip().lower() == b"close":
                self.close_after = True
            elif name == b"transfer-encoding":
                return self._done(0)
        if length < 0:
            return self._done(0)
        if len(self.buf) < end + 4 + length:
            return
        body = bytes(self.buf[end + 4 : end + 4 + length])
        extra = len(self.buf) > end + 4 + length
        del self.buf[:]
        ok = body[:1] == b"{" and body[-1:] == b"}" and not extra
        if ok and not self.checked:
            self.checked = True
            try:
                ok = "action" in json.loads(body) if 200 <= status < 300 else True
            except ValueError:
                ok = False
        self._done(status if ok else 0)

    def _done(self, status: int) -> None:
        if status == 0:
            self.close_after = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(status)


class LoadClient:
    """Keep-alive connections to ``host:port``, each reused while it is fresh and open."""

    def __init__(self, host: str, port: int, request: bytes, *more: bytes) -> None:
        self.host, self.port, self.request = host, port, request
        self.idle: list[_Conn] = []
        self.requests = itertools.cycle((request, *more)) if more else None
        """Several requests: sent in turn."""

    async def call(self) -> bool:
        """One request; True when it was answered 2xx with a well-formed body."""
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        conn = None
        while self.idle:
            c = self.idle.pop()
            if not c.closed and now - c.idle_since < IDLE_SECONDS:
                conn = c
                break
            if c.transport is not None:
                c.transport.close()
        if conn is None:
            try:
                _t, conn = await loop.create_connection(_Conn, self.host, self.port)
            except OSError:
                return False
        status = await conn.send(self.request if self.requests is None else next(self.requests))
        if conn.close_after or conn.closed:
            if conn.transport is not None:
                conn.transport.close()
        else:
            conn.idle_since = time.monotonic()
            self.idle.append(conn)
        return 200 <= status < 300

    def close(self) -> None:
        for c in self.idle:
            if c.transport is not None:
                c.transport.close()
        self.idle.clear()


__all__ = ["LoadClient", "request_bytes"]
