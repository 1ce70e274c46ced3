"""The worker processes of ``guard serve``: a supervisor keeps N uvicorn servers on one listening socket and
replaces them one at a time on SIGHUP; each worker retires without dropping a connection it holds.

Why guard's own supervisor: uvicorn's ends a worker with uvicorn's plain shutdown, which closes at once every
connection without a request in progress. Under load that includes a connection accepted a moment earlier
whose request is still unread in the socket, one whose transport the event loop has not yet made (closing the
listener makes that step fail, and the socket is dropped), and a keep-alive connection its client is writing to
just then: each client sees the connection closed with no response. The cure belongs to the worker's shutdown,
and uvicorn's supervisor has no way to run another server class.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import socket
import time
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Process

logger = logging.getLogger("guard.server.workers")

RETIRE_GRACE_SECONDS = 1.0
"""How long a retiring worker keeps serving the connections it already holds after it stops accepting: a request
that arrives on one in this time is answered (with ``Connection: close``, so the client reconnects to a current
worker); a connection still idle at the end is closed. Longer than a busy client's gap between requests, short
enough that a reload of several workers takes seconds."""
SETTLE_SECONDS = 0.05
"""The least a retiring worker waits, even with no connection open: a connection accepted just before it stopped
accepting joins the server's set only after the event loop has made its transport."""
CLOSE_HEADER = (b"connection", b"close")
GC_THRESHOLD0 = 7000
"""A worker's first-generation garbage collection threshold (Python's default is 700). A ``/v1/run`` request leaves
no reference cycle (tests/server/test_protocol.py), so a young collection frees nothing: it only walks the objects
of the requests in flight, and the threshold sets how many of those it takes to start one. At 7000 a worker
collects about once in five seconds at 650 requests a second (a millisecond or less), more only in a burst of
requests in flight (benchmarks/bench_serve.py)."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RetiringServer(uvicorn.Server):
    """A uvicorn server whose shutdown drains its connections instead of cutting the idle ones.

    In order: stop accepting (the other workers share the socket and take new connections); let transports
    already accepted come up; answer every response not yet started, and every request arriving within
    :data:`RETIRE_GRACE_SECONDS`, with ``Connection: close``; then uvicorn's own shutdown closes what is left
    idle and waits for requests in flight (``timeout_graceful_shutdown``).
    """

    grace = RETIRE_GRACE_SECONDS
    settle_gc = False
    """Set in a worker's own process: after start-up, :func:`settle_gc` (it changes the whole process's collector)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.retiring = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up (the application's lifespan: policies, grammars, the database), then the collector
        settled when :attr:`settle_gc`."""
        await super().startup(sockets=sockets)
        if self.settle_gc:
            settle_gc()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Retire, then uvicorn's shutdown; a forced exit (a second SIGINT) skips the grace."""
        if not self.force_exit:
            await self.retire()
        await super().shutdown(sockets=sockets)

    async def retire(self) -> None:
        """Stop accepting and drain the connections held, for at most :attr:`grace` seconds."""
        loop = asyncio.get_running_loop()
        for server in self.servers:
            if isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop):
                # closing asyncio's server now would fail the transports of connections accepted but not yet made
                for sock in server.sockets:
                    loop.remove_reader(sock.fileno())
            else:
                # uvloop (guard's loop) makes the transport in the same callback as the accept, and closing its
                # server releases this process's descriptor only: the other workers keep the listening socket
                server.close()
        self.retiring = True
        self.server_state.default_headers = [*self.server_state.default_headers, CLOSE_HEADER]
        start = loop.time()
        while not self.force_exit:
            for connection in self.server_state.connections:
                self._close_after_response(connection)
            waited = loop.time() - start
            if waited >= self.grace or (waited >= SETTLE_SECONDS and not self.server_state.connections):
                return
            await asyncio.sleep(0.01)

    @staticmethod
    def _close_after_response(connection: Any) -> None:
        """A response whose head is not yet written carries ``Connection: close``; one already started keeps
        the connection open for one more request in the grace (closing after it could cut a request sent on
        it before the client saw the close)."""
        cycle = getattr(connection, "cycle", None)
        if cycle is None or cycle.response_started or CLOSE_HEADER in cycle.default_headers:
            return
        cycle.default_headers = [*cycle.default_headers, CLOSE_HEADER]


