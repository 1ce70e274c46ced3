"""Client-side deadlines for PostgreSQL connections, whose network path may stop answering.

A statement timeout lives on the server: when the path to it stops forwarding (a dead NAT entry, a
firewall dropping packets, a proxy that hangs), the server never sees the query, and libpq has no read
timeout, so the client would wait forever. TCP keepalives and ``tcp_user_timeout`` catch a dead network
only when no device on the way still answers for the server. The :class:`Watchdog` here does not depend
on the network: a connection whose statement has not come back within its deadline has its socket shut
down, the blocked read returns, and the driver raises an ``OperationalError`` (a ``connection`` cause).
One thread serves every connection of the process; arming costs a heap push.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


def socket_of(dbapi_conn: Any) -> int | None:
    """The file descriptor of a psycopg (3) or psycopg2 connection's socket, or None when it has none. Under
    SQLAlchemy's asyncio engine the DBAPI connection is an adapter around psycopg's ``AsyncConnection``: its
    ``driver_connection`` has the socket (the watchdog cutting it wakes the awaiting read as well)."""
    try:
        conn = getattr(dbapi_conn, "driver_connection", None) or dbapi_conn
        pgconn = getattr(conn, "pgconn", None)
        fd = pgconn.socket if pgconn is not None else conn.fileno()
    except Exception:  # a closed or broken connection has no socket to watch
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


TICK = 0.05
"""The least time between two wake-ups of the watchdog's thread while deadlines are queued (seconds): the most
a deadline fires late, against deadlines of seconds."""


class Watchdog:
    """Shuts down the socket of a connection whose deadline passes before it is disarmed."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int]] = []
        self._live: dict[int, int] = {}
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.fired = 0
        """Deadlines that passed: each one a statement whose connection was cut."""

    def arm(self, fd: int, seconds: float) -> int:
        """Watch ``fd`` for ``seconds``. The thread is woken only when this deadline is now the earliest: waking
        it for every statement (all deadlines alike, so each new one is the latest) cost a thread switch and
        the GIL's round trip per statement, about a third of a millisecond under load."""
        token = next(self._ids)
        with self._cond:
            self._live[token] = fd
            heapq.heappush(self._heap, (time.monotonic() + seconds, token, fd))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="guard-db-deadline", daemon=True)
                self._thread.start()
            if self._heap[0][1] == token:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._live.pop(token, None)

    @contextlib.contextmanager
    def watching(self, dbapi_conn: Any, seconds: float) -> Iterator[None]:
        """Within the block, the connection's socket is shut down once ``seconds`` pass."""
        fd = socket_of(dbapi_conn)
        token = None if fd is None else self.arm(fd, seconds)
        try:
            yield
        finally:
            if token is not None:
                self.disarm(token)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                when, token, fd = self._heap[0]
                wait = when - time.monotonic()
                if wait > 0:
                    # disarmed deadlines stay queued until due: waking at least TICK apart pops them in batches
                    # (a few wake-ups a second however many statements run), a live one fires at most TICK late
                    self._cond.wait(max(wait, TICK))
                    continue
                heapq.heappop(self._heap)
                if self._live.pop(token, None) is None:
                    continue
                self.fired += 1
                # under the lock: disarm() waits for it, so the descriptor is still the connection's own
                _cut(fd)


def _cut(fd: int) -> None:
    """Shut the socket down (through a duplicate, so the driver's descriptor stays its own to close)."""
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(fd)) as dup:
        dup.shutdown(socket.SHUT_RDWR)


WATCHDOG = Watchdog()
"""The process's one watchdog."""

__all__ = ["Watchdog", "WATCHDOG", "socket_of"]
