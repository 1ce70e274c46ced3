"""The access log's handler: lines held in the process and written together, at most a second late.

``logging.StreamHandler`` writes and flushes its stream for every record: with one access line per request that is
a ``write`` system call per request (whether or not the stream buffers: ``PYTHONUNBUFFERED``, common in
containers, makes stdout write through), and on a pipe it also wakes the process reading it (a log shipper).
This handler keeps the formatted lines and writes them as one string when :data:`HELD_LINES` are held, when a
line comes a second or more after the last write, when the server's timer asks (:func:`flush_access_log`, each
second) and on close, so a line reaches the reader at most about a second late and none is lost at shutdown.
"""

from __future__ import annotations

import logging
import time
from typing import Any

FLUSH_SECONDS = 1.0
HELD_LINES = 64
ACCESS_LOGGER = "guard.server.access"


class HeldStreamHandler(logging.StreamHandler):
    """:class:`logging.StreamHandler` that writes its lines in batches (see the module)."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self.held: list[str] = []
        self._due = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        """Hold the line; write what is held when the batch is full or the last write is a second old."""
        try:
            self.held.append(self.format(record) + self.terminator)
            if len(self.held) >= HELD_LINES or time.monotonic() >= self._due:
                self.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def hold(self, line: str) -> None:
        """Hold a line as :meth:`emit` holds a record's (for :func:`plain_handler`'s caller, which made the line)."""
        with self.lock:  # type: ignore[union-attr]
            self.held.append(line + self.terminator)
            if len(self.held) >= HELD_LINES or time.monotonic() >= self._due:
                self.flush()

    def flush(self) -> None:
        """Write the held lines in one call and flush the stream."""
        with self.lock:  # type: ignore[union-attr]
            self._due = time.monotonic() + FLUSH_SECONDS
            if self.held:
                lines, self.held = "".join(self.held), []
                self.stream.write(lines)
            if self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()

    def close(self) -> None:
        """Write what is held, then close (``StreamHandler.close`` does not flush)."""
        try:
            self.flush()
        finally:
            super().close()


def plain_handler(logger: logging.Logger) -> HeldStreamHandler | None:
    """The logger's one handler when an INFO record's line would reach nothing else and go out as its bare message
    (one :class:`HeldStreamHandler` with ``%(message)s``, no filters, no propagation: ``guard serve``'s access log),
    else None. Then ``handler.hold(message)`` writes what ``logger.info(message)`` would, without the record: its
    making and the logger's and handler's dispatch cost several times the line's own writing."""
    handlers = logger.handlers
    if len(handlers) != 1 or logger.filters or logger.propagate or logger.disabled:
        return None
    handler = handlers[0]
    fmt = handler.formatter
    if (
        type(handler) is not HeldStreamHandler
        or handler.filters
        or handler.level > logging.INFO
        or type(fmt) is not logging.Formatter
        or type(fmt._style) is not logging.PercentStyle
        or fmt._fmt != "%(message)s"
    ):
        return None
    return handler


def flush_access_log() -> None:
    """Flush the access logger's handlers (the server's timer and its shutdown call this)."""
    for handler in logging.getLogger(ACCESS_LOGGER).handlers:
        handler.flush()


__all__ = ["HeldStreamHandler", "plain_handler", "flush_access_log", "FLUSH_SECONDS", "HELD_LINES"]
