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
    goes out joined to the next write; anything else passes through."""

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
        elif not self.started and self.cycle.response_started:
            self.head, self.started = data, True
        else:
            self.transport.write(data)

    def flush(self) -> None:
        head = self.head
        if head is not None:
            self.head = None
            self.transport.write(head)

    def completed(self) -> None:
        """The response is complete (a HEAD response has no body write): what is held goes out first."""
        self.flush()
        self.on_response()

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class HttpToolsProtocol1Write(HttpToolsProtocol):
    """:class:`~uvicorn.protocols.http.httptools_impl.HttpToolsProtocol` whose responses leave in one write."""

    def on_headers_complete(self) -> None:
        """uvicorn's, then the new request's cycle writes through :class:`_HeadWithBody`."""
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and not isinstance(cycle.transport, _HeadWithBody):
            cycle.transport = _HeadWithBody(cycle.transport, cycle)  # type: ignore[assignment]


__all__ = ["HttpToolsProtocol1Write"]
