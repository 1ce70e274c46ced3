"""How a run uses the pool: every entity of a payload read on one checked-out connection (sync and asyncio), and
on PostgreSQL no ping round trip for a connection that was in use moments ago, while an idle one the server has
dropped is still replaced before a read could fail on it."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
import sqlalchemy as sa
from sqlalchemy.util import greenlet_spawn

from guard import demo
from guard.decision import Action
from guard.pipeline import AsyncGuard, Guard
from guard.records import store as store_module
from guard.records.checker import Status
from guard.records.store import AsyncRecordStore, RecordStore
from tests.conftest import BACKENDS, PG_ADMIN, _worker, backend_url

CONFIG = {"domains": {"orders": {"stages": {"freetext": "off"}}}}


def two_entities(store: RecordStore) -> dict:
    """The demo answer plus a claim on the customer who placed the order: two tables, one payload."""
    customer = store.fetch("customer", ["cus_1042"])["cus_1042"]
    p = demo.payloads()["answer"]
    claim = {"key": "tier", "type": "enum", "entity": "customer", "entity_id": "cus_1042", "field": "tier"}
    return {
        "answer_template": p["answer_template"] + " Your tier is {tier}.",
        "claims": [*p["claims"], {**claim, "value": customer["tier"]}],
    }


def counting(engine: sa.Engine) -> list[int]:
    """Checkouts of the engine's pool (a pool event: the store still reads on its direct path)."""
    seen: list[int] = []
    sa.event.listen(engine, "checkout", lambda *a: seen.append(1))
    return seen


def test_a_payload_of_two_entities_takes_one_connection(demo_db):
    url, policy, store = demo_db
    payload = two_entities(store)
    gate = Guard(policy, url, domain="orders", config=CONFIG)
    seen = counting(gate.store.engine)
    try:
        d = gate.run(payload, demo.PRINCIPAL, now=demo.NOW, request_id="r")
        assert not gate.store._instrumented()
        assert d.action is Action.ANSWER and {r.entity for r in d.results} == {"order", "customer"}
        assert {r.status for r in d.results} == {Status.CONFIRMED}
        assert len(seen) == 1
    finally:
        gate.close()

    async def asynchronous():
        async with AsyncGuard(policy, url, domain="orders", config=CONFIG) as agate:
            aseen = counting(agate.store.async_engine.sync_engine)
            got = await agate.run(payload, demo.PRINCIPAL, now=demo.NOW, request_id="r")
            return got, len(aseen)

    got, checkouts = asyncio.run(asynchronous())
    assert got.to_dict() == d.to_dict() and checkouts == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_entity_missing_its_table_does_not_lose_the_other(backend, tmp_path_factory, request):
    """Reads share a connection, not a fate: a table dropped after start-up is unavailable for its own claims."""
    policy = demo.policy()
    own = backend_url(backend, tmp_path_factory, _worker(request), "one_checkout")
    demo.build(own, n_orders=60, n_customers=200).dispose()
    store = RecordStore(own, policy)
    payload = two_entities(store)
    engine = sa.create_engine(own)

    async def scenario():
        async with AsyncGuard(policy, own, domain="orders", config=CONFIG) as agate:  # reflected before the drop
            with engine.begin() as conn:
                conn.execute(sa.text("DROP TABLE customers"))
            d = Guard(policy, store, domain="orders", config=CONFIG).run(payload, demo.PRINCIPAL, now=demo.NOW)
            return d, await agate.run(payload, demo.PRINCIPAL, now=demo.NOW, request_id=d.request_id)

    try:
        d, got = asyncio.run(scenario())
        assert {r.status for r in d.results if r.entity == "order"} == {Status.CONFIRMED}
        assert [(r.status, r.cause) for r in d.results if r.entity == "customer"] == [(Status.UNAVAILABLE, "schema")]
        assert got.to_dict() == d.to_dict()
    finally:
        store.close()
        engine.dispose()


def backend_pid(raw) -> int:
    conn = getattr(raw, "driver_connection", None) or raw.dbapi_connection
    return conn.info.backend_pid


def last_query(pid: int) -> str | None:
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            return conn.execute(sa.text("SELECT query FROM pg_stat_activity WHERE pid = :p"), {"p": pid}).scalar()
    finally:
        admin.dispose()


def terminate(pid: int) -> None:
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            deadline = time.monotonic() + 10
            while conn.execute(sa.text("SELECT 1 FROM pg_stat_activity WHERE pid = :p"), {"p": pid}).first():
                assert time.monotonic() < deadline, "the backend did not go away"
                time.sleep(0.02)
    finally:
        admin.dispose()


@pytest.fixture()
def pg_url(tmp_path_factory, request):
    url = backend_url("postgresql", tmp_path_factory, _worker(request), "liveness")
    demo.build(url, n_orders=60, n_customers=20).dispose()
    return url


def test_a_connection_used_moments_ago_is_not_pinged_and_an_idle_one_is(pg_url, monkeypatch):
    store = RecordStore(pg_url, demo.policy(), pool_size=1)
    gate = Guard(store.policy, store, domain="orders", config=CONFIG)
    try:
        assert gate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW).action is Action.ANSWER
        raw = store.engine.raw_connection()
        pid = backend_pid(raw)
        raw.close()
        assert "FROM orders" in (last_query(pid) or "")
        monkeypatch.setattr(store_module, "PING_IDLE", 0.0)
        raw = store.engine.raw_connection()  # idle for longer than PING_IDLE: pinged
        assert backend_pid(raw) == pid
        raw.close()
        assert last_query(pid) == "SELECT 1"
    finally:
        gate.close()


