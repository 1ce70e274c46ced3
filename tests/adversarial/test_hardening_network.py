"""Issue 18 #12: a PostgreSQL server whose network path stops answering makes claims ``unavailable`` within the
statement timeout plus a small margin, instead of blocking forever.

The path is a real TCP relay on 127.0.0.1 in front of the real PostgreSQL server: it forwards bytes both ways
until told to stop, then keeps every connection open and silently drops what it reads, as a dead NAT entry or a
hung proxy does. The server never sees the query, so its statement timeout cannot help.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
import sqlalchemy as sa

from guard import demo
from guard.decision import Action
from guard.pipeline import verify
from guard.records.checker import Status
from guard.records.store import DEADLINE_MARGIN, AsyncRecordStore, RecordStore
from tests.conftest import backend_url

from .conftest import worker

pytestmark = pytest.mark.backend("postgresql")


class Relay:
    """A TCP relay to ``target`` that can stop forwarding while keeping its connections open."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.forwarding = threading.Event()
        self.forwarding.set()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if self.forwarding.is_set():
                try:
                    dst.sendall(data)
                except OSError:
                    return

    def close(self) -> None:
        self.server.close()
        for s in self.sockets:
            s.close()


@pytest.fixture()
def relay_url(tmp_path_factory):
    """A relay in front of a demo database on PostgreSQL, and the database's URL through it."""
    url = backend_url("postgresql", tmp_path_factory, worker(), tag="relay")
    demo.build(url, n_orders=50, n_customers=20)
    u = sa.make_url(url)
    relay = Relay((u.host or "127.0.0.1", u.port or 5432))
    yield relay, u.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    relay.forwarding.set()
    relay.close()


@pytest.fixture()
def relayed(relay_url):
    relay, url = relay_url
    store = RecordStore(url, demo.policy(), statement_timeout=1.0, connect_timeout=2.0)
    yield relay, store
    relay.forwarding.set()
    store.close()


def ask(store: RecordStore, out: list) -> None:
    out.append(verify(demo.payloads()["answer"], store.policy, store, principal=demo.PRINCIPAL, now=demo.NOW))


def test_path_that_stops_answering_is_unavailable_within_the_statement_timeout(relayed):
    relay, store = relayed
    first: list = []
    ask(store, first)
    assert first[0].action is Action.ANSWER
    relay.forwarding.clear()
    got: list = []
    t0 = time.monotonic()
    worker_thread = threading.Thread(target=ask, args=(store, got), daemon=True)
    worker_thread.start()
    # the bound is the requirement itself: the timeout, the margin, and a reconnect under connect_timeout
    worker_thread.join(store.statement_timeout + DEADLINE_MARGIN + 2.0 + 5.0)
    elapsed = time.monotonic() - t0
    assert not worker_thread.is_alive(), "the check blocked on a dead network path"
    d = got[0]
    assert d.action is Action.REFUSE and {r.status for r in d.results} == {Status.UNAVAILABLE}
    assert elapsed < store.statement_timeout + DEADLINE_MARGIN + 2.0 + 5.0
    relay.forwarding.set()
    again: list = []
    ask(store, again)
    assert again[0].action is Action.ANSWER


def test_the_asynchronous_store_is_bounded_by_the_same_deadline(relay_url):
    """AsyncGuard's store reads through the asyncio driver; a dead path must not hang the event loop's await."""
    relay, url = relay_url
    budget = 1.0 + DEADLINE_MARGIN + 2.0 + 5.0

    async def ask_async(store: AsyncRecordStore):
        return await store.call(
            verify, demo.payloads()["answer"], store.policy, store, principal=demo.PRINCIPAL, now=demo.NOW
        )

    async def scenario() -> None:
        store = AsyncRecordStore(url, demo.policy(), statement_timeout=1.0, connect_timeout=2.0)
        try:
            await store.open()
            assert (await ask_async(store)).action is Action.ANSWER
            relay.forwarding.clear()
            t0 = time.monotonic()
            try:
                d = await asyncio.wait_for(ask_async(store), budget)
            except TimeoutError:
                pytest.fail("the asynchronous check blocked on a dead network path")
            assert time.monotonic() - t0 < budget
            assert d.action is Action.REFUSE and {r.status for r in d.results} == {Status.UNAVAILABLE}
            relay.forwarding.set()
            assert (await ask_async(store)).action is Action.ANSWER
        finally:
            relay.forwarding.set()
            await store.aclose()

    asyncio.run(scenario())
