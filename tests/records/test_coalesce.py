"""Reads of concurrent runs merged into one statement (``AsyncRecordStore(coalesce=n)``): the same decisions as
each run reading alone, on every backend; scope kept per run; a batch's errors reach each of its runs; a run's
deadline still holds while its batch waits on the database."""

from __future__ import annotations

import asyncio
import copy
import threading

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.pipeline import AsyncGuard
from guard.records.checker import Status
from guard.records.store import AsyncRecordStore, Read
from tests.conftest import BACKENDS, _worker, backend_url

CONFIG = {"domains": {"orders": {"stages": {"freetext": "off"}}}}
ORDERS = [demo.order_id(i) for i in range(0, 600, 37)] + ["ord_88431", "ord_88432", "ord_99999", "", "x\x00y"]
CUSTOMERS = [demo.customer_id(i) for i in range(0, 200, 23)] + ["cus_1042", "cus_9999"]
PRINCIPALS = [*CUSTOMERS, None, ""]
VALUES = st.one_of(
    st.none(),
    st.integers(-5, 10),
    st.sampled_from(["2026-07-30", "2026-08-03", "3", "shipped", "gold", "silver", "Ada Lovelace"]),
    st.text(max_size=8),
)


@st.composite
def payloads(draw):
    """A demo payload about a drawn order, sometimes with a claim on a drawn customer (a second table)."""
    p = copy.deepcopy(demo.payloads()[draw(st.sampled_from(["answer", "refuse", "regenerate"]))])
    order = draw(st.sampled_from(ORDERS))
    for c in p["claims"]:
        c["entity_id"] = order if draw(st.integers(0, 4)) else draw(st.sampled_from(ORDERS))
        if draw(st.booleans()):
            c["value"] = draw(VALUES)
    if draw(st.booleans()):
        field = draw(st.sampled_from(["tier", "name"]))
        p["answer_template"] += " Your {c}."
        claim = {"key": "c", "type": "enum" if field == "tier" else "string", "entity": "customer", "field": field}
        p["claims"].append({**claim, "entity_id": draw(st.sampled_from(CUSTOMERS)), "value": draw(VALUES)})
    return p


RUNS = st.lists(st.tuples(payloads(), st.sampled_from(PRINCIPALS)), min_size=1, max_size=24)


@pytest.fixture()
def pair(demo_db, loop):
    """Two gates over the same records: each run reading alone (the reference), and runs' reads merged."""
    url, policy, _store = demo_db
    alone = AsyncGuard(policy, url, domain="orders", config=CONFIG)
    merged = AsyncGuard(policy, AsyncRecordStore(url, policy, coalesce=2), domain="orders", config=CONFIG)
    loop.run_until_complete(alone.open())
    loop.run_until_complete(merged.open())
    yield alone, merged
    loop.run_until_complete(alone.aclose())
    loop.run_until_complete(merged.aclose())


async def all_at_once(gate: AsyncGuard, runs: list) -> list[dict]:
    decisions = await asyncio.gather(*(gate.run(p, who, now=demo.NOW, request_id="r") for p, who in runs))
    return [d.to_dict() for d in decisions]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=RUNS)
def test_merged_reads_decide_as_each_run_reading_alone(pair, loop, runs):
    alone, merged = pair
    coalescer = merged.store.coalescer
    assert coalescer is not None
    before = coalescer.batches
    expected = loop.run_until_complete(all_at_once(alone, runs))
    assert loop.run_until_complete(all_at_once(merged, runs)) == expected
    if len(runs) > 2:  # the runs were in flight together: fewer batches than runs that read
        assert coalescer.batches - before < len(runs)


def test_runs_are_merged_and_scope_stays_per_run(demo_db, loop):
    """The same order read under its owner and under another customer, in one batch: only the owner's run sees
    the row; an unscoped entity merges across principals."""
    url, policy, _store = demo_db

    async def go():
        store = AsyncRecordStore(url, policy, coalesce=1)
        async with AsyncGuard(policy, store, domain="orders", config=CONFIG) as gate:
            answer = demo.payloads()["answer"]
            await gate.run(answer, demo.PRINCIPAL, now=demo.NOW)  # the template into the lint cache
            counts = [store.coalescer.batches, store.coalescer.runs]
            who = [demo.PRINCIPAL, "cus_1000", demo.PRINCIPAL, "cus_1000"] * 4
            got = await asyncio.gather(*(gate.run(answer, p, now=demo.NOW) for p in who))
            reads = [Read("customer", ["cus_1042"], ("tier",), p) for p in ("cus_1042", "cus_1000", None)]
            shared = await asyncio.gather(*(store.aread_many([r]) for r in reads))
            counts = [store.coalescer.batches - counts[0], store.coalescer.runs - counts[1]]
            return counts, got, shared

    (batches, runs), got, shared = loop.run_until_complete(go())
    for d, p in zip(got, [demo.PRINCIPAL, "cus_1000"] * 8):
        statuses = {r.status for r in d.results}
        assert statuses == ({Status.CONFIRMED} if p == demo.PRINCIPAL else {Status.NOT_FOUND}), p
    assert (batches, runs) == (2, 19)
    assert [list(s[0]) for s in shared] == [["cus_1042"]] * 3


