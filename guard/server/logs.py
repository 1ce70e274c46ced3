"""The access log's handler: a stream written line by line but flushed at most once a second.

``logging.StreamHandler`` flushes its stream after every record: with one access line per request that is a
``write`` system call per request, which on a pipe also wakes the process reading it (a log shipper). This one
leaves the lines in the stream's buffer (which writes by itself when full) and flushes when a second has passed
since the last flush, when the server's timer asks (:func:`flush_access_log`, each second) and on close, so a
line reaches the reader at most about a second late and none is lost at shutdown.
"""

from __future__ import annotations

import logging
import time
from typing import Any

FLUSH_SECONDS = 1.0

ACCESS_LOGGER = "guard.server.access"


class HeldStreamHandler(logging.StreamHandler):
    """:class:`logging.StreamHandler` that flushes at most every :data:`FLUSH_SECONDS` (and on ``flush``/close)."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._due = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        """Write the line; flush only when the last flush is a second old."""
        try:
            self.stream.write(self.format(record) + self.terminator)
            now = time.monotonic()
            if now >= self._due:
                self._due = now + FLUSH_SECONDS
                self.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        """Flush what is held, then close (``StreamHandler.close`` does not flush)."""
        try:
            self.flush()
        finally:
            super().close()


def flush_access_log() -> None:
    """Flush the access logger's handlers (the server's timer and its shutdown call this)."""
    for handler in logging.getLogger(ACCESS_LOGGER).handlers:
        handler.flush()


__all__ = ["HeldStreamHandler", "flush_access_log", "FLUSH_SECONDS"]