def test_an_idle_connection_the_server_dropped_is_replaced_without_a_failed_read(pg_url):
    """pg_terminate_backend on the pooled connection between two runs: the second is answered (its socket has the
    server's farewell waiting, so the checkout pings it, and the pool opens a new one)."""
    store = RecordStore(pg_url, demo.policy(), pool_size=1)
    gate = Guard(store.policy, store, domain="orders", config=CONFIG)
    try:
        assert gate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW).action is Action.ANSWER
        raw = store.engine.raw_connection()
        pid = backend_pid(raw)
        raw.close()
        terminate(pid)
        assert gate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW).action is Action.ANSWER
        raw = store.engine.raw_connection()
        assert backend_pid(raw) != pid
        raw.close()
    finally:
        gate.close()

    async def asynchronous():
        # the asyncio store keeps the connection of its last read out of the pool: that is the one terminated
        named = f"{pg_url}&application_name={APP}"
        store = AsyncRecordStore(named, demo.policy(), pool_size=1)
        async with AsyncGuard(store.policy, store, domain="orders", config=CONFIG) as agate:
            assert (await agate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW)).action is Action.ANSWER
            pids = await asyncio.to_thread(backends, APP)
            assert len(pids) == 1
            await asyncio.to_thread(terminate, pids[0])
            again = await agate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW)
            assert again.action is Action.ANSWER
            assert await asyncio.to_thread(backends, APP) not in ([], pids)

    asyncio.run(asynchronous())


APP = f"guard_kept_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
"""The application name of the asyncio store's connections in these tests, so that its backends can be found."""


def backends(app: str) -> list[int]:
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            q = sa.text("SELECT pid FROM pg_stat_activity WHERE application_name = :a ORDER BY pid")
            return list(conn.execute(q, {"a": app}).scalars())
    finally:
        admin.dispose()


def test_the_asyncio_store_reads_on_a_kept_connection_until_it_has_been_idle(pg_url, monkeypatch):
    """On PostgreSQL the asyncio store keeps its connection between reads: many runs, one checkout and one backend;
    once it has been idle for PING_IDLE it goes back through the pool."""

    async def scenario():
        store = AsyncRecordStore(f"{pg_url}&application_name={APP}", demo.policy(), pool_size=1)
        async with AsyncGuard(store.policy, store, domain="orders", config=CONFIG) as agate:
            seen = counting(store.async_engine.sync_engine)
            for key, action in [("answer", "answer"), ("refuse", "refuse"), ("regenerate", "regenerate_from_facts")]:
                d = await agate.run(demo.payloads()[key], demo.PRINCIPAL, now=demo.NOW)
                assert d.action.value == action
            assert len(seen) == 1 and len(await asyncio.to_thread(backends, APP)) == 1
            monkeypatch.setattr(store_module, "PING_IDLE", 0.2)
            await asyncio.sleep(0.3)
            assert (await agate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW)).action is Action.ANSWER
            assert len(seen) == 2
        assert await asyncio.to_thread(backends, APP) == []  # aclose released the kept connection too

    asyncio.run(scenario())


def test_a_connection_kept_between_reads_is_judged_idle_from_its_last_read(pg_url):
    """A connection the asyncio store kept comes back to the pool with the time of its last read, so the checkout
    pings it when that was PING_IDLE ago, though it was checked in just now."""
    store = RecordStore(pg_url, demo.policy(), pool_size=1)
    try:
        raw = store.engine.raw_connection()
        pid = backend_pid(raw)
        raw.info[store_module._USED] = time.monotonic() - store_module.PING_IDLE - 1
        raw.close()
        raw = store.engine.raw_connection()
        assert backend_pid(raw) == pid
        raw.close()
        assert last_query(pid) == "SELECT 1"
        raw = store.engine.raw_connection()  # returned moments ago, with no mark: not pinged
        with raw.cursor() as cur:
            cur.execute("SELECT 2")
        raw.close()
        raw = store.engine.raw_connection()
        raw.close()
        assert last_query(pid) == "SELECT 2"
    finally:
        store.close()


def test_the_asyncio_store_reads_with_one_cursor_a_connection_and_drops_one_that_failed(pg_url):
    """The kept connection's cursor is used again for every read (a new one cost more than the statement's own
    driver work); a statement that fails leaves no cursor behind, and the next read makes a fresh one."""

    def run(agate, kind):
        return agate.run(demo.payloads()[kind], demo.PRINCIPAL, now=demo.NOW)

    async def scenario():
        store = AsyncRecordStore(pg_url, demo.policy(), pool_size=1)
        async with AsyncGuard(store.policy, store, domain="orders", config=CONFIG) as agate:
            first = await run(agate, "answer")
            ((fairy, _since),) = store._held
            driver, cursor = fairy.info[store_module._CURSOR]
            assert driver is fairy.dbapi_connection.driver_connection
            for kind in ("refuse", "regenerate", "answer"):
                await run(agate, kind)
            assert store._held[0][0].info[store_module._CURSOR][1] is cursor
            with pytest.raises(store_module._DriverError):
                await store._aexecute(fairy, "SELECT 1 / 0", None)
            assert store_module._CURSOR not in fairy.info
            again = await run(agate, "answer")
            assert again.to_dict() | {"request_id": ""} == first.to_dict() | {"request_id": ""}
            assert store._held[0][0].info[store_module._CURSOR][1] is not cursor
            # a statement cut short (the request's time limit cancels the task) leaves no cursor behind either
            fairy, _since = store._held.pop()
            cut = asyncio.create_task(store._aexecute(fairy, "SELECT pg_sleep(5)", None))
            await asyncio.sleep(0.3)
            cut.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cut
            assert store_module._CURSOR not in fairy.info
            await greenlet_spawn(fairy.invalidate)
            assert (await run(agate, "answer")).action is Action.ANSWER

    asyncio.run(scenario())
