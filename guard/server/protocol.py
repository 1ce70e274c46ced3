"""uvicorn's httptools protocol, with a response's head and first body part sent in one write.

uvicorn writes the status line and headers as soon as the application sends ``http.response.start``, and the
body as a second write. On uvloop each write is a ``send`` on the socket at once, and each ``send`` on a
loopback or LAN connection wakes the reader: two system calls and two wake-ups of the client for every response.
Holding the head until the first body part (or the end of the response, or a close) makes it one, with the same
bytes on the wire in the same order. The connection handling is uvicorn's own, unchanged.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _HeadWithBody:
    """The transport a request's cycle writes to: the write made when the response starts (its head) is held and
    goes out joined to the next write; anything else passes through.

    It refers to its cycle, which refers to it: the reference is dropped when the response completes, so the pair
    is freed then rather than left to the garbage collector. Left, such pairs were all the cyclic garbage a
    ``/v1/run`` request made (15 objects), and a worker's young collections of it, a few milliseconds each, were
    the pauses in its slowest requests (benchmarks/bench_serve.py)."""

    __slots__ = ("transport", "cycle", "head", "started", "on_response")

    def __init__(self, transport: Any, cycle: Any) -> None:
        self.transport, self.cycle = transport, cycle
        self.head: bytes | None = None
        self.started = False
        self.on_response = cycle.on_response
        cycle.on_response = self.completed

    def write(self, data: bytes) -> None:
        head = self.head
        if head is not None:
            self.head = None
            self.transport.write(head + data)
        elif not self.started and self.cycle is not None and self.cycle.response_started:
            self.head, self.started = data, True
        else:
            self.transport.write(data)

    def flush(self) -> None:
        head = self.head
        if head is not None:
            self.head = None
            self.transport.write(head)

    def completed(self) -> None:
        """The response is complete (a HEAD response has no body write): what is held goes out first; the cycle
        is let go (nothing is written through it after this)."""
        self.flush()
        self.cycle = None
        self.on_response()

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class HttpToolsProtocol1Write(HttpToolsProtocol):
    """:class:`~uvicorn.protocols.http.httptools_impl.HttpToolsProtocol` whose responses leave in one write, and
    whose keep-alive timer is set once per idle spell rather than once per response.

    uvicorn sets the keep-alive timer (close a connection idle ``timeout_keep_alive`` seconds) after every
    response and cancels it when the next request's bytes arrive: on a busy connection, a timer made and
    cancelled per request. Here a response notes when the connection went idle and sets the timer only if none
    is set; new bytes note that it is busy. When the timer goes off it closes the connection if it has been idle
    that long, and otherwise is set again for when it would have (or, the connection busy, left to the next
    response to set), so an idle connection closes when uvicorn's would.
    """

    idle_since: float | None = None
    """When the connection's last response completed, None while a request is being read or answered."""

    def _unset_keepalive_if_required(self) -> None:
        """Bytes arrived: the connection is busy (the timer, if set, stays; it checks when it goes off)."""
        self.idle_since = None

    def on_response_complete(self) -> None:
        """uvicorn's, with the timer set only when none is."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.idle_since = None
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        self.idle_since = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self._keep_alive_due)

    def _keep_alive_due(self) -> None:
        self.timeout_keep_alive_task = None
        idle = self.idle_since
        if idle is None or self.transport.is_closing():
            return  # busy: the next response sets the timer
        left = idle + self.timeout_keep_alive - self.loop.time()
        if left > 0:
            self.timeout_keep_alive_task = self.loop.call_later(left, self._keep_alive_due)
        else:
            self.timeout_keep_alive_handler()

    def connection_lost(self, exc: Exception | None) -> None:
        """uvicorn's, and the timer cancelled whatever the cause."""
        super().connection_lost(exc)
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None

    def on_headers_complete(self) -> None:
        """uvicorn's, then the new request's cycle writes through :class:`_HeadWithBody`."""
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and not isinstance(cycle.transport, _HeadWithBody):
            cycle.transport = _HeadWithBody(cycle.transport, cycle)  # type: ignore[assignment]


__all__ = ["HttpToolsProtocol1Write"]