def settle_gc() -> None:
    """Freeze what start-up made and raise the first collection threshold to :data:`GC_THRESHOLD0`.

    A worker holds a few hundred thousand long-lived objects after start-up (grammars, policies, the reflected
    schema, the libraries); every full collection walked them all, about 0.1 s a time, a few times a minute
    under load. Frozen (``gc.freeze``), they are left out of every later collection; they live as long as the
    worker anyway."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, *gc.get_threshold()[1:])


class Worker(Process):
    """uvicorn's worker process (a pipe answering health pings), running a :class:`RetiringServer` that settles
    the process's garbage collector once it serves."""

    @property
    def server(self) -> uvicorn.Server:
        """Made in the worker process, on first use."""
        if self._server is None:
            self._server = RetiringServer(config=self.config)
            self._server.settle_gc = True
        return self._server


class Supervisor:
    """Keeps ``config.workers`` workers on ``sockets``: SIGHUP replaces them one at a time, each new one serving
    before the old one retires, and stops at the first that does not start (the others keep serving); SIGTERM or
    SIGINT retires them all; a worker that dies or stops answering is replaced, unless it failed at start-up,
    which would fail again, so the server stops."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket]) -> None:
        self.config, self.sockets = config, sockets
        self.workers: list[Worker] = []
        self.signals: list[int] = []

    def run(self) -> int:
        """Serve until SIGTERM or SIGINT (0) or a worker that cannot start (uvicorn's start-up failure code)."""
        handled = (*STOP_SIGNALS, signal.SIGHUP)
        previous = {sig: signal.signal(sig, lambda sig, _frame: self.signals.append(sig)) for sig in handled}
        try:
            self.workers = [self._start() for _ in range(self.config.workers)]
            return self._supervise()
        finally:
            for worker in self.workers:
                worker.terminate()
            for worker in self.workers:
                worker.join()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _supervise(self) -> int:
        while True:
            while self.signals:
                sig = self.signals.pop(0)
                if sig in STOP_SIGNALS:
                    return 0
                self.reload()
            if self._stopping():
                return 0
            if not self._replace_dead():
                return STARTUP_FAILURE
            time.sleep(0.25)

    def reload(self) -> None:
        """Replace each worker in turn; the first that does not become ready ends the reload."""
        for index, old in enumerate(self.workers):
            new = self._start()
            if not self._wait_ready(new):
                new.kill()
                new.join()
                if not self._stopping():
                    logger.error("worker %s did not start; the running workers keep serving", new.pid)
                return
            old.terminate()
            old.join()
            self.workers[index] = new

    def _start(self) -> Worker:
        worker = Worker(self.config, self.sockets)
        worker.start()
        return worker

    def _stopping(self) -> bool:
        return any(sig in STOP_SIGNALS for sig in self.signals)

    def _wait_ready(self, worker: Worker) -> bool:
        deadline = time.monotonic() + self.config.timeout_worker_healthcheck
        while time.monotonic() < deadline and not self._stopping() and worker.process.is_alive():
            if worker.is_ready(timeout=1):
                return True
            time.sleep(0.1)
        return False

    def _replace_dead(self) -> bool:
        """Replace workers that exited or stopped answering; False when one failed at start-up."""
        for index, worker in enumerate(self.workers):
            if worker.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            worker.kill()
            worker.join()
            if worker.exitcode == STARTUP_FAILURE:
                logger.error("worker %s failed to start; stopping", worker.pid)
                return False
            logger.warning("worker %s ended (exit code %s); starting another", worker.pid, worker.exitcode)
            self.workers[index] = self._start()
        return True


__all__ = ["RETIRE_GRACE_SECONDS", "GC_THRESHOLD0", "RetiringServer", "Supervisor", "Worker", "settle_gc"]