def test_a_merged_read_hands_each_run_only_its_own_ids(sqlite_demo, loop):
    url, policy, _store = sqlite_demo

    async def go():
        store = AsyncRecordStore(url, policy, coalesce=1)
        await store.open()
        ids = [["cus_1001"], ["cus_1002", "cus_1003"], ["cus_1001", "nobody"], []]
        got = await asyncio.gather(*(store.aread_many([Read("customer", k, ("tier",))]) for k in ids))
        each = [await store.aread_each([Read("customer", k, ("tier",))]) for k in ids]
        await store.aclose()
        return ids, got, each, store.coalescer

    ids, got, each, coalescer = loop.run_until_complete(go())
    assert got == each
    assert [sorted(g[0]) for g in got] == [["cus_1001"], ["cus_1002", "cus_1003"], ["cus_1001"], []]
    assert coalescer.batches == 1 and coalescer.runs == 4


@pytest.fixture()
def pg(tmp_path_factory, request):
    if "postgresql" not in BACKENDS:
        pytest.fail("PostgreSQL is deselected")
    url = backend_url("postgresql", tmp_path_factory, _worker(request), "coalesce")
    demo.build(url, n_orders=60, n_customers=20).dispose()
    return url


class Locked:
    """The orders table held under an exclusive lock by another connection until released."""

    def __init__(self, url: str) -> None:
        self.engine = sa.create_engine(url)
        self.conn = self.engine.connect()
        self.tx = self.conn.begin()
        self.conn.execute(sa.text("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"))
        self.pid = self.conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()

    def release(self) -> None:
        self.tx.rollback()
        self.conn.close()
        self.engine.dispose()


def waiting_backends(url: str, locker: int) -> list[int]:
    """Backends held up by this test's lock (other xdist workers' tests lock their own orders tables)."""
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            q = (
                "SELECT pid FROM pg_stat_activity WHERE :locker = ANY(pg_blocking_pids(pid))"
                " AND query LIKE '%FROM orders%'"
            )
            return list(conn.execute(sa.text(q), {"locker": locker}).scalars())
    finally:
        engine.dispose()


def test_a_statement_timeout_reaches_every_run_in_the_batch(pg, loop):
    policy = demo.policy()

    async def go():
        store = AsyncRecordStore(pg, policy, coalesce=1, statement_timeout=0.5)
        async with AsyncGuard(policy, store, domain="orders", config=CONFIG) as gate:
            for k in ("answer", "refuse"):  # the templates into the lint cache: the runs then read in one turn
                await gate.run(demo.payloads()[k], demo.PRINCIPAL, now=demo.NOW)
            locked = await asyncio.to_thread(Locked, pg)
            try:
                runs = [gate.run(demo.payloads()[k], demo.PRINCIPAL, now=demo.NOW) for k in ["answer", "refuse"] * 4]
                got = await asyncio.gather(*runs)
            finally:
                await asyncio.to_thread(locked.release)
            return got, store.coalescer

    got, coalescer = loop.run_until_complete(go())
    assert (coalescer.batches, coalescer.runs) == (3, 10)
    for d in got:
        assert {(r.status, r.cause) for r in d.results} == {(Status.UNAVAILABLE, "timeout")}
        assert all("statement timeout" in r.reason for r in d.results)


def test_a_dropped_connection_reaches_every_run_and_a_deadline_still_holds(pg, loop):
    """While the batch waits on a lock, one run's deadline cancels its wait (the batch goes on); the backend is
    then terminated: every other run in the batch is told the connection was lost."""
    policy = demo.policy()

    async def go():
        store = AsyncRecordStore(pg, policy, coalesce=1, statement_timeout=30)
        async with AsyncGuard(policy, store, domain="orders", config=CONFIG) as gate:
            for k in ("answer", "refuse"):  # the templates into the lint cache: the runs then read in one turn
                await gate.run(demo.payloads()[k], demo.PRINCIPAL, now=demo.NOW)
            locked = await asyncio.to_thread(Locked, pg)
            try:
                answer = demo.payloads()["answer"]
                runs = [asyncio.ensure_future(gate.run(answer, demo.PRINCIPAL, now=demo.NOW)) for _ in range(6)]
                hurried = asyncio.ensure_future(asyncio.wait_for(gate.run(answer, demo.PRINCIPAL, now=demo.NOW), 0.3))
                with pytest.raises(TimeoutError):
                    await hurried
                pids: list[int] = []
                for _ in range(100):
                    pids = await asyncio.to_thread(waiting_backends, pg, locked.pid)
                    if pids:
                        break
                    await asyncio.sleep(0.05)
                assert len(pids) == 1 and not any(r.done() for r in runs)
                stopper = sa.create_engine(pg, isolation_level="AUTOCOMMIT")
                with stopper.connect() as conn:
                    conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pids[0]})
                stopper.dispose()
                got = await asyncio.gather(*runs)
            finally:
                await asyncio.to_thread(locked.release)
            after = await gate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW)
            return got, after

    got, after = loop.run_until_complete(go())
    for d in got:
        assert {(r.status, r.cause) for r in d.results} == {(Status.UNAVAILABLE, "connection")}
    assert {r.status for r in after.results} == {Status.CONFIRMED}


def test_a_store_used_from_a_second_event_loop_still_reads(sqlite_demo):
    url, policy, _store = sqlite_demo
    store = AsyncRecordStore(url, policy, coalesce=1)
    read = Read("customer", ["cus_1001"], ("tier",))

    async def go():
        await store.open()
        return await asyncio.gather(store.aread_many([read]), store.aread_many([read]))

    first = asyncio.run(go())
    done = threading.Event()
    out: list = []
    threading.Thread(target=lambda: (out.append(asyncio.run(go())), done.set())).start()
    assert done.wait(30)
    assert first == out[0] and list(first[0][0]) == ["cus_1001"]
    store.close()
